"""Live rows of a user table in (token, partition key, clustering) order, resumable at a position.

Paging resumes from a position, never an offset: the token, partition key and last clustering key
returned, so rows written or deleted between pages neither repeat nor go missing elsewhere.
Vnode tables keep one store per shard; their partitions interleave in token order, so the
stores are merged.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.types import ListType, MapType, SetType
from tabletdb.dht.token import MIN_TOKEN, TokenRange
from tabletdb.query.read_restrictions import Restrictions
from tabletdb.query.write_cells import is_multi_cell
from tabletdb.query.write_keys import decode_clustering, element_of_path, partition_key, split_key
from tabletdb.query.write_stores import DataStores, Segment
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import Bound, ClusteringSlice
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData
from tabletdb.storage.tablet_store import ScanPosition, TabletStore

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
    """The (single-cell) columns' cells, for writetime() and ttl()."""


def column_values(
    table: TableDef, row: LiveRow | None, values: dict[str, Any], cells: dict[str, LiveCell]
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
            values[name] = tuple(
                codec.deserialize(t.element, element_of_path(t.element, c.path)) for c in live
            )
        elif isinstance(t, MapType):
            values[name] = tuple(
                (
                    codec.deserialize(t.key, element_of_path(t.key, c.path)),
                    codec.deserialize(t.value, c.value),
                )
                for c in live
            )
        elif isinstance(t, ListType):
            values[name] = tuple(codec.deserialize(t.element, c.value) for c in live)


def partition_rows(
    table: TableDef, data: PartitionData, keep: Sequence[ClusteringSlice] | None, *, static_only_row: bool
) -> Iterator[OutRow]:
    """The CQL rows of a partition (regular rows, with the static columns copied into each)."""
    base: dict[str, Any] = {}
    for col, raw in zip(table.partition_key, split_key(table, data.partition_key)):
        base[col.name] = codec.deserialize(col.type, raw)
    static_values: dict[str, Any] = {}
    static_cells: dict[str, LiveCell] = {}
    column_values(table, data.static_row, static_values, static_cells)
    emitted = False
    for row in data.rows:
        if keep is not None and not any(s.contains(row.clustering) for s in keep):
            continue
        values = dict(base)
        for col, ck_raw in zip(table.clustering_key, decode_clustering(table, row.clustering)):
            values[col.name] = None if ck_raw is None else codec.deserialize(col.type, ck_raw)
        values.update(static_values)
        cells = dict(static_cells)
        column_values(table, row, values, cells)
        emitted = True
        yield OutRow(data.token, data.partition_key, row.clustering, values, cells)
    if not emitted and static_only_row and data.static_row is not None:
        yield OutRow(data.token, data.partition_key, STATIC_ONLY, {**base, **static_values}, static_cells)


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


def lookup_rows(
    table: TableDef,
    stores: DataStores,
    r: Restrictions,
    now: int,
    after: Position | None,
    reverse: bool,
) -> Iterator[OutRow]:
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
        store = stores.store(table, token)
        first = True
        for slice_ in slices:
            if resume is not None and _slice_done(slice_, resume, reverse):
                continue
            data = store.read_partition(key, now, _resume_slice(slice_, resume, reverse), reverse=reverse)
            if data is None:
                continue
            yield from partition_rows(
                table, data, None, static_only_row=unrestricted and first and resume is None
            )
            first = False


def _slice_done(slice_: ClusteringSlice, resume: bytes, reverse: bool) -> bool:
    if reverse:
        return slice_.start is not None and resume <= slice_.start.key
    return slice_.end is not None and resume >= slice_.end.key


def scan_rows(
    table: TableDef,
    stores: DataStores,
    r: Restrictions,
    now: int,
    after: Position | None,
) -> Iterator[OutRow]:
    """Rows of every partition in the token restriction, resuming after ``after``."""
    wanted = TokenRange(r.token_start, r.token_end) if r.token_start != r.token_end else None
    slices = r.slices(table) if table.clustering_key else []
    keep = slices if (r.lower or r.upper or r.full_clustering) else None
    unrestricted = keep is None
    for segment in stores.segments(table):
        pieces = segment.token_range.intersect(wanted) if wanted is not None else segment.token_range.unwrap()
        for piece in pieces:
            for data, first in _merged(segment, piece, now, after):
                yield from partition_rows(table, data, keep, static_only_row=unrestricted and first)


def _merged(
    segment: Segment, piece: TokenRange, now: int, after: Position | None
) -> Iterator[tuple[PartitionData, bool]]:
    streams = [_store_stream(s, piece, now, after) for s in segment.stores]
    if len(streams) == 1:
        yield from streams[0]
        return
    yield from heapq.merge(*streams, key=lambda item: (item[0].token, item[0].partition_key))


def _store_stream(
    store: TabletStore, piece: TokenRange, now: int, after: Position | None
) -> Iterator[tuple[PartitionData, bool]]:
    """Partitions of one store, fetched in batches; ``first`` is False for a partition's later pieces."""
    position = None
    if after is not None:
        if after.clustering == STATIC_ONLY:
            position = ScanPosition(after.token, after.partition_key, None)
        else:
            position = ScanPosition(after.token, after.partition_key, after.clustering)
    previous: tuple[int, bytes] | None = (
        (after.token, after.partition_key)
        if after is not None and after.clustering not in (None, STATIC_ONLY)
        else None
    )
    if piece.start == MIN_TOKEN and piece.end == MIN_TOKEN:
        return
    while True:
        page = store.scan(piece, now, limit=SCAN_BATCH, after=position)
        for data in page.partitions:
            key = (data.token, data.partition_key)
            yield data, key != previous
            previous = key
        if page.next_position is None:
            return
        position = page.next_position


def positions_compare(a: Position, token: int, key: bytes) -> bool:
    return (a.token, a.partition_key) < (token, key)


__all__: Sequence[str] = ["OutRow", "Position", "lookup_rows", "scan_rows"]
