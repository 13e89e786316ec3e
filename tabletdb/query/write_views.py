"""Materialized views kept up to date on one node: read the base partition before and after a
write, and turn the difference of the rows' view keys and values into view mutations.

Reading the whole partition around the write is what makes every kind of base change (row and
range deletions, TTL-less updates of key columns) come out right without per-statement rules;
writes to tables with views therefore run under the table's lock. View rows carry the base
write's timestamp: a view row whose key moved away is deleted at that timestamp, and a new or
changed one is written at it. A base row with null in any view key column has no view row
(the ``IS NOT NULL`` every view's WHERE clause must hold); other WHERE restrictions and TTLs on
view rows are not applied yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabletdb.cql import codec
from tabletdb.query.read_rows import partition_rows
from tabletdb.query.write_cells import CellChanges, WriteTime, whole_value
from tabletdb.query.write_keys import encode_clustering, partition_key
from tabletdb.query.write_stores import DataStores
from tabletdb.schema.model import ColumnKind, TableDef, ViewDef
from tabletdb.storage.mutation import Mutation, RowMarker, RowWrite

Rows = dict[bytes, dict[str, Any]]
"""Base rows of one partition: clustering key -> column values."""


def partition_snapshot(table: TableDef, stores: DataStores, key: bytes, token: int, now: int) -> Rows:
    data = stores.store(table, token).read_partition(key, now)
    if data is None:
        return {}
    return {r.clustering or b"": r.values for r in partition_rows(table, data, None, static_only_row=False)}


def _view_key(view: TableDef, values: dict[str, Any]) -> tuple[bytes, ...] | None:
    out = []
    for col in view.primary_key:
        value = values.get(col.name)
        if value is None:
            return None
        out.append(codec.serialize(col.type, value))
    return tuple(out)


def _view_values(view: TableDef, values: dict[str, Any]) -> dict[str, Any]:
    return {c.name: values.get(c.name) for c in view.columns if not c.is_primary_key}


def view_mutations(view: ViewDef, before: Rows, after: Rows, timestamp: int, now: int) -> list[Mutation]:
    """The view changes that turn ``before``'s view rows into ``after``'s."""
    vt = view.table
    n_pk = len(vt.partition_key)
    out: list[Mutation] = []
    for ck in sorted(set(before) | set(after)):
        old_row, new_row = before.get(ck), after.get(ck)
        old_key = None if old_row is None else _view_key(vt, old_row)
        new_key = None if new_row is None else _view_key(vt, new_row)
        if old_key is not None and old_key != new_key:
            pk, token = partition_key(vt, list(old_key[:n_pk]))
            row = RowWrite(encode_clustering(vt, list(old_key[n_pk:])), tombstone=timestamp)
            out.append(Mutation(pk, token, rows=(row,)))
        if new_key is None or new_row is None:
            continue
        if (
            old_key == new_key
            and old_row is not None
            and _view_values(vt, old_row) == _view_values(vt, new_row)
        ):
            continue
        out.append(_view_row(vt, new_key, new_row, n_pk, WriteTime(timestamp, 0, now)))
    return out


def _view_row(
    vt: TableDef, key: tuple[bytes, ...], values: dict[str, Any], n_pk: int, when: WriteTime
) -> Mutation:
    changes = CellChanges([], [])
    for col in vt.columns:
        if col.kind in (ColumnKind.REGULAR, ColumnKind.STATIC):
            whole_value(col, values.get(col.name), when, changes)
    pk, token = partition_key(vt, list(key[:n_pk]))
    row = changes.row_write(encode_clustering(vt, list(key[n_pk:])), marker=RowMarker(when.timestamp))
    return Mutation(pk, token, rows=(row,))


def write_timestamp(mutations: Sequence[Mutation]) -> int:
    """The timestamp a statement wrote at (all its parts share one)."""
    stamps = [m.partition_tombstone for m in mutations if m.partition_tombstone is not None]
    for m in mutations:
        stamps += [rt.timestamp for rt in m.range_tombstones]
        for row in m.rows:
            stamps += [c.timestamp for c in row.cells] + [ts for _, ts in row.collection_tombstones]
            stamps += [row.marker.timestamp] if row.marker is not None else []
            stamps += [row.tombstone] if row.tombstone is not None else []
    return max(stamps, default=0)
