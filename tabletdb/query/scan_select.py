"""Full scans and ``COUNT(*)`` without rows as Python objects (issue 19 item 5).

Two SELECT shapes that the general path (``query.select``: partitions -> rows -> dicts of
decoded values -> filter -> encode) serves at tens of microseconds per row take a shorter way
when they can:

* **Plain scan**: every output a column (no functions, aggregates, JSON, DISTINCT, ORDER BY,
  PER PARTITION LIMIT), no restriction but a token range, a table without static columns.
  Replicas return each live row as its keys and the stored bytes of the asked columns, a
  non-frozen collection's or user type's live cells packed in SQL (``storage.range_reads``:
  liveness decided in SQL); this module only splits the keys into components and sends the
  bytes, turning into CQL values only what is not one already (``query.scan_values``).
* **COUNT(*)** (``count(*)`` / ``count(1)`` outputs only, no restriction but a token range, no
  GROUP BY, no paging state): each range's replica counts in SQLite and the coordinator adds.

Both only where one replica's answer is the answer (``coordinator.range_reads``: ONE, LOCAL_ONE,
or ranges this node alone holds). At other levels a count still avoids building rows: the
replicated scan pages (digests, read repair) are counted as they come. Everything else, and
these shapes at other levels for the plain scan, return None and the general path runs. The
paging state is the general path's, so pages of one query may come from either path.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence

import msgpack

from tabletdb.coordinator.placement import ReplicatedRange
from tabletdb.coordinator.range_reads import RangeReads
from tabletdb.coordinator.rows import PartitionSource
from tabletdb.cql import codec
from tabletdb.cql.results import RowsResult
from tabletdb.dht.token import MIN_TOKEN, TokenRange
from tabletdb.query.scan_values import Encoder, encoder_of
from tabletdb.query.select import PAGING_VERSION, SelectPlan, decode_paging_state, plan_of
from tabletdb.schema.model import TableDef
from tabletdb.schema.tables import ColumnKind
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.keys import decode_clustering, split_key
from tabletdb.statements.restrictions import Restrictions
from tabletdb.storage.tablet_store import ScanPosition
from tabletdb.views.index_reads import choose_index

CHUNK = 5000
"""Rows asked of a replica per call when the page (or LIMIT) asks for more, or for everything."""
CLUSTERING_CACHE = 4096
"""Decoded clustering keys one page's row builder keeps."""
COUNTS_IN_FLIGHT = 8
"""Ranges counted at once."""


async def scan_select(
    select: BoundSelect, ranges: RangeReads, source: PartitionSource, cl: int, now: int
) -> RowsResult | None:
    """The result of a plain scan or a ``COUNT(*)`` taken the short way, or None (general path)."""
    stmt, table = select.statement, select.table
    if stmt.json or stmt.distinct or stmt.group_by or stmt.order_by:
        return None
    if select.per_partition_limit() is not None:
        return None
    plan = plan_of(stmt, table, select.routines)
    if plan.point_key is not None:
        return None
    r = select.restrictions()
    if not _whole_rows(r) or choose_index(select) is not None:
        return None
    if plan.aggregate:
        counts_rows = all(o.kind == "count" and o.column is None for o in plan.outputs)
        if select.paging_state is not None or not counts_rows:
            return None
        return await _count(select, plan, r, ranges, source, cl, now)
    if not ranges.serves(table, cl) or not _plain_outputs(plan, table):
        return None
    return await _scan(select, plan, r, ranges, cl, now)


def _whole_rows(r: Restrictions) -> bool:
    """No restriction but a token range: every row of the range, whole."""
    return (
        r.partition_keys is None
        and not r.filters
        and r.full_clustering == 0
        and r.lower is None
        and r.upper is None
        and not r.more_bounds
    )


def _plain_outputs(plan: SelectPlan, table: TableDef) -> bool:
    if table.static_columns:
        return False
    for o in plan.outputs:
        col = table.column(o.column) if o.kind == "column" and o.column is not None else None
        if col is None:
            return False
    return True


def _pieces(table: TableDef, r: Restrictions, ranges: RangeReads) -> list[tuple[ReplicatedRange, TokenRange]]:
    """(replicated range, piece) in token order, within the token restriction (``rows.scan_rows``)."""
    wanted = TokenRange(r.token_start, r.token_end) if r.token_start != r.token_end else None
    out: list[tuple[ReplicatedRange, TokenRange]] = []
    for where in ranges.ranges(table):
        pieces = where.token_range.intersect(wanted) if wanted is not None else where.token_range.unwrap()
        out += [(where, p) for p in pieces if not (p.start == MIN_TOKEN and p.end == MIN_TOKEN)]
    return out


async def _count(
    select: BoundSelect,
    plan: SelectPlan,
    r: Restrictions,
    ranges: RangeReads,
    source: PartitionSource,
    cl: int,
    now: int,
) -> RowsResult:
    table = select.table
    pieces = _pieces(table, r, ranges)
    if ranges.serves(table, cl):
        gate = asyncio.Semaphore(COUNTS_IN_FLIGHT)

        async def one(where: ReplicatedRange, piece: TokenRange) -> int:
            async with gate:
                return await ranges.count(table, where, piece, now, cl)

        total = sum(await asyncio.gather(*(one(w, p) for w, p in pieces)))
    else:
        total = 0
        for where, piece in pieces:
            total += await _count_pages(table, source, where, piece, now)
    row: list[bytes | None] = [codec.serialize(o.type, total) for o in plan.outputs]
    limit = select.limit()
    rows = [row][:limit] if limit is not None else [row]
    return RowsResult(plan.metadata.with_paging_state(None), rows)


async def _count_pages(
    table: TableDef, source: PartitionSource, where: ReplicatedRange, piece: TokenRange, now: int
) -> int:
    """Rows of ``piece`` through the replicated scan at the source's level, counted as
    ``PartitionData.row_count`` (what ``rows.partition_rows`` would yield for a whole row read)."""
    total = 0
    position: ScanPosition | None = None
    while True:
        page = await source.scan(table, where, piece, now, CHUNK, position)
        total += sum(d.row_count for d in page.partitions)
        if page.next_position is None:
            return total
        position = page.next_position


async def _scan(
    select: BoundSelect, plan: SelectPlan, r: Restrictions, ranges: RangeReads, cl: int, now: int
) -> RowsResult:
    table = select.table
    regular = (o.column for o in plan.outputs if _kind(table, o.column) is ColumnKind.REGULAR)
    columns = tuple(dict.fromkeys(c for c in regular if c is not None))
    build = _row_builder(table, plan, columns)
    after, left, _ = decode_paging_state(select.paging_state)
    limit = select.limit() if left is None else left
    page = select.page_size if select.page_size and select.page_size > 0 else None
    position = None if after is None else ScanPosition(after.token, after.partition_key, after.clustering)
    rows: list[list[bytes | None]] = []
    last: tuple[int, bytes, bytes] | None = None
    more = False
    for where, piece in _pieces(table, r, ranges):
        if position is not None and piece.end < position.token:
            continue
        at = position
        while True:
            want = min(n for n in (limit, page, CHUNK + len(rows)) if n is not None) - len(rows)
            got, at = await ranges.values(table, where, piece, now, columns, want, at, cl)
            for _token, pk, ck, values in got:
                rows.append(build(pk, ck, values))
            if got:
                last = (got[-1][0], got[-1][1], got[-1][2])
            if limit is not None and len(rows) >= limit:
                return _result(plan, rows, None)
            if page is not None and len(rows) >= page:
                more = True
                break
            if at is None:
                break
        if more:
            break
    state = None
    if more and last is not None:
        left_after = None if limit is None else limit - len(rows)
        state = msgpack.packb([PAGING_VERSION, last[0], last[1], last[2], left_after, None])
    return _result(plan, rows, state)


def _result(plan: SelectPlan, rows: list[list[bytes | None]], state: bytes | None) -> RowsResult:
    return RowsResult(plan.metadata.with_paging_state(state), rows)


def _kind(table: TableDef, name: str | None) -> ColumnKind | None:
    col = table.column(name) if name is not None else None
    return None if col is None else col.kind


def _row_builder(
    table: TableDef, plan: SelectPlan, columns: Sequence[str]
) -> Callable[[bytes, bytes, tuple[bytes | None, ...]], list[bytes | None]]:
    """A function from (partition key, clustering key, values of ``columns``) to the encoded row."""
    pk_names = [c.name for c in table.partition_key]
    ck_names = [c.name for c in table.clustering_key]
    sources: list[tuple[int, int, Encoder | None]] = []  # (0 pk / 1 ck / 2 value, index, encoder)
    for o in plan.outputs:
        col = table.column(o.column or "")
        assert col is not None
        encoder = encoder_of(col.type)
        if col.kind is ColumnKind.PARTITION_KEY:
            sources.append((0, pk_names.index(col.name), encoder))
        elif col.kind is ColumnKind.CLUSTERING:
            sources.append((1, ck_names.index(col.name), encoder))
        else:
            sources.append((2, list(columns).index(col.name), encoder))
    needs_ck = any(kind == 1 for kind, _, _ in sources)

    @functools.lru_cache(maxsize=CLUSTERING_CACHE)
    def clustering(ck: bytes) -> list[bytes | None]:
        """Clustering keys repeat across partitions (every partition's first row, time buckets):
        their components are decoded once."""
        return decode_clustering(table, ck)

    def build(pk: bytes, ck: bytes, values: tuple[bytes | None, ...]) -> list[bytes | None]:
        parts = (split_key(table, pk), clustering(ck) if needs_ck else [], values)
        out: list[bytes | None] = []
        for kind, index, encoder in sources:
            raw = parts[kind][index]
            out.append(raw if encoder is None else encoder(raw))
        return out

    return build
