"""Partition keys, tokens and clustering keys of a batch's rows, column by column.

The same rules as `statements.keys` (the node's INSERT): key components over 64 KiB and an
empty partition key are refused with its words, composite partition keys are length-prefixed,
clustering keys are `cql.bytecomparable` encodings in the table's ASC/DESC order. The common
shapes run as one C-level loop per column (a single-component partition key hashed with
`map`, clustering components of the integer and text types encoded by byte tables); the rest
go through `statements.keys` one row at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from operator import add

from tabletdb.cql import bytecomparable
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, NativeType
from tabletdb.dht.murmur3 import murmur3_h1
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN
from tabletdb.schema.model import ClusteringOrder, TableDef
from tabletdb.statements.keys import MAX_KEY_COMPONENT, partition_key

_SIGNED = frozenset({"tinyint", "smallint", "int", "bigint", "timestamp", "time"})
_ESCAPED = frozenset({"text", "ascii", "blob"})
_FLIPPED = [bytes([bytecomparable.VALUE, b ^ 0x80]) for b in range(256)]
_VALUE = bytes([bytecomparable.VALUE])
_EMPTY = bytes([bytecomparable.EMPTY])


@dataclass
class Keys:
    """Per row (of the rows asked for): stored partition key, token and clustering key; rows
    whose keys the rules refuse are in `reasons` (their entries are placeholders)."""

    partition: list[bytes]
    tokens: list[int]
    clustering: list[bytes]
    reasons: dict[int, str] = field(default_factory=dict)


def _ascending(t: CqlType) -> Callable[[bytes], bytes] | None:
    """A fast encoder of one non-empty ASC component of type `t`, if there is one."""
    if isinstance(t, NativeType) and t.name in _SIGNED:
        return lambda v: _FLIPPED[v[0]] + v[1:]
    if isinstance(t, NativeType) and t.name in _ESCAPED:
        return lambda v: _VALUE + v.replace(b"\x00", b"\x00\xff") + b"\x00\x00"
    return None


def _component_encoder(t: CqlType, descending: bool) -> Callable[[bytes], bytes]:
    fast = None if descending else _ascending(t)
    if fast is None:
        return lambda v: bytecomparable.encode_clustering([(t, descending, v)])
    return lambda v: fast(v) if v else _EMPTY


def _too_long(column: str, values: Sequence[bytes], reasons: dict[int, str]) -> None:
    if max(map(len, values), default=0) <= MAX_KEY_COMPONENT:
        return
    for row, value in enumerate(values):
        if len(value) > MAX_KEY_COMPONENT and row not in reasons:
            reasons[row] = (
                f"Key length of {len(value)} is longer than maximum of {MAX_KEY_COMPONENT} (column {column})"
            )


def _partition(table: TableDef, components: Sequence[Sequence[bytes]], keys: Keys) -> None:
    columns = table.partition_key
    if len(columns) > 1 or table.is_cdc_log:
        for row, values in enumerate(zip(*components)):
            try:
                key, token = partition_key(table, list(values))
            except InvalidRequest as exc:
                keys.reasons[row] = exc.message
                key, token = b"", MIN_TOKEN
            keys.partition.append(key)
            keys.tokens.append(token)
        return
    (only,) = components
    _too_long(columns[0].name, only, keys.reasons)
    if b"" in only:
        for row, value in enumerate(only):
            if not value:
                keys.reasons.setdefault(row, f"Key may not be empty (column {columns[0].name})")
    keys.partition.extend(only)
    keys.tokens.extend(map(murmur3_h1, only))
    if MIN_TOKEN in keys.tokens:  # reserved for the ring's start, as `token_of` maps it
        keys.tokens[:] = [MAX_TOKEN if t == MIN_TOKEN else t for t in keys.tokens]


def row_keys(
    table: TableDef, partition: Sequence[Sequence[bytes]], clustering: Sequence[Sequence[bytes]]
) -> Keys:
    """Keys of rows whose key components (serialized, in key order) are all non-null."""
    count = len(partition[0])
    keys = Keys([], [], [])
    _partition(table, partition, keys)
    encoded: list[bytes] | None = None
    for column, values in zip(table.clustering_key, clustering):
        _too_long(column.name, values, keys.reasons)
        encode = _component_encoder(column.type, column.clustering_order is ClusteringOrder.DESC)
        try:
            part = list(map(encode, values))
        except InvalidRequest:  # a value the codec wrote but the encoder refuses: find it
            part = []
            for row, value in enumerate(values):
                try:
                    part.append(encode(value))
                except InvalidRequest as exc:
                    keys.reasons.setdefault(row, exc.message)
                    part.append(b"")
        encoded = part if encoded is None else list(map(add, encoded, part))
    keys.clustering = encoded if encoded is not None else [b""] * count
    return keys
