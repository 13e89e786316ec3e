"""A base partition as materialized views and secondary indexes need it around a write.

Views and indexes are derived by comparing the partition's rows before and after a write; the
rows carry values and, for TTL'd data, when each cell and the row itself expire, so derived
rows can expire with what they were derived from.

Only the rows a write touches are read (``touched_rows``), so keeping views and indexes costs
what the changed rows cost, not what the partition holds: a row a write does not touch derives
the same view and index rows before and after it. A write that can change every row at once —
a partition or range tombstone, a static cell — reads the whole partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tabletdb.coordinator.rows import column_values
from tabletdb.cql import codec
from tabletdb.replica.stores import DataStores, damaged_replica
from tabletdb.schema.model import TableDef
from tabletdb.statements.keys import decode_clustering, split_key
from tabletdb.storage.mutation import FULL_SLICE, Bound, ClusteringSlice, Mutation
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tabletdb.storage.tablet_store import TabletCorrupt, TabletUnavailable


@dataclass(frozen=True)
class BaseRow:
    values: dict[str, Any]
    cells: dict[str, LiveCell]
    """The row's single-cell columns (with their TTL left)."""
    liveness_ttl: int | None
    """Seconds until the row stops being live (its marker and every cell expired); None: never."""


Rows = dict[bytes, BaseRow]
"""Rows of one base partition: clustering key (b"" for a table without one) -> row."""


def liveness_ttl(row: LiveRow) -> int | None:
    """How long a live row stays live: the latest expiry of its marker and cells (None: one of
    them never expires). Static cells do not keep a clustering row alive."""
    ttls = [row.marker[1]] if row.marker is not None else []
    ttls += [c.ttl_remaining for c in row.cells]
    if not ttls or any(t is None for t in ttls):
        return None
    return max(t for t in ttls if t is not None)


def touched_rows(table: TableDef, mutations: Iterable[Mutation]) -> tuple[bytes, ...] | None:
    """The clustering keys the mutations of one partition write, or None when they may change
    any row of it (partition or range tombstones, static cells) or the table has one row per
    partition."""
    if not table.clustering_key:
        return None
    rows: set[bytes] = set()
    for m in mutations:
        if m.partition_tombstone is not None or m.range_tombstones:
            return None
        for row in m.rows:
            if row.static:
                return None
            rows.add(row.clustering)
    return tuple(sorted(rows))


def partition_snapshot(
    table: TableDef,
    stores: DataStores,
    key: bytes,
    token: int,
    now: int,
    rows: tuple[bytes, ...] | None = None,
) -> Rows:
    """The partition's live rows as derivation takes them: all of them, or only ``rows``."""
    if rows is None:
        return _rows_of(table, key, _read(table, stores, key, token, now, FULL_SLICE))
    out: Rows = {}
    for clustering in rows:
        one = ClusteringSlice(Bound(clustering), Bound(clustering))
        out.update(_rows_of(table, key, _read(table, stores, key, token, now, one)))
    return out


def _read(
    table: TableDef, stores: DataStores, key: bytes, token: int, now: int, slice_: ClusteringSlice
) -> PartitionData | None:
    try:
        return stores.store(table, token).read_partition(key, now, slice_)
    except (TabletCorrupt, TabletUnavailable) as exc:
        raise damaged_replica(table, exc) from exc


def _rows_of(table: TableDef, key: bytes, data: PartitionData | None) -> Rows:
    if data is None:
        return {}
    base: dict[str, Any] = {}
    for col, raw in zip(table.partition_key, split_key(table, key)):
        base[col.name] = codec.deserialize(col.type, raw)
    static_values: dict[str, Any] = {}
    static_cells: dict[str, LiveCell] = {}
    column_values(table, data.static_row, static_values, static_cells)
    out: Rows = {}
    for row in data.rows:
        values = {**base, **static_values}
        for col, raw_ck in zip(table.clustering_key, decode_clustering(table, row.clustering)):
            values[col.name] = None if raw_ck is None else codec.deserialize(col.type, raw_ck)
        cells = dict(static_cells)
        column_values(table, row, values, cells)
        out[row.clustering or b""] = BaseRow(values, cells, liveness_ttl(row))
    return out
