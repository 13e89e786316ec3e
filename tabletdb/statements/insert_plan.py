"""INSERT ... VALUES as a plan built once per (statement, table definition), so a bound execution
only evaluates its values and encodes keys and cells.

The plan holds what depends on the statement text and the table alone: each column's definition
in statement order, whether its bound bytes can be stored as they arrive, and whether the insert
writes only the static row. Bound values of fixed-encoding types (ints, text, blobs, uuids,
timestamps, dates) are validated and then stored as received: for those types encoding the
decoded value gives back the same bytes, so skipping the round trip changes nothing. The
validation is ``codec.bound_validator``'s, chosen once per plan: a length check for fixed-width
types, the full decode otherwise and for every wrong length (so the errors are the decode's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import NativeType
from tabletdb.cql.values import Unset
from tabletdb.schema.model import ColumnDef, ColumnKind, TableDef
from tabletdb.statements.cells import CellChanges, WriteTime, whole_value
from tabletdb.statements.keys import encode_clustering, partition_key
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.storage.mutation import Mutation, RowMarker, RowWrite

PASS_THROUGH = frozenset(
    {"int", "bigint", "smallint", "tinyint", "text", "ascii", "blob", "uuid", "timeuuid", "timestamp", "date"}
)
"""Native types whose canonical encoding is the only valid one (decode then encode is identity)."""

_LIMIT = 1024


@dataclass(frozen=True)
class InsertPlan:
    columns: tuple[tuple[ColumnDef, ast.Term, bool], ...]
    """Every named column with its term, in statement order; True: a bound value stored as sent."""
    partition_key: tuple[ColumnDef, ...]
    clustering_key: tuple[ColumnDef, ...]
    """Empty when the insert writes only the static row."""
    static_only: bool
    direct: tuple[int, ...] | None = None
    """When every column is a bound value stored as sent, none is static and every key column is
    named: per key column (partition then clustering, in table order) its index in ``columns``.
    ``planned_insert`` then builds the one row straight from the bound bytes."""
    validators: tuple[Callable[[bytes], None] | None, ...] = ()
    """Per entry of ``columns``: the check of its bound bytes when it is stored as sent, else None."""


_plans: dict[tuple[int, int], tuple[ast.InsertStatement, TableDef, InsertPlan]] = {}


def insert_plan(stmt: ast.InsertStatement, table: TableDef) -> InsertPlan:
    """The plan of a non-JSON INSERT, cached by the identity of the statement and the table
    definition (a schema change makes a new TableDef and so a new plan)."""
    key = (id(stmt), id(table))
    cached = _plans.get(key)
    if cached is not None and cached[0] is stmt and cached[1] is table:
        return cached[2]
    plan = _build(stmt, table)
    if len(_plans) >= _LIMIT:
        _plans.clear()
    _plans[key] = (stmt, table, plan)
    return plan


def _build(stmt: ast.InsertStatement, table: TableDef) -> InsertPlan:
    if len(stmt.columns) != len(stmt.values):
        raise InvalidRequest("Unmatched column names/values")
    columns: list[tuple[ColumnDef, ast.Term, bool]] = []
    seen: set[str] = set()
    for name, term in zip(stmt.columns, stmt.values):
        col = table.column(name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {name}")
        if name in seen:
            raise InvalidRequest(f"Multiple definitions found for column {name}")
        seen.add(name)
        passes = (
            isinstance(term, ast.BindMarker)
            and isinstance(col.type, NativeType)
            and col.type.name in PASS_THROUGH
        )
        columns.append((col, term, passes))
    static_only = bool(table.clustering_key) and not any(c.name in seen for c in table.clustering_key)
    if static_only:
        kinds = {col.kind for col, _, _ in columns if not col.is_primary_key}
        static_only = kinds == {ColumnKind.STATIC}
    direct: tuple[int, ...] | None = None
    names = [col.name for col, _, _ in columns]
    keys = [*table.partition_key, *table.clustering_key]
    if (
        all(passes for _, _, passes in columns)
        and not any(col.kind is ColumnKind.STATIC for col, _, _ in columns)
        and all(c.name in seen for c in keys)
    ):
        direct = tuple(names.index(c.name) for c in keys)
    return InsertPlan(
        tuple(columns),
        tuple(table.partition_key),
        () if static_only else tuple(table.clustering_key),
        static_only,
        direct,
        tuple(codec.bound_validator(col.type) if passes else None for col, _, passes in columns),
    )


def planned_insert(plan: InsertPlan, table: TableDef, bindings: Bindings, when: WriteTime) -> list[Mutation]:
    """The mutation of one INSERT ... VALUES; errors and their order as ``build_insert``'s."""
    if plan.direct is not None:
        return _direct_insert(plan, plan.direct, table, bindings, when)
    values: dict[str, Any] = {}
    for (col, term, _), check in zip(plan.columns, plan.validators):
        if check is not None:
            assert isinstance(term, ast.BindMarker)
            raw = bindings.get(term)
            if raw is not None and not isinstance(raw, Unset):
                check(raw)  # raises InvalidRequest naming the type, as codec.deserialize
            values[col.name] = _Encoded(raw)
        else:
            values[col.name] = term_value(term, col.type, col.name, bindings)
    key, token = partition_key(table, [_key_bytes(c, values) for c in plan.partition_key])
    clustering = encode_clustering(table, [_key_bytes(c, values) for c in plan.clustering_key])
    regular = CellChanges([], [])
    static = CellChanges([], [])
    for col, _, _ in plan.columns:
        value = values[col.name]
        if col.is_primary_key:
            continue
        out = static if col.kind is ColumnKind.STATIC else regular
        if isinstance(value, _Encoded):
            if not isinstance(value.raw, Unset):
                out.cells.append(when.cell(col.name, value.raw))
            continue
        if isinstance(value, Unset):
            continue
        if col.type.is_counter:
            raise InvalidRequest("INSERT statements are not allowed on counter tables, use UPDATE instead")
        whole_value(col, value, when, out)
    marker = RowMarker(when.timestamp, when.ttl, when.now + when.ttl if when.ttl else 0)
    rows = []
    if not plan.static_only and (table.clustering_key or not static.cells):
        rows.append(regular.row_write(clustering, marker=marker))
    if static:
        rows.append(static.row_write(static=True))
    return [Mutation(key, token, rows=tuple(rows))]


def _direct_insert(
    plan: InsertPlan, key_positions: tuple[int, ...], table: TableDef, bindings: Bindings, when: WriteTime
) -> list[Mutation]:
    """``planned_insert`` when every value is bound bytes stored as sent (``InsertPlan.direct``):
    the same checks in the same order, without the per-column value objects."""
    raws: list[bytes | Unset | None] = []
    for (_, term, _), check in zip(plan.columns, plan.validators):
        assert isinstance(term, ast.BindMarker) and check is not None
        raw = bindings.get(term)
        if raw is not None and not isinstance(raw, Unset):
            check(raw)  # raises InvalidRequest naming the type, as codec.deserialize
        raws.append(raw)
    npk = len(plan.partition_key)
    key, token = partition_key(table, _bound_keys(plan, key_positions[:npk], raws))
    clustering = encode_clustering(table, _bound_keys(plan, key_positions[npk:], raws))
    cells = tuple(
        when.cell(col.name, raw)
        for (col, _, _), raw in zip(plan.columns, raws)
        if not col.is_primary_key and not isinstance(raw, Unset)
    )
    marker = RowMarker(when.timestamp, when.ttl, when.now + when.ttl if when.ttl else 0)
    return [Mutation(key, token, rows=(RowWrite(clustering, marker=marker, cells=cells),))]


def _bound_keys(
    plan: InsertPlan, positions: tuple[int, ...], raws: list[bytes | Unset | None]
) -> list[bytes]:
    out: list[bytes] = []
    for position in positions:
        raw = raws[position]
        if raw is None or isinstance(raw, Unset):
            name = plan.columns[position][0].name
            raise InvalidRequest(f"Invalid null value in condition for column {name}")
        out.append(raw)
    return out


@dataclass(frozen=True, slots=True)
class _Encoded:
    """A bound value kept as sent (None: null; UNSET: leave the column alone)."""

    raw: bytes | Unset | None


def _key_bytes(col: ColumnDef, values: dict[str, Any]) -> bytes:
    if col.name not in values:
        kind = "partition" if col.kind is ColumnKind.PARTITION_KEY else "clustering"
        raise InvalidRequest(f"Some {kind} key parts are missing: {col.name}")
    value = values[col.name]
    raw = value.raw if isinstance(value, _Encoded) else value
    if raw is None or isinstance(raw, Unset):
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    return raw if isinstance(value, _Encoded) else codec.serialize(col.type, value)
