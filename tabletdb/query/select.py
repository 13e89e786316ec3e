"""SELECT on user tables: restrictions -> rows from storage -> filter, project, aggregate, page.

The paging state is msgpack ``[version, token, partition key, last clustering or None, rows
left under LIMIT, rows left in the current partition under PER PARTITION LIMIT]``: a position,
so concurrent writes never make a page repeat or skip rows outside what they changed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any

import msgpack

from tabletdb.coordinator.rows import OutRow, PartitionSource, Position, lookup_rows, scan_rows, udt_cell_key
from tabletdb.cql import ast, codec
from tabletdb.cql.compare import exact_decimal
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.jsonvalues import to_json
from tabletdb.cql.results import ColumnSpec, RowsMetadata, RowsResult
from tabletdb.cql.types import BIGINT, INT, TEXT, CqlType, NativeType, UserType
from tabletdb.cql.unparse import cql_text
from tabletdb.query.cell_meta import check_field_meta, element_meta
from tabletdb.schema.model import ClusteringOrder, ColumnDef, KeyspaceSchema, TableDef
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.cells import is_multi_cell
from tabletdb.statements.insert_plan import PASS_THROUGH
from tabletdb.statements.restrictions import Restrictions
from tabletdb.statements.selectors import Scalar, scalar
from tabletdb.statements.user_functions import is_user_aggregate, user_aggregate
from tabletdb.views.index_reads import IndexLookup, choose_index, index_rows, unindexed_filtering

RowFn = Callable[[OutRow], Any]

PAGING_VERSION = 1
DEFAULT_PAGE = 10_000
AGGREGATES = ("count", "min", "max", "sum", "avg")


@dataclass(frozen=True)
class Output:
    name: str
    type: CqlType
    column: str | None
    kind: str = (
        "column"  # column | writetime | ttl | token | expr | count | min | max | sum | avg | uda | over
    )
    fn: RowFn | None = field(default=None, compare=False)
    """For `expr`, and for an aggregate of anything but a plain column: the compiled
    expression (`query.selectors`) a row's value comes from (a user-defined aggregate's: the
    tuple of its arguments)."""
    fold: Callable[[list[Any]], Any] | None = field(default=None, compare=False)
    """For `uda`: the user-defined aggregate over the rows' argument tuples (`udf.calls`)."""
    inner: tuple[Output, ...] = field(default=(), compare=False)
    """For `over` (a function of aggregates, `f(max(v))`): the aggregates, computed per group;
    `post` then computes the result from the group's first row with `AGGREGATE_KEYS` holding them."""
    post: Callable[[Mapping[str, Any]], Any] | None = field(default=None, compare=False)


def outputs_of(
    stmt: ast.SelectStatement, table: TableDef, routines: KeyspaceSchema | None = None
) -> list[Output]:
    """The result columns; `routines` is the table's keyspace (its user-defined functions)."""
    if stmt.selectors is None:
        return [Output(c.name, c.type, c.name) for c in table.columns]
    return [_output(sel, table, routines) for sel in stmt.selectors]


def result_columns(
    stmt: ast.SelectStatement, table: TableDef, routines: KeyspaceSchema | None = None
) -> list[ColumnSpec]:
    outs = [Output("[json]", TEXT, None)] if stmt.json else outputs_of(stmt, table, routines)
    return [ColumnSpec(table.keyspace, table.name, o.name, o.type) for o in outs]


def _col(table: TableDef, name: str) -> Any:
    col = table.column(name)
    if col is None:
        raise InvalidRequest(f"Undefined column name {name}")
    return col


def _output(sel: ast.Selector, table: TableDef, routines: KeyspaceSchema | None) -> Output:
    expr = sel.expr
    if isinstance(expr, ast.ColumnRef):
        col = _col(table, expr.name)
        return Output(sel.alias or col.name, col.type, col.name)
    if isinstance(expr, ast.CountRows):
        return Output(sel.alias or "count", BIGINT, None, "count")
    if isinstance(expr, ast.FunctionCall) and expr.name.lower() == "token":
        names = [a.name for a in expr.args if isinstance(a, ast.ColumnRef)]
        if names != [c.name for c in table.partition_key]:
            raise InvalidRequest("token() takes exactly the partition key columns, in order")
        return Output(sel.alias or f"system.token({', '.join(names)})", BIGINT, None, "token")
    if isinstance(expr, ast.FunctionCall) and len(expr.args) == 1 and expr.keyspace in (None, "system"):
        fn = expr.name.lower()
        arg = expr.args[0]
        if fn == "count" and isinstance(arg, ast.Literal):
            return Output(sel.alias or "count", BIGINT, None, "count")
        if fn in ("writetime", "ttl"):
            return _cell_meta(sel, fn, arg, table)
        if fn in AGGREGATES:
            return _aggregate_output(sel, fn, arg, table, routines)
    if (
        isinstance(expr, ast.FunctionCall)
        and routines is not None
        and is_user_aggregate(expr, table, routines)
    ):
        return _user_aggregate_output(sel, expr, table, routines)
    aggregates = _aggregates_in(expr, table, routines)
    if aggregates:
        return _over_aggregates(sel, expr, aggregates, table, routines)
    s = scalar(expr, table, None, routines)
    return Output(sel.alias or s.name, s.type, None, "expr", _on_values(s.eval))


def _user_aggregate_output(
    sel: ast.Selector, call: ast.FunctionCall, table: TableDef, routines: KeyspaceSchema
) -> Output:
    def compile_arg(arg: ast.Expr, hint: CqlType | None) -> Any:
        return scalar(arg, table, hint, routines)

    uda = user_aggregate(call, table, routines, compile_arg)
    fold = uda.aggregation.fold
    return Output(sel.alias or uda.name, uda.type, None, "uda", _on_values(uda.arguments), fold)


def _is_aggregate(expr: object, table: TableDef, routines: KeyspaceSchema | None) -> bool:
    if isinstance(expr, ast.CountRows):
        return True
    if not isinstance(expr, ast.FunctionCall):
        return False
    native = expr.keyspace in (None, "system") and expr.name.lower() in AGGREGATES and len(expr.args) == 1
    return native or (routines is not None and is_user_aggregate(expr, table, routines))


def _aggregates_in(expr: object, table: TableDef, routines: KeyspaceSchema | None) -> list[ast.Expr]:
    """The aggregates a select-list expression applies functions to (`f(max(v))`), outermost
    first, each once."""
    found: list[ast.Expr] = []
    if isinstance(expr, ast.FunctionCall):
        subs: tuple[object, ...] = expr.args
    elif isinstance(expr, ast.Cast):
        subs = (expr.expr,)
    elif isinstance(expr, ast.TypeCast):
        subs = (expr.term,)
    else:
        return found
    for sub in subs:
        if _is_aggregate(sub, table, routines):
            if sub not in found:
                found.append(sub)  # type: ignore[arg-type]
        else:
            found.extend(a for a in _aggregates_in(sub, table, routines) if a not in found)
    return found


AGGREGATE_KEYS = tuple(f"\x00aggregate{i}" for i in range(64))
"""Names no column can have, under which a function of aggregates reads them."""


def _over_aggregates(
    sel: ast.Selector,
    expr: ast.Expr,
    aggregates: list[ast.Expr],
    table: TableDef,
    routines: KeyspaceSchema | None,
) -> Output:
    """A scalar function of aggregates (`f(max(v))`, `toJson(count(*))`, `CAST(avg(v) AS text)`),
    as ScyllaDB allows: the aggregates are folded per group, then the function applied once."""
    if len(aggregates) > len(AGGREGATE_KEYS):
        raise InvalidRequest(f"Too many aggregates in {cql_text(expr)}")
    inner = tuple(_output(ast.Selector(a), table, routines) for a in aggregates)
    computed: dict[object, Scalar] = {
        a: Scalar(o.name, o.type, _reads(key)) for a, o, key in zip(aggregates, inner, AGGREGATE_KEYS)
    }
    s = scalar(expr, table, None, routines, computed)
    return Output(sel.alias or s.name, s.type, None, "over", inner=inner, post=s.eval)


def _reads(key: str) -> Callable[[Mapping[str, Any]], Any]:
    return lambda row: row.get(key)


def _cell_meta(sel: ast.Selector, fn: str, arg: ast.Expr, table: TableDef) -> Output:
    out_type = BIGINT if fn == "writetime" else INT
    if isinstance(arg, ast.FieldRef):
        return _field_cell_meta(sel, fn, arg, table)
    if isinstance(arg, ast.ElementRef):
        shown, read = element_meta(fn, arg, table)
        return Output(sel.alias or shown, out_type, None, "expr", read)
    if not isinstance(arg, ast.ColumnRef):
        raise InvalidRequest(
            f"{fn}() of {cql_text(arg)} is not supported: only of a column, a field of a non-frozen "
            "user type or an element of a non-frozen set or map"
        )
    col = _col(table, arg.name)
    if col.is_primary_key:
        raise InvalidRequest(f"Cannot use selection function {fn} on PRIMARY KEY part {col.name}")
    if is_multi_cell(col.type):
        kind = "UDT" if isinstance(col.type, UserType) else "collection"
        raise InvalidRequest(f"Cannot use selection function {fn} on non-frozen {kind} {col.name}")
    return Output(sel.alias or f"{fn}({col.name})", out_type, col.name, fn)


def _field_cell_meta(sel: ast.Selector, fn: str, arg: ast.FieldRef, table: TableDef) -> Output:
    """``writetime(u.f)``/``ttl(u.f)``: a field of a non-frozen UDT is a cell of its own."""
    col = _col(table, arg.column)
    t = col.type
    check_field_meta(fn, t, col.name, col.is_primary_key)
    assert isinstance(t, UserType)
    if arg.field not in t.field_names:
        raise InvalidRequest(f"Invalid field selection: {col.name} has no field {arg.field}")
    name = sel.alias or f"{fn}({col.name}.{arg.field})"
    return Output(name, BIGINT if fn == "writetime" else INT, udt_cell_key(col.name, arg.field), fn)


def _aggregate_output(
    sel: ast.Selector, fn: str, arg: ast.Expr, table: TableDef, routines: KeyspaceSchema | None
) -> Output:
    if isinstance(arg, ast.ColumnRef):
        col = _col(table, arg.name)
        out_type = BIGINT if fn == "count" else col.type
        return Output(sel.alias or f"system.{fn}({col.name})", out_type, col.name, fn)
    if isinstance(arg, ast.FunctionCall) and arg.name.lower() in ("writetime", "ttl") and len(arg.args) == 1:
        inner = _cell_meta(ast.Selector(arg), arg.name.lower(), arg.args[0], table)
        name, t, value = inner.name, inner.type, _cell_reader(inner)
    else:
        s = scalar(arg, table, None, routines)
        name, t, value = s.name, s.type, _on_values(s.eval)
    out_type = BIGINT if fn == "count" else t
    return Output(sel.alias or f"system.{fn}({name})", out_type, None, fn, value)


def _cell_reader(o: Output) -> RowFn:
    return lambda row: _value(o, row)


def _on_values(fn: Callable[[Mapping[str, Any]], Any]) -> RowFn:
    return lambda row: fn(row.values)


def _reverse(stmt: ast.SelectStatement, table: TableDef, r: Restrictions) -> bool:
    if not stmt.order_by:
        return False
    if r.partition_keys is None:
        raise InvalidRequest(
            "ORDER BY is only supported when the partition key is restricted by an EQ or an IN."
        )
    cks = table.clustering_key
    flips = set()
    for i, o in enumerate(stmt.order_by):
        if i >= len(cks) or o.column != cks[i].name:
            raise InvalidRequest(
                "Order by is currently only supported on the clustered columns of the PRIMARY KEY, "
                f"got {o.column}"
            )
        natural = cks[i].clustering_order is not ClusteringOrder.DESC
        flips.add(o.ascending != natural)
    if len(flips) > 1:
        raise InvalidRequest("Unsupported order by relation")
    return flips.pop()


def decode_paging_state(state: bytes | None) -> tuple[Position | None, int | None, int | None]:
    if not state:
        return None, None, None
    try:
        v, token, pk, ck, left, part_left = msgpack.unpackb(state)
    except (ValueError, TypeError, msgpack.ExtraData) as exc:
        raise InvalidRequest("Invalid value for the paging state") from exc
    if v != PAGING_VERSION:
        raise InvalidRequest("Invalid value for the paging state")
    return Position(token, pk, ck), left, part_left


@dataclass(frozen=True)
class SelectPlan:
    """What a SELECT's execution needs that depends only on its text and its table definition,
    built once per (statement, table) pair instead of on every bound execution."""

    outputs: list[Output]
    aggregate: bool
    group_key: list[str] | None
    metadata: RowsMetadata
    """Result metadata of a non-JSON result; every page's copy (``with_paging_state``) shares what
    the protocol derives from it, so that is derived once per plan."""
    stored: list[bool]
    """Per output: a regular single-cell column of a type whose stored bytes are its canonical
    encoding, so a row's value is sent as stored instead of decoded and encoded again."""
    point_key: list[tuple[ColumnDef, ast.Term]] | None
    """The partition key columns and their terms, in WHERE order, when the WHERE clause is exactly
    one ``=`` per partition key column on a table without indexes: the restrictions are then that
    single partition, bound without the general analysis."""
    point_order: list[int]
    """For each partition key column in key order, its index in ``point_key``."""


_PLANS: dict[tuple[int, int, int, int], tuple[ast.SelectStatement, TableDef, object, object, SelectPlan]] = {}
_PLAN_LIMIT = 1024


def plan_of(stmt: ast.SelectStatement, table: TableDef, routines: KeyspaceSchema | None = None) -> SelectPlan:
    """The cached plan of ``stmt`` on this table definition (a schema change makes a new TableDef,
    so it gets a new plan; a function or aggregate change makes new ``routines`` maps); entries
    are checked by identity, so a reused id() cannot alias."""
    functions = None if routines is None else routines.functions
    aggregates = None if routines is None else routines.aggregates
    key = (id(stmt), id(table), id(functions), id(aggregates))
    cached = _PLANS.get(key)
    if (
        cached is not None
        and cached[0] is stmt
        and cached[1] is table
        and cached[2] is functions
        and cached[3] is aggregates
    ):
        return cached[4]
    outputs = outputs_of(stmt, table, routines)
    point_key = _point_key(stmt, table)
    names = [col.name for col, _ in point_key or ()]
    plan = SelectPlan(
        outputs,
        any(o.kind in AGGREGATES or o.kind in ("uda", "over") for o in outputs) or bool(stmt.group_by),
        _group_key(stmt, table),
        RowsMetadata([ColumnSpec(table.keyspace, table.name, o.name, o.type) for o in outputs]),
        [_is_stored(o, table) for o in outputs],
        point_key,
        [names.index(c.name) for c in table.partition_key] if point_key is not None else [],
    )
    if len(_PLANS) >= _PLAN_LIMIT:
        _PLANS.clear()
    _PLANS[key] = (stmt, table, functions, aggregates, plan)
    return plan


def _is_stored(o: Output, table: TableDef) -> bool:
    col = table.column(o.column) if o.kind == "column" and o.column is not None else None
    return (
        col is not None
        and not col.is_primary_key
        and isinstance(col.type, NativeType)
        and col.type.name in PASS_THROUGH
    )


def _point_key(stmt: ast.SelectStatement, table: TableDef) -> list[tuple[ColumnDef, ast.Term]] | None:
    if table.indexes or len(stmt.where) != len(table.partition_key):
        return None
    out: list[tuple[ColumnDef, ast.Term]] = []
    for rel in stmt.where:
        if not isinstance(rel.lhs, ast.ColumnRef) or rel.op != "=" or isinstance(rel.rhs, ast.InValues):
            return None
        col = table.column(rel.lhs.name)
        if col is None or col not in table.partition_key:
            return None
        out.append((col, rel.rhs))
    if len({col.name for col, _ in out}) != len(out):
        return None
    return out


def _restrictions(select: BoundSelect, plan: SelectPlan) -> tuple[Restrictions, IndexLookup | None]:
    if plan.point_key is not None:
        values = select.key_components(plan.point_key)
        return Restrictions(partition_keys=[[values[i] for i in plan.point_order]]), None
    r = select.restrictions()
    lookup = choose_index(select)
    filtered = unindexed_filtering(r, select.table, lookup)
    if filtered and not select.statement.allow_filtering:
        raise InvalidRequest(
            "Cannot execute this query as it might involve data filtering and thus may have unpredictable "
            "performance. If you want to execute this query despite the performance unpredictability, "
            f"use ALLOW FILTERING (restricted: {', '.join(filtered)})"
        )
    return r, lookup


async def execute_select(select: BoundSelect, source: PartitionSource, now: int) -> RowsResult:
    stmt, table, page_size = select.statement, select.table, select.page_size
    plan = plan_of(stmt, table, select.routines)
    r, lookup = _restrictions(select, plan)
    outputs = plan.outputs
    aggregate = plan.aggregate
    group_key = plan.group_key
    result_limit = select.limit()
    limit = None if aggregate else result_limit
    per_partition = select.per_partition_limit()
    reverse = _reverse(stmt, table, r)
    after, left, part_left = decode_paging_state(select.paging_state)
    if left is not None:
        limit = left
    rows: AsyncGenerator[OutRow, None]
    if r.partition_keys is not None:
        rows = lookup_rows(table, source, r, now, after, reverse)
    elif lookup is not None:
        rows = index_rows(table, lookup, source, r, now, after)
    else:
        rows = scan_rows(table, source, r, now, after)
    page = page_size if page_size and page_size > 0 and not aggregate else None
    taken: list[OutRow] = []
    current_key = (after.token, after.partition_key) if after is not None else None
    in_partition = 0 if part_left is None or per_partition is None else per_partition - part_left
    more = False
    last: OutRow | None = None
    last_count = 0
    async for row in rows:
        key = (row.token, row.partition_key)
        if key != current_key:
            current_key, in_partition = key, 0
        if stmt.distinct and in_partition >= 1:
            continue
        if per_partition is not None and in_partition >= per_partition:
            continue
        if not all(f(row.values) for f in r.filters):
            continue
        taken.append(row)
        last = row
        in_partition += 1
        last_count = in_partition
        if limit is not None and len(taken) >= limit:
            break
        if page is not None and len(taken) >= page:
            # a full page carries a paging state, as ScyllaDB's do (no look-ahead: when the rows
            # end here the next page is empty and has none), unless the key names one row
            more = not _one_row(r, table)
            break
    await rows.aclose()
    next_state = None
    if more and last is not None:
        left_after = None if limit is None else limit - len(taken)
        part_after = None if per_partition is None else per_partition - last_count
        next_state = msgpack.packb(
            [PAGING_VERSION, last.token, last.partition_key, last.clustering, left_after, part_after]
        )
    if not aggregate and not stmt.json:
        return RowsResult(plan.metadata.with_paging_state(next_state), encode_rows(plan, taken))
    if not aggregate:
        result = [[_value(o, row) for o in outputs] for row in taken]
    elif group_key is None:
        result = [_aggregate(outputs, taken)]
    else:
        result = [_aggregate(outputs, group) for group in _groups(taken, group_key)]
    if aggregate and result_limit is not None:
        result = result[:result_limit]
    metadata = plan.metadata.with_paging_state(next_state)
    if stmt.json:
        result = [[_json_row(outputs, values)] for values in result]
        outputs = [Output("[json]", TEXT, None)]
        metadata = RowsMetadata([ColumnSpec(table.keyspace, table.name, "[json]", TEXT)], next_state)
    encoded = [
        [None if v is None else codec.serialize(o.type, v) for v, o in zip(row, outputs)] for row in result
    ]
    return RowsResult(metadata, encoded)


def _one_row(r: Restrictions, table: TableDef) -> bool:
    """Whether the restrictions name a single row (its full primary key): such a read is never
    paged, as the direct point read (``query.point_select``) is not."""
    return (
        r.partition_keys is not None
        and len(r.partition_keys) == 1
        and len(r.clustering_prefixes) == 1
        and r.full_clustering == len(table.clustering_key)
    )


def encode_rows(plan: SelectPlan, rows: list[OutRow]) -> list[list[bytes | None]]:
    """Rows of a plain (non-aggregate, non-JSON) result, stored bytes sent as they are."""
    out: list[list[bytes | None]] = []
    pairs = list(zip(plan.outputs, plan.stored))
    for row in rows:
        encoded: list[bytes | None] = []
        for o, stored in pairs:
            if stored:
                cell = row.cells.get(o.column or "")
                encoded.append(None if cell is None else cell.value)
                continue
            v = _value(o, row)
            encoded.append(None if v is None else codec.serialize(o.type, v))
        out.append(encoded)
    return out


def _group_key(stmt: ast.SelectStatement, table: TableDef) -> list[str] | None:
    if not stmt.group_by:
        return None
    primary = [c.name for c in table.primary_key]
    if list(stmt.group_by) != primary[: len(stmt.group_by)]:
        raise InvalidRequest(
            f"Group by is only supported on a prefix of the primary key ({', '.join(primary)}), "
            f"got {', '.join(stmt.group_by)}"
        )
    return list(stmt.group_by)


def _groups(rows: list[OutRow], key: list[str]) -> Iterator[list[OutRow]]:
    """Consecutive rows sharing the GROUP BY columns (rows arrive in primary-key order)."""
    group: list[OutRow] = []
    current: tuple[Any, ...] | None = None
    for row in rows:
        values = tuple(row.values.get(name) for name in key)
        if group and values != current:
            yield group
            group = []
        current = values
        group.append(row)
    if group:
        yield group


def _value(o: Output, row: OutRow) -> Any:
    if o.kind == "column":
        return row.values.get(o.column or "")
    if o.kind == "token":
        return row.token
    if o.kind == "expr":
        assert o.fn is not None
        return o.fn(row)
    cell = row.cells.get(o.column or "")
    if cell is None:
        return None
    return cell.timestamp if o.kind == "writetime" else cell.ttl_remaining


def _aggregate(outputs: list[Output], rows: list[OutRow]) -> list[Any]:
    out: list[Any] = []
    for o in outputs:
        if o.kind == "over":
            assert o.post is not None
            folded = dict(zip(AGGREGATE_KEYS, _aggregate(list(o.inner), rows)))
            out.append(o.post({**rows[0].values, **folded} if rows else folded))
            continue
        values = [o.fn(r) if o.fn is not None else r.values.get(o.column or "") for r in rows]
        if o.kind == "uda":
            assert o.fold is not None
            out.append(o.fold(values))
            continue
        if o.kind == "count":
            counted = o.column is not None or o.fn is not None
            out.append(sum(1 for v in values if v is not None) if counted else len(rows))
            continue
        present = [v for v in values if v is not None]
        if o.kind == "min":
            out.append(min(present) if present else None)
        elif o.kind == "max":
            out.append(max(present) if present else None)
        elif o.kind in ("sum", "avg"):
            out.append(_sum_avg(o, present))
        else:
            out.append(_value(o, rows[0]) if rows else None)
    return out


def _sum_avg(o: Output, present: list[Any]) -> Any:
    """sum/avg as ScyllaDB computes them: integers and decimals exactly (a decimal average keeps
    the sum's scale, rounded half-even; an integer average truncates), floats in floating point."""
    name = o.type.name if isinstance(o.type, NativeType) else ""
    if name == "decimal":
        return _decimal_sum_avg(o.kind, present)
    total = sum(present) if present else 0
    if o.kind == "sum":
        return _wrapped(name, total) if name in _BITS else total
    if not present:
        return 0
    if name in ("float", "double"):
        return total / len(present)
    quotient = abs(total) // len(present)  # exact: a float division loses a bigint's low digits
    return quotient if total >= 0 else -quotient


_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64}


def _wrapped(name: str, n: int) -> int:
    """``n`` in the fixed-width type, wrapping around as ScyllaDB's sum of that type does."""
    bits = _BITS[name]
    n &= (1 << bits) - 1
    return n - (1 << bits) if n >> (bits - 1) else n


def _decimal_sum_avg(kind: str, present: list[Decimal]) -> Decimal:
    if not present:
        return Decimal(0)
    scale = max(-int(d.as_tuple().exponent) for d in present)
    digits = max(d.adjusted() for d in present) + scale + 2
    if digits > _MAX_SUM_DIGITS:  # 1e1000000000 + 1e-1000000000 would need two billion digits
        raise InvalidRequest(
            f"The exact sum of these decimals needs {digits} digits, more than {_MAX_SUM_DIGITS}"
        )
    total = sum(int(d.scaleb(scale, _EXACT)) for d in present)
    if kind == "avg":
        total, rest = divmod(total, len(present))
        if 2 * rest > len(present) or (2 * rest == len(present) and total % 2):
            total += 1
    return exact_decimal(total, scale)


_MAX_SUM_DIGITS = 100_000
"""Digits an exact decimal sum may need before it is refused rather than computed for minutes."""

_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])
"""Context for moving a decimal's point: exact at any size a CQL decimal can have."""


def _json_row(outputs: list[Output], values: list[Any]) -> str:
    fields = (
        f"{json.dumps(o.name)}: {'null' if v is None else to_json(o.type, v)}"
        for o, v in zip(outputs, values)
    )
    return "{" + ", ".join(fields) + "}"
