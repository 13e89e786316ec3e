"""INSERT, UPDATE and DELETE turned into storage mutations (no I/O except reads of current cells).

Everything is validated and built before anything is written, so a bad statement stores nothing.
The caller supplies ``CurrentCells`` for the few operations that need the stored value (list
index and list removal, counters) and runs this under the partition's lock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tabletdb.cdc.list_keys import position_of_key
from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.jsonvalues import from_json
from tabletdb.cql.numbers import parse_int
from tabletdb.cql.types import INT, TEXT, TIMEUUID, CqlType, ListType, MapType, SetType
from tabletdb.cql.values import Unset
from tabletdb.schema.model import ColumnDef, ColumnKind, TableDef
from tabletdb.statements.cells import (
    CellChanges,
    ListKey,
    WriteTime,
    add_elements,
    counter_add,
    is_multi_cell,
    remove_elements,
    set_element,
    whole_value,
)
from tabletdb.statements.insert_plan import insert_plan, planned_insert
from tabletdb.statements.keys import encode_clustering, partition_key
from tabletdb.statements.restrictions import Restrictions, analyze
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.statements.udt_fields import check_deletable, check_settable, set_field
from tabletdb.storage.mutation import (
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
)
from tabletdb.storage.reconcile import LiveCell

CurrentCells = Callable[[bytes, int, bytes, bool, str], Sequence[LiveCell]]
"""(partition key, token, clustering, static, column) -> the live cells of that column now."""


@dataclass(frozen=True)
class Target:
    """One row (or the static row, or a whole partition) a statement writes."""

    partition_key: bytes
    token: int
    clustering: bytes | None


def _no_filters(rel: ast.Relation, table: TableDef, bindings: Bindings) -> Callable[[dict[str, Any]], bool]:
    name = rel.lhs.name if isinstance(rel.lhs, ast.ColumnRef) else str(rel.lhs)
    col = table.column(name) if isinstance(rel.lhs, ast.ColumnRef) else None
    if col is not None and col.is_primary_key:
        raise InvalidRequest(f"Invalid operator {rel.op} for PRIMARY KEY part {name}")
    raise InvalidRequest(f"Non PRIMARY KEY columns found in where clause: {name}")


def where_of(where: Sequence[ast.Relation], table: TableDef, bindings: Bindings) -> Restrictions:
    """The rows an UPDATE or DELETE names. Its key markers are read once: a write has no filters
    to read them again, and ``BoundModification`` keeps the result for every later build."""
    r = analyze(where, table, bindings, _no_filters, keep=False)
    if r.has_token:
        raise InvalidRequest(
            "The token function cannot be used in WHERE clauses for UPDATE and DELETE statements"
        )
    if r.partition_keys is None:
        missing = table.partition_key[0].name
        raise InvalidRequest(f"Some partition key parts are missing: {missing}")
    return r


def time_of(
    attrs: ast.Attributes, table: TableDef, bindings: Bindings, default_ts: int, now: int
) -> WriteTime:
    timestamp = default_ts
    if attrs.timestamp is not None:
        value = term_value(attrs.timestamp, codec_bigint(), "[timestamp]", bindings)
        if value is None:
            raise InvalidRequest("Invalid null value of timestamp")
        if not isinstance(value, Unset):
            timestamp = int(value)
    ttl = table.options.default_time_to_live
    if attrs.ttl is not None:
        value = term_value(attrs.ttl, INT, "[ttl]", bindings)
        if value is None:
            ttl = 0
        elif not isinstance(value, Unset):
            ttl = int(value)
        if ttl < 0:
            raise InvalidRequest(f"A TTL must be greater or equal to 0, but was {ttl}")
        if ttl > 630_720_000:
            raise InvalidRequest(f"ttl is too large. requested ({ttl}) maximum (630720000)")
    return WriteTime(timestamp, ttl, now)


def codec_bigint() -> Any:
    from tabletdb.cql.types import BIGINT

    return BIGINT


def _row_keys(table: TableDef, r: Restrictions, *, need_full: bool) -> list[bytes | None]:
    """Full clustering keys (None: the partition, or its static row)."""
    if not table.clustering_key:
        return [b""]
    if r.full_clustering == len(table.clustering_key) and r.lower is None and r.upper is None:
        return list(r.clustering_keys(table))
    if need_full:
        missing = table.clustering_key[r.full_clustering].name
        raise InvalidRequest(f"Some clustering keys are missing: {missing}")
    return [None]


def build_insert(
    stmt: ast.InsertStatement, table: TableDef, bindings: Bindings, when: WriteTime
) -> list[Mutation]:
    if stmt.json is None:
        return planned_insert(insert_plan(stmt, table), table, bindings, when)
    values = _json_values(stmt, table, bindings)
    pk = [_key_value(table, c, values) for c in table.partition_key]
    static_only = static_only_insert(table, values)
    ck = [] if static_only else [_key_value(table, c, values) for c in table.clustering_key]
    key, token = partition_key(table, pk)
    clustering = encode_clustering(table, ck)
    regular = CellChanges([], [])
    static = CellChanges([], [])
    for name, value in values.items():
        col = table.column(name)
        assert col is not None
        if col.is_primary_key or isinstance(value, Unset):
            continue
        if col.type.is_counter:
            raise InvalidRequest("INSERT statements are not allowed on counter tables, use UPDATE instead")
        whole_value(col, value, when, static if col.kind is ColumnKind.STATIC else regular)
    marker = RowMarker(when.timestamp, when.ttl, when.now + when.ttl if when.ttl else 0)
    rows = []
    if not static_only and (table.clustering_key or not static.cells):
        rows.append(regular.row_write(clustering, marker=marker))
    if static:
        rows.append(static.row_write(static=True))
    return [Mutation(key, token, rows=tuple(rows))]


def static_only_insert(table: TableDef, values: dict[str, Any]) -> bool:
    """An INSERT naming the partition key and static columns only writes just the static row
    (Cassandra accepts it without clustering columns)."""
    if not table.clustering_key or any(c.name in values for c in table.clustering_key):
        return False
    kinds = {
        col.kind for name in values if (col := table.column(name)) is not None and not col.is_primary_key
    }
    return kinds == {ColumnKind.STATIC}


def _json_values(stmt: ast.InsertStatement, table: TableDef, bindings: Bindings) -> dict[str, Any]:
    assert stmt.json is not None
    text = term_value(stmt.json, TEXT, "[json]", bindings)
    if not isinstance(text, str):
        raise InvalidRequest("Got null for INSERT JSON values")
    try:
        doc = json.loads(text, parse_float=Decimal, parse_int=parse_int)  # decimals keep every digit
    except (ValueError, RecursionError) as exc:  # RecursionError: arrays or objects nested too deeply
        raise InvalidRequest(f"Could not decode JSON string as a map: {exc}") from exc
    if not isinstance(doc, dict):
        raise InvalidRequest("Could not decode JSON string as a map")
    by_json_name = {c.name: c for c in table.columns}
    out: dict[str, Any] = {}
    for raw_name, raw_value in doc.items():
        name = raw_name[1:-1] if raw_name.startswith('"') and raw_name.endswith('"') else raw_name.lower()
        col = by_json_name.get(name) or by_json_name.get(raw_name)
        if col is None:
            raise InvalidRequest(f"JSON values map contains unrecognized column: {raw_name}")
        out[col.name] = None if raw_value is None else from_json(col.type, raw_value, col.name)
    for col in table.columns:
        if col.name not in out:
            out[col.name] = Unset() if stmt.json_default_unset else None
    return out


def _key_value(table: TableDef, col: ColumnDef, values: dict[str, Any]) -> bytes:
    if col.name not in values:
        kind = "partition" if col.kind is ColumnKind.PARTITION_KEY else "clustering"
        raise InvalidRequest(f"Some {kind} key parts are missing: {col.name}")
    value = values[col.name]
    if value is None or isinstance(value, Unset):
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    return codec.serialize(col.type, value)


def build_update(
    stmt: ast.UpdateStatement,
    table: TableDef,
    bindings: Bindings,
    r: Restrictions,
    when: WriteTime,
    current: CurrentCells,
) -> list[Mutation]:
    """The mutations of an UPDATE whose WHERE clause is ``r`` (``where_of``)."""
    only_static = all(_column(table, a.column).kind is ColumnKind.STATIC for a in stmt.assignments)
    rows = _row_keys(table, r, need_full=not only_static)
    assert r.partition_keys is not None
    out = []
    for pk in r.partition_keys:
        key, token = partition_key(table, pk)
        writes = []
        for ck in rows:
            regular, static = CellChanges([], []), CellChanges([], [])
            for a in stmt.assignments:
                col = _column(table, a.column)
                is_static = col.kind is ColumnKind.STATIC
                row_ck = b"" if is_static or ck is None else ck

                def cells(
                    col: ColumnDef = col,
                    static_row: bool = is_static,
                    row_ck: bytes = row_ck,
                    key: bytes = key,
                    token: int = token,
                ) -> Sequence[LiveCell]:
                    return current(key, token, row_ck, static_row, col.name)

                _assign(a, col, table, bindings, when, static if is_static else regular, cells)
            if ck is not None and regular:
                writes.append(regular.row_write(ck))
            if static:
                writes.append(static.row_write(static=True))
        out.append(Mutation(key, token, rows=tuple(writes)))
    return out


def _column(table: TableDef, name: str) -> ColumnDef:
    col = table.column(name)
    if col is None:
        raise InvalidRequest(f"Undefined column name {name}")
    if col.is_primary_key:
        raise InvalidRequest(f"PRIMARY KEY part {name} found in SET part")
    return col


def _assign(
    a: ast.Assignment,
    col: ColumnDef,
    table: TableDef,
    bindings: Bindings,
    when: WriteTime,
    out: CellChanges,
    current: Callable[[], Sequence[LiveCell]],
) -> None:
    if isinstance(a, ast.SetColumn):
        value = term_value(a.value, col.type, col.name, bindings)
        if col.type.is_counter:
            raise InvalidRequest(
                f"Cannot set the value of counter column {col.name} "
                "(counters can only be incremented/decremented, not set)"
            )
        if not isinstance(value, Unset):
            whole_value(col, value, when, out)
    elif isinstance(a, ast.AddToColumn | ast.SubtractFromColumn):
        t = col.type
        if isinstance(t, MapType) and isinstance(a, ast.SubtractFromColumn):
            t = SetType(t.key)
        value = term_value(a.value, t, col.name, bindings)
        if isinstance(value, Unset):
            return
        if col.type.is_counter:
            if value is None:
                raise InvalidRequest(f"Invalid null value for counter increment (column {col.name})")
            delta = int(value) if isinstance(a, ast.AddToColumn) else -int(value)
            counter_add(col, delta, when, out, current())
        elif value is None:
            return
        elif isinstance(a, ast.AddToColumn):
            _need_multi_cell(col, "+")
            add_elements(col, value, when, out)
        else:
            _need_multi_cell(col, "-")
            remove_elements(col, _removal_keys(col, value), when, out, current)
    elif isinstance(a, ast.PrependToColumn):
        value = term_value(a.value, col.type, col.name, bindings)
        if value is not None and not isinstance(value, Unset):
            _need_multi_cell(col, "+")
            add_elements(col, value, when, out, prepend=True)
    elif isinstance(a, ast.SetElement):
        key_type = getattr(col.type, "key", INT)
        value_type: CqlType = (
            getattr(col.type, "value", None) or getattr(col.type, "element", None) or col.type
        )
        key = _list_key(a.key, col, bindings) or term_value(a.key, key_type, col.name, bindings)
        value = term_value(a.value, value_type, col.name, bindings)
        if not isinstance(value, Unset):
            set_element(col, key, value, when, out, current)
    elif isinstance(a, ast.SetField):
        value = term_value(a.value, check_settable(col, a.field), f"{col.name}.{a.field}", bindings)
        if not isinstance(value, Unset):
            set_field(col, a.field, value, when, out, current)
    else:
        raise InvalidRequest(f"Unsupported assignment to column {col.name}")


def _list_key(key: ast.Term, col: ColumnDef, bindings: Bindings) -> ListKey | None:
    """``SCYLLA_TIMEUUID_LIST_INDEX(k)`` as a list subscript: the element whose CDC log key is
    ``k`` (``cdc.list_keys``), so a log consumer can replay list changes exactly."""
    if not (isinstance(key, ast.FunctionCall) and key.name.lower() == "scylla_timeuuid_list_index"):
        return None
    if not isinstance(col.type, ListType) or not col.type.is_multi_cell:
        raise InvalidRequest(
            f"SCYLLA_TIMEUUID_LIST_INDEX names an element of a non-frozen list; {col.name} is "
            f"{col.type.cql()}"
        )
    if key.keyspace is not None or len(key.args) != 1:
        raise InvalidRequest("SCYLLA_TIMEUUID_LIST_INDEX takes exactly one timeuuid argument")
    arg = key.args[0]
    if isinstance(arg, ast.ColumnRef | ast.ElementRef | ast.FieldRef | ast.Cast | ast.CountRows):
        raise InvalidRequest("SCYLLA_TIMEUUID_LIST_INDEX takes a timeuuid value, not a column")
    value = term_value(arg, TIMEUUID, col.name, bindings)
    if value is None or isinstance(value, Unset):
        raise InvalidRequest(f"Invalid null or unset SCYLLA_TIMEUUID_LIST_INDEX key for column {col.name}")
    try:
        return ListKey(position_of_key(value.bytes))
    except ValueError as e:
        raise InvalidRequest(f"{e} (column {col.name})") from None


def _removal_keys(col: ColumnDef, value: Any) -> Any:
    """``map - {k1, k2}`` arrives as a set of keys; sets and lists arrive as their own type."""
    return value


def _need_multi_cell(col: ColumnDef, op: str) -> None:
    if not is_multi_cell(col.type):
        raise InvalidRequest(
            f"Invalid operation ({col.name} = {col.name} {op} ?) for non list/set/map column {col.name}"
        )


def build_delete(
    stmt: ast.DeleteStatement,
    table: TableDef,
    bindings: Bindings,
    r: Restrictions,
    when: WriteTime,
    current: CurrentCells,
) -> list[Mutation]:
    """The mutations of a DELETE whose WHERE clause is ``r`` (``where_of``)."""
    assert r.partition_keys is not None
    out = []
    targets_static = bool(stmt.targets) and all(
        (table.column(_target_name(t)) or _fail(t)).kind is ColumnKind.STATIC for t in stmt.targets
    )
    for pk in r.partition_keys:
        key, token = partition_key(table, pk)
        if not stmt.targets:
            out.append(_delete_rows(table, r, key, token, when.timestamp))
            continue
        rows = [b""] if targets_static else _row_keys(table, r, need_full=True)
        writes = []
        for ck in rows:
            assert ck is not None
            changes = CellChanges([], [])
            static_changes = CellChanges([], [])
            for target in stmt.targets:
                col = table.column(_target_name(target)) or _fail(target)
                if col.is_primary_key:
                    raise InvalidRequest(
                        f"Invalid identifier {col.name} for deletion (should not be a PRIMARY KEY part)"
                    )
                is_static = col.kind is ColumnKind.STATIC
                dest = static_changes if is_static else changes
                row_ck = b"" if is_static else ck

                def cells(
                    col: ColumnDef = col,
                    st: bool = is_static,
                    row_ck: bytes = row_ck,
                    key: bytes = key,
                    token: int = token,
                ) -> Sequence[LiveCell]:
                    return current(key, token, row_ck, st, col.name)

                if isinstance(target, ast.ElementRef):
                    key_type = getattr(col.type, "key", INT)
                    element_key = term_value(target.key, key_type, col.name, bindings)
                    set_element(col, element_key, None, when, dest, cells) if not isinstance(
                        col.type, SetType
                    ) else remove_elements(col, [element_key], when, dest, cells)
                elif isinstance(target, ast.FieldRef):
                    check_deletable(col, target.field)
                    set_field(col, target.field, None, when, dest, cells)
                elif is_multi_cell(col.type):
                    dest.collection_tombstones.append((col.name, when.timestamp))
                else:
                    dest.cells.append(when.cell(col.name, None))
            if changes:
                writes.append(changes.row_write(ck))
            if static_changes:
                writes.append(static_changes.row_write(static=True))
        out.append(Mutation(key, token, rows=tuple(writes)))
    return out


def codec_set() -> type:
    from tabletdb.cql.types import SetType

    return SetType


def _target_name(t: ast.DeleteTarget) -> str:
    return t.column


def _fail(t: ast.DeleteTarget) -> ColumnDef:
    raise InvalidRequest(f"Undefined column name {t.column}")


def _delete_rows(table: TableDef, r: Restrictions, key: bytes, token: int, timestamp: int) -> Mutation:
    if not table.clustering_key or (r.full_clustering == 0 and r.lower is None and r.upper is None):
        return Mutation(key, token, partition_tombstone=timestamp)
    if r.full_clustering == len(table.clustering_key):
        rows = tuple(RowWrite(ck, tombstone=timestamp) for ck in r.clustering_keys(table))
        return Mutation(key, token, rows=rows)
    slices: list[ClusteringSlice] = r.slices(table)
    return Mutation(key, token, range_tombstones=tuple(RangeTombstone(s, timestamp) for s in slices))


__all__ = [
    "CurrentCells",
    "WriteTime",
    "build_delete",
    "build_insert",
    "build_update",
    "time_of",
]
