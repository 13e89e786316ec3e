"""This replica's counts and value pages of a token range, over every local store covering it.

The replica-side half of the pushed-down ``COUNT(*)`` and of the fast full scan
(``coordinator.range_reads``): the stores answer in SQL (``storage.range_reads``) and this module
only adds up counts and merges a vnode table's shard stores, whose partitions interleave in token
order. A local and a remote coordinator get the same answer (``replica.verbs`` calls these).
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable, Iterator, Sequence

from tabletdb.cql.types import CqlType, ListType, MapType, SetType, UserType
from tabletdb.dht.token import TokenRange
from tabletdb.replica.stores import DataStores
from tabletdb.schema.model import TableDef
from tabletdb.statements.cells import is_multi_cell
from tabletdb.storage.column_reads import ColumnRead, Shape
from tabletdb.storage.range_reads import ValuesRow
from tabletdb.storage.tablet_store import ScanPosition, TabletStore

COUNT_THREADS = 4
"""Stores counted at once by one count (on worker threads)."""
STORE_PAGE = 1024
"""Rows fetched from one store per call while merging several stores."""


async def count_rows(stores: DataStores, table: TableDef, token_range: TokenRange, now: int) -> int:
    """CQL rows of ``token_range`` on this node, as a full scan of it would return them.

    Each store counts on a worker thread (SQLite releases the GIL while it steps), a few at a
    time: a count over millions of rows neither holds the event loop nor waits for one core."""
    jobs: list[tuple[Callable[[TokenRange, int], int], TokenRange]] = []
    for segment in stores.segments(table):
        for piece in segment.token_range.intersect(token_range):
            jobs += [(store.counter(), piece) for store in segment.stores]
    gate = asyncio.Semaphore(COUNT_THREADS)

    async def one(count: Callable[[TokenRange, int], int], piece: TokenRange) -> int:
        async with gate:
            return await asyncio.to_thread(count, piece, now)

    return sum(await asyncio.gather(*(one(count, piece) for count, piece in jobs)))


def live_values(
    stores: DataStores,
    table: TableDef,
    token_range: TokenRange,
    now: int,
    columns: Sequence[str],
    limit: int,
    after: ScanPosition | None,
) -> tuple[list[ValuesRow], ScanPosition | None]:
    """Up to ``limit`` live rows of ``token_range`` after ``after``, with the values of ``columns``
    (as ``column_reads`` packs them: ``shape_of`` their types), and the position to resume from
    (None: the range is exhausted here)."""
    reads = column_reads(table, columns)
    out: list[ValuesRow] = []
    for segment in stores.segments(table):
        for piece in segment.token_range.intersect(token_range):
            if after is not None and piece.end < after.token:
                continue
            wanted = limit - len(out)
            if len(segment.stores) == 1:
                rows, nxt = segment.stores[0].live_values(piece, now, reads, limit=wanted, after=after)
                out += rows
                if nxt is not None:
                    return out, nxt
                continue
            merged = heapq.merge(*(_stream(s, piece, now, reads, after) for s in segment.stores))
            for row in merged:
                out.append(row)
                if len(out) >= limit:
                    return out, ScanPosition(row[0], row[1], row[2])
    return out, None


def shape_of(t: CqlType) -> Shape:
    """How a value page returns a column of type ``t`` (``storage.column_reads``)."""
    if not is_multi_cell(t):
        return Shape.CELL
    if isinstance(t, ListType):
        return Shape.VALUES
    if isinstance(t, SetType):
        return Shape.PATHS
    if isinstance(t, MapType):
        return Shape.PAIRS
    assert isinstance(t, UserType)
    return Shape.TIMED


def column_reads(table: TableDef, columns: Sequence[str]) -> tuple[ColumnRead, ...]:
    """``columns`` of ``table`` with their shapes. A name this replica's schema does not know yet
    (a column just added elsewhere) is read as a single cell: it has no value here either way."""
    out: list[ColumnRead] = []
    for name in columns:
        col = table.column(name)
        out.append((name, Shape.CELL if col is None else shape_of(col.type)))
    return tuple(out)


def _stream(
    store: TabletStore, piece: TokenRange, now: int, columns: Sequence[ColumnRead], after: ScanPosition | None
) -> Iterator[ValuesRow]:
    position = after
    while True:
        rows, position = store.live_values(piece, now, columns, limit=STORE_PAGE, after=position)
        yield from rows
        if position is None:
            return
