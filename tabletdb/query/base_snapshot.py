"""A base partition as materialized views and secondary indexes need it around a write.

Views and indexes are derived by comparing the partition's rows before and after a write; the
rows carry values and, for TTL'd data, when each cell and the row marker expire, so derived
rows can expire with what they were derived from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tabletdb.cql import codec
from tabletdb.query.read_rows import column_values
from tabletdb.query.write_keys import decode_clustering, split_key
from tabletdb.query.write_stores import DataStores
from tabletdb.schema.model import TableDef
from tabletdb.storage.reconcile import LiveCell


@dataclass(frozen=True)
class BaseRow:
    values: dict[str, Any]
    cells: dict[str, LiveCell]
    """The row's single-cell columns (with their TTL left)."""
    marker_ttl: int | None
    """TTL left on the row marker (None: no TTL, or no marker)."""


Rows = dict[bytes, BaseRow]
"""Rows of one base partition: clustering key (b"" for a table without one) -> row."""


def partition_snapshot(table: TableDef, stores: DataStores, key: bytes, token: int, now: int) -> Rows:
    data = stores.store(table, token).read_partition(key, now)
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
        marker_ttl = row.marker[1] if row.marker is not None else None
        out[row.clustering or b""] = BaseRow(values, cells, marker_ttl)
    return out
