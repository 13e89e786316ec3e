"""The direct point read: ``SELECT ... WHERE <every partition key column> = ?`` on a table without
clustering columns, answered from this node's store without the general read machinery.

Such a SELECT names at most one row, so it needs no paging, no row filtering, no partition
iteration and no async generator. When this node's store alone answers the read at the request's
consistency level (``ReadCoordinator.reads_locally``, the decision the general path makes too),
the row comes straight from ``LocalReplica.read_partition`` and is encoded from the store's cells:
a partition key column of a canonical-encoding type is sent as its key bytes, a regular column of
such a type as its stored cell (both are what decoding and re-encoding would give), read with
``TabletStore.read_row_cells`` (one statement, no row or cell objects). Any other output, or a
partition with static, range or collection-tombstone data, goes through ``read_partition``,
``partition_rows`` and ``query.select``'s encoder, as the general path does.

Everything else - clustering columns, LIMIT, DISTINCT, JSON, aggregates, ORDER BY, a paging
state, a read that needs other replicas - is left to ``query.select.execute_select``
(``point_select`` answers None). The answer equals the general path's (tests/unit/query/
test_select_point.py compares both on random data with TTLs, tombstones and nulls).
"""

from __future__ import annotations

from dataclasses import dataclass

from tabletdb.coordinator.consistency import ANY
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.rows import partition_rows
from tabletdb.cql import ast
from tabletdb.cql.results import RowsResult
from tabletdb.cql.types import NativeType
from tabletdb.query.select import SelectPlan, encode_rows, plan_of
from tabletdb.schema.model import KeyspaceSchema, TableDef
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.insert_plan import PASS_THROUGH
from tabletdb.statements.keys import partition_key, split_key
from tabletdb.storage.tablet_store import TabletCorrupt, TabletUnavailable


@dataclass(frozen=True)
class PointPlan:
    """What the direct read of one statement on one table needs, beside its ``SelectPlan``."""

    plan: SelectPlan
    recipe: tuple[int | str, ...] | None
    """Per output: the partition key component's index (int) or the stored cell's column (str);
    None when some output needs decoding (a non-canonical type, writetime/ttl/token, a collection)."""


_POINT_PLANS: dict[int, tuple[SelectPlan, PointPlan | None]] = {}
_LIMIT = 1024


def point_plan(
    stmt: ast.SelectStatement, table: TableDef, routines: KeyspaceSchema | None = None
) -> PointPlan | None:
    """The cached direct-read plan of ``stmt`` on ``table``, None when it does not qualify."""
    plan = plan_of(stmt, table, routines)
    cached = _POINT_PLANS.get(id(plan))
    if cached is not None and cached[0] is plan:
        return cached[1]
    point = _build(stmt, table, plan)
    if len(_POINT_PLANS) >= _LIMIT:
        _POINT_PLANS.clear()
    _POINT_PLANS[id(plan)] = (plan, point)
    return point


def _build(stmt: ast.SelectStatement, table: TableDef, plan: SelectPlan) -> PointPlan | None:
    qualifies = (
        plan.point_key is not None
        and not table.clustering_key
        and not plan.aggregate
        and not stmt.json
        and not stmt.distinct
        and not stmt.order_by
        and stmt.limit is None
        and stmt.per_partition_limit is None
    )
    if not qualifies:
        return None
    key_index = {col.name: i for i, col in enumerate(table.partition_key)}
    recipe: list[int | str] = []
    for output, stored in zip(plan.outputs, plan.stored):
        col = table.column(output.column) if output.kind == "column" and output.column else None
        if stored and col is not None:
            recipe.append(col.name)
        elif (
            col is not None
            and col.name in key_index
            and isinstance(col.type, NativeType)
            and col.type.name in PASS_THROUGH
        ):
            recipe.append(key_index[col.name])
        else:
            return PointPlan(plan, None)
    return PointPlan(plan, tuple(recipe))


def point_select(select: BoundSelect, reads: ReadCoordinator, cl: int, now: int) -> RowsResult | None:
    """The result of a qualifying point read answered locally; None: use the general path."""
    table = select.table
    point = point_plan(select.statement, table, select.routines)
    if point is None or cl == ANY:
        return None
    plan = point.plan
    assert plan.point_key is not None
    values = select.key_components(plan.point_key)
    key, token = partition_key(table, [values[i] for i in plan.point_order])
    if not reads.reads_locally(table, token, cl):
        return None
    try:
        return _read_point(select, point, reads, key, token, now)
    except (TabletCorrupt, TabletUnavailable):  # damaged or being repaired: the general path skips it
        return None


def _read_point(
    select: BoundSelect, point: PointPlan, reads: ReadCoordinator, key: bytes, token: int, now: int
) -> RowsResult:
    table, plan = select.table, point.plan
    local = reads.replicas.local
    recipe = point.recipe
    if recipe is not None:
        cells = local.read_row_cells(table, key, token, now)
        if cells is None:
            return RowsResult(plan.metadata.with_paging_state(None), [])
        if isinstance(cells, dict):
            components = split_key(table, key) if len(table.partition_key) > 1 else [key]
            row = [components[part] if isinstance(part, int) else cells.get(part) for part in recipe]
            return RowsResult(plan.metadata.with_paging_state(None), [row])
    data = local.read_partition(table, key, token, now)  # outputs to decode, or not a simple partition
    if data is None:
        return RowsResult(plan.metadata.with_paging_state(None), [])
    rows = list(partition_rows(table, data, None, static_only_row=True))
    return RowsResult(plan.metadata.with_paging_state(None), encode_rows(plan, rows))
