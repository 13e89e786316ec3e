"""Materialized views kept up to date by a base replica: read the base partition before and after
a write, and turn the difference of the rows' view keys and values into view mutations
(``views.updates`` runs this on every base replica and delivers the result).

Reading the whole partition around the write is what makes every kind of base change (row and
range deletions, updates of view-key columns) come out right without per-statement rules;
writes to tables with views or indexes therefore hold their partitions' locks. View rows carry
the base write's timestamp (or one past the previous derivation's, if a client timestamp is
older: ``DerivedLocks.stamp``): a view row whose key moved away (or that stopped matching the
view's WHERE clause) is deleted at that timestamp, and a new or changed one is written at it.
A base row belongs in the view when every view key column is non-null and every other WHERE
restriction holds. TTLs carry over: each view cell expires with its base cell, the view row
marker with the base row (when its marker and every cell have expired), and when a view key
column comes from a TTL'd base cell the whole view row expires with that cell, as Cassandra's
view rows do.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from tabletdb.cql import ast, codec
from tabletdb.cql.parser import parse_statement
from tabletdb.schema.model import ColumnKind, TableDef, ViewDef
from tabletdb.statements.cells import CellChanges, WriteTime, whole_value
from tabletdb.statements.keys import encode_clustering, partition_key
from tabletdb.statements.relations import literal_predicate
from tabletdb.storage.mutation import Mutation, RowMarker, RowWrite
from tabletdb.views.base_snapshot import BaseRow, Rows
from tabletdb.views.index_writes import entries_tables, index_mutations

Predicate = Callable[[dict[str, Any]], bool]
_where_cache: dict[tuple[str, str], list[Predicate]] = {}


def view_filter(view: ViewDef, base: TableDef) -> list[Predicate]:
    """The view's WHERE restrictions as predicates on base rows (``IS NOT NULL`` of a view key
    column is left to the view key, which a null cannot form)."""
    key = (view.table.id.hex, view.where_clause)
    cached = _where_cache.get(key)
    if cached is not None:
        return cached
    predicates: list[Predicate] = []
    if view.where_clause.strip():
        stmt = parse_statement(f"SELECT * FROM x WHERE {view.where_clause}")
        assert isinstance(stmt, ast.SelectStatement)
        for rel in stmt.where:
            if not isinstance(rel.lhs, ast.ColumnRef):
                continue
            col = base.column(rel.lhs.name)
            if col is None:
                continue
            if rel.op == "IS NOT":
                # a key column's is checked by the view key; a regular column's holds here
                if not col.is_primary_key:
                    predicates.append(_not_null(col.name))
            else:
                predicates.append(literal_predicate(col.name, col.type, rel))
    _where_cache[key] = predicates
    return predicates


def _not_null(name: str) -> Predicate:
    """``name IS NOT NULL`` of a view's WHERE clause on a regular column of the base."""
    return lambda values: values.get(name) is not None


def _view_key(view: TableDef, values: dict[str, Any]) -> tuple[bytes, ...] | None:
    out = []
    for col in view.primary_key:
        value = values.get(col.name)
        if value is None:
            return None
        out.append(codec.serialize(col.type, value))
    return tuple(out)


def _view_values(view: TableDef, row: BaseRow) -> tuple[Any, ...]:
    """What a view row shows and how long it lives: compared to skip rewriting unchanged rows."""
    names = [c.name for c in view.columns if not c.is_primary_key]
    # key columns' TTLs too: a view key cell rewritten with a new TTL changes when the row expires
    ttls = tuple(None if c.name not in row.cells else row.cells[c.name].ttl_remaining for c in view.columns)
    return tuple(row.values.get(n) for n in names), ttls, row.liveness_ttl


def _selected(view: ViewDef, base: TableDef, row: BaseRow | None) -> tuple[bytes, ...] | None:
    if row is None:
        return None
    key = _view_key(view.table, row.values)
    if key is None or not all(p(row.values) for p in view_filter(view, base)):
        return None
    return key


def view_mutations(
    view: ViewDef, base: TableDef, before: Rows, after: Rows, timestamp: int, now: int
) -> list[Mutation]:
    """The view changes that turn ``before``'s view rows into ``after``'s."""
    vt = view.table
    n_pk = len(vt.partition_key)
    out: list[Mutation] = []
    for ck in sorted(set(before) | set(after)):
        old_row, new_row = before.get(ck), after.get(ck)
        old_key = _selected(view, base, old_row)
        new_key = _selected(view, base, new_row)
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
        out.append(_view_row(vt, base, new_key, new_row, n_pk, timestamp, now))
    return out


def _key_expiry(vt: TableDef, base: TableDef, row: BaseRow) -> int | None:
    """TTL left on the earliest-expiring base cell that is part of the view's key."""
    ttls = [
        row.cells[c.name].ttl_remaining
        for c in vt.primary_key
        if c.name in row.cells
        and (base_col := base.column(c.name)) is not None
        and not base_col.is_primary_key
    ]
    present = [t for t in ttls if t is not None]
    return min(present) if present else None


def _view_row(
    vt: TableDef, base: TableDef, key: tuple[bytes, ...], row: BaseRow, n_pk: int, timestamp: int, now: int
) -> Mutation:
    key_ttl = _key_expiry(vt, base, row)
    changes = CellChanges([], [])
    for col in vt.columns:
        if col.kind in (ColumnKind.REGULAR, ColumnKind.STATIC):
            cell = row.cells.get(col.name)
            ttls = [t for t in (key_ttl, None if cell is None else cell.ttl_remaining) if t is not None]
            whole_value(
                col, row.values.get(col.name), WriteTime(timestamp, min(ttls, default=0), now), changes
            )
    marker_ttls = [t for t in (key_ttl, row.liveness_ttl) if t is not None]
    marker_ttl = min(marker_ttls, default=0)
    marker = RowMarker(timestamp, marker_ttl, now + marker_ttl if marker_ttl else 0)
    pk, token = partition_key(vt, list(key[:n_pk]))
    return Mutation(
        pk, token, rows=(changes.row_write(encode_clustering(vt, list(key[n_pk:])), marker=marker),)
    )


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


def has_derived(table: TableDef, views: Sequence[ViewDef]) -> bool:
    """Whether writes to ``table`` must also update views or index tables."""
    return bool(views) or bool(table.indexes and entries_tables(table))


def derived_tables(table: TableDef, views: Sequence[ViewDef]) -> list[TableDef]:
    """The view tables and index entries tables whose rows derive from ``table``'s."""
    return [v.table for v in views] + [entries for _, entries in entries_tables(table)]


Derived = dict[uuid.UUID, tuple[TableDef, list[Mutation]]]
"""View and index entries changes of one base write, by target table id."""


def derive(
    table: TableDef,
    views: Sequence[ViewDef],
    key: bytes,
    token: int,
    before: Rows,
    after: Rows,
    timestamp: int,
    now: int,
    into: Derived,
) -> None:
    """Add to ``into`` the view and index changes that one base partition's change causes."""
    for view in views:
        changes = view_mutations(view, table, before, after, timestamp, now)
        into.setdefault(view.table.id, (view.table, []))[1].extend(changes)
    for entries, index_changes in index_mutations(table, token, key, before, after, timestamp, now):
        into.setdefault(entries.id, (entries, []))[1].extend(index_changes)
