"""A base partition as materialized views and secondary indexes need it around a write.

Views and indexes are derived by comparing the partition's rows before and after a write; the
rows carry values and, for TTL'd data, when each cell and the row itself expire, so derived
rows can expire with what they were derived from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tabletdb.coordinator.rows import column_values
from tabletdb.cql import codec
from tabletdb.replica.stores import DataStores, damaged_replica
from tabletdb.schema.model import TableDef
from tabletdb.statements.keys import decode_clustering, split_key
from tabletdb.storage.reconcile import LiveCell, LiveRow
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


def partition_snapshot(table: TableDef, stores: DataStores, key: bytes, token: int, now: int) -> Rows:
    try:
        data = stores.store(table, token).read_partition(key, now)
    except (TabletCorrupt, TabletUnavailable) as exc:
        raise damaged_replica(table, exc) from exc
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
