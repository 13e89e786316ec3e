"""SELECT over rendered rows: the system and system_schema virtual tables.

Virtual tables are small (thousands of rows at most), so a SELECT renders the rows narrowed by
the partition key (and first clustering column) when the WHERE clause pins them, then filters,
projects and pages in memory. ALLOW FILTERING is never required here, as in ScyllaDB's virtual
tables.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.jsonvalues import to_json
from tabletdb.cql.results import ColumnSpec, RowsMetadata, RowsResult
from tabletdb.cql.types import BIGINT, TEXT, CqlType
from tabletdb.cql.unparse import cql_text
from tabletdb.schema.model import ColumnKind, TableDef
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.relations import Row
from tabletdb.statements.selectors import scalar

Narrowing = dict[str, Any]
"""Equality restrictions on the partition key and the first clustering column, for renderers."""

RowSource = Callable[[Narrowing], list[Row]]
_PAGING_PREFIX = b"tdbv1"


@dataclass(frozen=True)
class _Output:
    name: str
    type: CqlType
    column: str | None  # the column read, None for aggregates
    aggregate: str | None = None  # count | min | max
    fn: Callable[[Row], Any] | None = field(default=None, compare=False)
    """Any other selector (function, cast, constant, element, field): `statements.selectors`."""


def select_virtual(select: BoundSelect, source: RowSource) -> RowsResult:
    """Run the SELECT against the rows `source` renders; one page of the result."""
    stmt, table = select.statement, select.table
    predicates, narrowing = _restrictions(select)
    rows = [r for r in source(narrowing) if all(p(r) for p in predicates)]
    outputs = _outputs(stmt, table)
    if stmt.distinct:
        rows = _distinct(rows, table)
    if stmt.order_by:
        raise InvalidRequest("ORDER BY is not supported on system tables")
    if any(o.aggregate for o in outputs):
        result_rows = [_aggregate_row(outputs, rows)]
    else:
        result_rows = [[_value(o, r) for o in outputs] for r in rows]
    limit = select.limit()
    if limit is not None:
        result_rows = result_rows[:limit]
    if stmt.json:
        result_rows, outputs = _as_json(result_rows, outputs)
    start = _page_start(select.paging_state)
    page_size = select.page_size
    end = len(result_rows) if not page_size or page_size <= 0 else start + page_size
    page = result_rows[start:end]
    next_state = _PAGING_PREFIX + struct.pack(">I", end) if end < len(result_rows) else None
    columns = [ColumnSpec(table.keyspace, table.name, o.name, o.type) for o in outputs]
    encoded = [
        [None if v is None else codec.serialize(o.type, v) for v, o in zip(row, outputs)] for row in page
    ]
    return RowsResult(RowsMetadata(columns, next_state), encoded)


def _restrictions(select: BoundSelect) -> tuple[list[Callable[[Row], bool]], Narrowing]:
    table = select.table
    predicates: list[Callable[[Row], bool]] = []
    narrowing: Narrowing = {}
    narrowable = {c.name for c in table.partition_key} | {c.name for c in table.clustering_key[:1]}
    for rel in select.statement.where:
        if not isinstance(rel.lhs, ast.ColumnRef):
            raise InvalidRequest("Only restrictions on plain columns are supported on system tables")
        name = rel.lhs.name
        col = table.column(name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {name}")
        bound = select.relation(rel, col)
        predicates.append(bound.test)
        if rel.op == "=" and name in narrowable:
            narrowing[name] = bound.equals
    return predicates, narrowing


def output_columns(stmt: ast.SelectStatement, table: TableDef) -> list[ColumnSpec]:
    """The result columns of `stmt` (what PREPARE reports), without running it."""
    outputs = [_Output("[json]", TEXT, None)] if stmt.json else _outputs(stmt, table)
    return [ColumnSpec(table.keyspace, table.name, o.name, o.type) for o in outputs]


def _outputs(stmt: ast.SelectStatement, table: TableDef) -> list[_Output]:
    if stmt.selectors is None:
        return [_Output(c.name, c.type, c.name) for c in table.columns]
    outputs = []
    for sel in stmt.selectors:
        outputs.append(_output(sel, table))
    return outputs


def _output(sel: ast.Selector, table: TableDef) -> _Output:
    expr = sel.expr
    if isinstance(expr, ast.ColumnRef):
        col = table.column(expr.name)
        if col is None:
            raise InvalidRequest(f"Undefined column name {expr.name}")
        return _Output(sel.alias or col.name, col.type, col.name)
    if isinstance(expr, ast.CountRows):
        return _Output(sel.alias or "count", BIGINT, None, "count")
    if isinstance(expr, ast.FunctionCall) and len(expr.args) == 1 and expr.keyspace in (None, "system"):
        fn = expr.name.lower()
        arg = expr.args[0]
        if fn == "count" and isinstance(arg, ast.Literal):
            return _Output(sel.alias or "count", BIGINT, None, "count")
        if fn in ("count", "min", "max"):
            s = scalar(arg, table)
            out_type = BIGINT if fn == "count" else s.type
            column = arg.name if isinstance(arg, ast.ColumnRef) else None
            return _Output(sel.alias or f"system.{fn}({s.name})", out_type, column, fn, s.eval)
        if fn in _NOT_HERE:
            raise InvalidRequest(f"{fn}() is not supported on system tables: {cql_text(expr)}")
    s = scalar(expr, table)
    return _Output(sel.alias or s.name, s.type, None, None, s.eval)


_NOT_HERE = ("sum", "avg", "writetime", "ttl", "token")
"""Selectors ScyllaDB's virtual tables refuse or that need stored cells, which rendered rows lack."""


def _value(o: _Output, row: Row) -> Any:
    if o.fn is not None:
        return o.fn(row)
    return row.get(o.column) if o.column else None


def _aggregate_row(outputs: list[_Output], rows: list[Row]) -> list[Any]:
    result: list[Any] = []
    for o in outputs:
        read = o.fn is not None or o.column is not None
        values = [_value(o, r) for r in rows] if read else [1] * len(rows)  # count(*): every row
        present = [v for v in values if v is not None]
        if o.aggregate == "count":
            result.append(len(present))
        elif o.aggregate == "min":
            result.append(min(present) if present else None)
        elif o.aggregate == "max":
            result.append(max(present) if present else None)
        else:
            result.append(values[0] if values else None)
    return result


def _distinct(rows: list[Row], table: TableDef) -> list[Row]:
    keys = [c.name for c in table.columns if c.kind == ColumnKind.PARTITION_KEY]
    seen: set[tuple[Any, ...]] = set()
    result = []
    for r in rows:
        k = tuple(r.get(n) for n in keys)
        if k not in seen:
            seen.add(k)
            result.append(r)
    return result


def _as_json(rows: list[list[Any]], outputs: list[_Output]) -> tuple[list[list[Any]], list[_Output]]:
    json_rows = []
    for row in rows:
        fields = (
            f"{json.dumps(o.name)}: {'null' if v is None else to_json(o.type, v)}"
            for o, v in zip(outputs, row)
        )
        json_rows.append(["{" + ", ".join(fields) + "}"])
    return json_rows, [_Output("[json]", TEXT, None)]


def _page_start(paging_state: bytes | None) -> int:
    if not paging_state:
        return 0
    if not paging_state.startswith(_PAGING_PREFIX) or len(paging_state) != len(_PAGING_PREFIX) + 4:
        raise InvalidRequest("Invalid paging state")
    return int(struct.unpack(">I", paging_state[len(_PAGING_PREFIX) :])[0])
