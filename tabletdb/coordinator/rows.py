"""Live rows of a user table in (token, partition key, clustering) order, resumable at a position.

Paging resumes from a position, never an offset: the token, partition key and last clustering key
returned, so rows written or deleted between pages neither repeat nor go missing elsewhere.
Partitions come from a ``PartitionSource`` (the read coordinator at the request's consistency
level), which asks the replicas of each token range and merges a replica's local stores.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tabletdb.coordinator.placement import ReplicatedRange
from tabletdb.cql import codec
from tabletdb.cql.types import ListType, MapType, SetType, UserType
from tabletdb.dht.token import MIN_TOKEN, TokenRange
from tabletdb.schema.model import TableDef
from tabletdb.statements.cells import is_multi_cell
from tabletdb.statements.keys import decode_clustering, element_of_path, partition_key, split_key
from tabletdb.statements.restrictions import Restrictions
from tabletdb.statements.udt_cells import field_index, join_fields, live_fields
from tabletdb.storage.mutation import Bound, ClusteringSlice
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tabletdb.storage.tablet_store import ScanPage, ScanPosition

SCAN_BATCH = 512
STATIC_ONLY = b""
"""Clustering position of the one row a partition with only static data yields."""


@dataclass(frozen=True)
class Position:
    token: int
    partition_key: bytes
    clustering: bytes | None
    """Last clustering key returned in that partition; None: the partition is finished."""


@dataclass
class OutRow:
    token: int
    partition_key: bytes
    clustering: bytes | None
    values: dict[str, Any]
    cells: dict[str, LiveCell]
    """The (single-cell) columns' cells, for writetime() and ttl(); a non-frozen UDT field's cell
    under ``column.field`` (``udt_cell_key``)."""
    elements: dict[str, list[LiveCell]] = field(default_factory=dict)
    """A non-frozen set's or map's element cells by column, for writetime(m[k]) and ttl(s[e])."""


def udt_cell_key(column: str, field: str) -> str:
    """Where ``OutRow.cells`` keeps a non-frozen UDT field's cell (``.`` never ends a column name
    here: every such name is ``column.field`` of a user type)."""
    return f"{column}.{field}"


def column_values(
    table: TableDef,
    row: LiveRow | None,
    values: dict[str, Any],
    cells: dict[str, LiveCell],
    elements: dict[str, list[LiveCell]] | None = None,
) -> None:
    if row is None:
        return
    by_column: dict[str, list[LiveCell]] = {}
    for cell in row.cells:
        by_column.setdefault(cell.column, []).append(cell)
    for name, live in by_column.items():
        col = table.column(name)
        if col is None:  # a dropped column's leftovers
            continue
        t = col.type
        if not is_multi_cell(t):
            values[name] = codec.deserialize(t, live[0].value)
            cells[name] = live[0]
        elif isinstance(t, SetType):
            if elements is not None:
                elements[name] = live
            values[name] = tuple(
                codec.deserialize(t.element, element_of_path(t.element, c.path)) for c in live
            )
        elif isinstance(t, MapType):
            if elements is not None:
                elements[name] = live
            values[name] = tuple(
                (
                    codec.deserialize(t.key, element_of_path(t.key, c.path)),
                    codec.deserialize(t.value, c.value),
                )
                for c in live
            )
        elif isinstance(t, ListType):
            values[name] = tuple(codec.deserialize(t.element, c.value) for c in live)
        elif isinstance(t, UserType):
            fields = live_fields(t, ((c.path, c.value, c.timestamp) for c in live))
            values[name] = None if fields is None else codec.deserialize(t, join_fields(fields))
            for c in sorted(live, key=lambda c: c.timestamp):  # a newer field cell wins
                indexes = [field_index(c.path)] if c.path else range(len(t.field_names))
                for i in indexes:
                    if 0 <= i < len(t.field_names) and fields is not None and fields[i] is not None:
                        cells[udt_cell_key(name, t.field_names[i])] = c


def partition_rows(
    table: TableDef, data: PartitionData, keep: Sequence[ClusteringSlice] | None, *, static_only_row: bool
) -> Iterator[OutRow]:
    """The CQL rows of a partition (regular rows, with the static columns copied into each)."""
    base: dict[str, Any] = {}
    for col, raw in zip(table.partition_key, split_key(table, data.partition_key)):
        base[col.name] = codec.deserialize(col.type, raw)
    static_values: dict[str, Any] = {}
    static_cells: dict[str, LiveCell] = {}
    static_elements: dict[str, list[LiveCell]] = {}
    column_values(table, data.static_row, static_values, static_cells, static_elements)
    emitted = False
    for row in data.rows:
        if keep is not None and not any(s.contains(row.clustering) for s in keep):
            continue
        values = dict(base)
        for col, ck_raw in zip(table.clustering_key, decode_clustering(table, row.clustering)):
            values[col.name] = None if ck_raw is None else codec.deserialize(col.type, ck_raw)
        values.update(static_values)
        cells = dict(static_cells)
        elements = dict(static_elements) if static_elements else {}
        column_values(table, row, values, cells, elements)
        emitted = True
        yield OutRow(data.token, data.partition_key, row.clustering, values, cells, elements)
    if not emitted and static_only_row and data.static_row is not None:
        yield OutRow(
            data.token,
            data.partition_key,
            STATIC_ONLY,
            {**base, **static_values},
            static_cells,
            static_elements,
        )


def _resume_slice(base: ClusteringSlice, after: bytes | None, reverse: bool) -> ClusteringSlice:
    if after is None or after == STATIC_ONLY:
        return base
    if reverse:
        return ClusteringSlice(
            base.start,
            Bound(after, inclusive=False) if base.end is None or after < base.end.key else base.end,
        )
    if base.start is None or after >= base.start.key:
        return ClusteringSlice(Bound(after, inclusive=False), base.end)
    return base


class PartitionSource(Protocol):
    """Where a SELECT gets partitions: the read coordinator at the request's consistency level."""

    async def read_partition(
        self, table: TableDef, key: bytes, token: int, now: int, clustering: ClusteringSlice, reverse: bool
    ) -> PartitionData | None: ...

    def ranges(self, table: TableDef) -> Sequence[ReplicatedRange]: ...

    async def scan(
        self,
        table: TableDef,
        where: ReplicatedRange,
        piece: TokenRange,
        now: int,
        limit: int,
        after: ScanPosition | None,
    ) -> ScanPage: ...


async def lookup_rows(
    table: TableDef,
    source: PartitionSource,
    r: Restrictions,
    now: int,
    after: Position | None,
    reverse: bool,
) -> AsyncGenerator[OutRow, None]:
    """Rows of the named partitions, in (token, key) order, resuming after ``after``."""
    assert r.partition_keys is not None
    keys = sorted({partition_key(table, pk) for pk in r.partition_keys}, key=lambda kt: (kt[1], kt[0]))
    slices = r.slices(table) if table.clustering_key else [ClusteringSlice()]
    if reverse:
        slices = slices[::-1]
    unrestricted = r.full_clustering == 0 and r.lower is None and r.upper is None
    for key, token in keys:
        if after is not None and (token, key) < (after.token, after.partition_key):
            continue
        resume = None
        if after is not None and (token, key) == (after.token, after.partition_key):
            if after.clustering is None or after.clustering == STATIC_ONLY:
                continue
            resume = after.clustering
        first = True
        for slice_ in slices:
            if resume is not None and _slice_done(slice_, resume, reverse):
                continue
            wanted = _resume_slice(slice_, resume, reverse)
            data = await source.read_partition(table, key, token, now, wanted, reverse)
            if data is None:
                continue
            for row in partition_rows(
                table, data, None, static_only_row=unrestricted and first and resume is None
            ):
                yield row
            first = False


def _slice_done(slice_: ClusteringSlice, resume: bytes, reverse: bool) -> bool:
    if reverse:
        return slice_.start is not None and resume <= slice_.start.key
    return slice_.end is not None and resume >= slice_.end.key


async def scan_rows(
    table: TableDef,
    source: PartitionSource,
    r: Restrictions,
    now: int,
    after: Position | None,
) -> AsyncGenerator[OutRow, None]:
    """Rows of every partition in the token restriction, resuming after ``after``.

    The ring is walked in token order, one replicated range at a time (each asked of its own
    replicas), so paging crosses nodes without the client noticing.
    """
    wanted = TokenRange(r.token_start, r.token_end) if r.token_start != r.token_end else None
    slices = r.slices(table) if table.clustering_key else []
    keep = slices if (r.lower or r.upper or r.full_clustering) else None
    unrestricted = keep is None
    for where in source.ranges(table):
        pieces = where.token_range.intersect(wanted) if wanted is not None else where.token_range.unwrap()
        for piece in pieces:
            if after is not None and piece.end < after.token:
                continue
            async for data, first in _stream(source, table, where, piece, now, after):
                for row in partition_rows(table, data, keep, static_only_row=unrestricted and first):
                    yield row


async def _stream(
    source: PartitionSource,
    table: TableDef,
    where: ReplicatedRange,
    piece: TokenRange,
    now: int,
    after: Position | None,
) -> AsyncGenerator[tuple[PartitionData, bool], None]:
    """Partitions of a range, fetched in batches; ``first`` is False for a partition's later pieces."""
    position = None
    if after is not None:
        clustering = None if after.clustering == STATIC_ONLY else after.clustering
        position = ScanPosition(after.token, after.partition_key, clustering)
    previous: tuple[int, bytes] | None = (
        (after.token, after.partition_key)
        if after is not None and after.clustering not in (None, STATIC_ONLY)
        else None
    )
    if piece.start == MIN_TOKEN and piece.end == MIN_TOKEN:
        return
    while True:
        page = await source.scan(table, where, piece, now, SCAN_BATCH, position)
        for data in page.partitions:
            key = (data.token, data.partition_key)
            yield data, key != previous
            previous = key
        if page.next_position is None:
            return
        position = page.next_position


def positions_compare(a: Position, token: int, key: bytes) -> bool:
    return (a.token, a.partition_key) < (token, key)


__all__: Sequence[str] = ["OutRow", "PartitionSource", "Position", "lookup_rows", "scan_rows"]
