"""Keys as storage holds them: partition key bytes and token, byte-comparable clustering keys,
and collection element paths.

Clustering keys and set/map element keys use ``cql.bytecomparable`` so SQLite's memcmp order is
CQL order; list elements use fixed-width big-endian positions (appends grow, prepends shrink), so
a list reads back in insertion order. Key components over 64 KiB are refused, as Cassandra does.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from tabletdb.cdc.stream_id import stream_id_token
from tabletdb.cql import bytecomparable
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType
from tabletdb.dht.murmur3 import partition_key_bytes, split_partition_key, token_of
from tabletdb.schema.model import ClusteringOrder, ColumnDef, TableDef

MAX_KEY_COMPONENT = 65535
LIST_MIDDLE = 1 << 62
_list_sequence = itertools.count(1)


def check_key_component(column: ColumnDef, value: bytes | None) -> bytes:
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {column.name}")
    if len(value) > MAX_KEY_COMPONENT:
        raise InvalidRequest(
            f"Key length of {len(value)} is longer than maximum of {MAX_KEY_COMPONENT} (column {column.name})"
        )
    return value


def partition_key(table: TableDef, values: Sequence[bytes]) -> tuple[bytes, int]:
    """The stored partition key bytes (the partitioner's form) and its token."""
    for column, value in zip(table.partition_key, values):
        check_key_component(column, value)
    key = partition_key_bytes(list(values))
    if not key:
        raise InvalidRequest(f"Key may not be empty (column {table.partition_key[0].name})")
    if table.is_cdc_log:  # the CDC partitioner: a stream id carries its token
        if len(key) != 16:
            raise InvalidRequest(
                f"A CDC stream id is 16 bytes, got {len(key)} (column {table.partition_key[0].name})"
            )
        return key, stream_id_token(key)
    return key, token_of(key)


def split_key(table: TableDef, key: bytes) -> list[bytes]:
    return split_partition_key(key, len(table.partition_key))


def clustering_types(table: TableDef) -> list[tuple[CqlType, bool]]:
    return [(c.type, c.clustering_order is ClusteringOrder.DESC) for c in table.clustering_key]


def encode_clustering(table: TableDef, values: Sequence[bytes]) -> bytes:
    """A full key or a prefix of one (``values`` shorter than the clustering key)."""
    types = clustering_types(table)
    for column, value in zip(table.clustering_key, values):
        check_key_component(column, value)
    return bytecomparable.encode_clustering([(t, d, v) for (t, d), v in zip(types, values)])


def clustering_bound(table: TableDef, values: Sequence[bytes], *, lower: bool, inclusive: bool) -> bytes:
    types = clustering_types(table)
    prefix = [(t, d, v) for (t, d), v in zip(types, values)]
    if lower:
        return bytecomparable.lower_bound(prefix, inclusive)
    return bytecomparable.upper_bound(prefix, inclusive)


def decode_clustering(table: TableDef, key: bytes) -> list[bytes | None]:
    return bytecomparable.decode_clustering(clustering_types(table), key)


def element_path(element_type: CqlType, value: bytes) -> bytes:
    """The storage path of a set element or map key: CQL-ordered bytes."""
    return bytecomparable.encode_clustering([(element_type, False, value)])


def element_of_path(element_type: CqlType, path: bytes) -> bytes:
    decoded = bytecomparable.decode_clustering([(element_type, False)], path)
    value = decoded[0] if decoded else None
    if value is None:
        raise ValueError(f"collection path {path.hex()} holds no element")
    return value


def list_paths(timestamp: int, count: int, *, prepend: bool) -> list[bytes]:
    """Positions for ``count`` new list elements, in the order they will read back.

    Appends take positions above the middle that grow with time; prepends take positions below
    it that shrink with time, so a later prepend reads before an earlier one.
    """
    base = timestamp * 1024
    out = []
    for _ in range(count):
        step = base + (next(_list_sequence) % 1024)
        position = LIST_MIDDLE - step if prepend else LIST_MIDDLE + step
        out.append(max(0, position).to_bytes(8, "big"))
    return sorted(out)
