"""Turning stored versions of one partition into its live content.

Rows and cells are streamed from two cursors in the same clustering order and merged here, so a
read with a limit stops as soon as it has enough live rows instead of loading the partition.
Liveness is decided in Python because it depends on ``now`` (TTL) and on tombstones stored apart
from the data they shadow (partition, row, range and collection tombstones).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Generator, Iterable
from typing import Any

from tabletdb.storage.mutation import FULL_SLICE, Bound, ClusteringSlice
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData, is_live, max_timestamp, remaining_ttl
from tabletdb.storage.sqlite_schema import (
    BOUND_EXCLUSIVE,
    BOUND_INCLUSIVE,
    BOUND_OPEN,
    HAS_COLLECTION_TOMBSTONES,
    HAS_RANGE_TOMBSTONES,
    HAS_STATIC,
    REGULAR_KIND,
    STATIC_KIND,
)

_CellRow = tuple[bytes, str, bytes, int, int, bytes, int, int]


def bound_from_columns(kind: int, key: bytes) -> Bound | None:
    if kind == BOUND_OPEN:
        return None
    return Bound(key, inclusive=kind == BOUND_INCLUSIVE)


def bound_to_columns(bound: Bound | None) -> tuple[int, bytes]:
    if bound is None:
        return BOUND_OPEN, b""
    return (BOUND_INCLUSIVE if bound.inclusive else BOUND_EXCLUSIVE), bound.key


def slice_condition(slice_: ClusteringSlice, column: str = "ck") -> tuple[str, list[object]]:
    """SQL condition on ``column`` (a clustering key) selecting the slice, and its parameters."""
    parts: list[str] = []
    params: list[object] = []
    if slice_.start is not None:
        parts.append(f"{column} >= ?" if slice_.start.inclusive else f"{column} > ?")
        params.append(slice_.start.key)
    if slice_.end is not None:
        parts.append(f"{column} <= ?" if slice_.end.inclusive else f"{column} < ?")
        params.append(slice_.end.key)
    return (" AND ".join(parts) or "1"), params


_ROWS_WITH_CELLS = (
    "SELECT r.ck, c.col, c.path, c.ts, c.dead, c.value, c.expiry, c.ttl,"
    " r.marker_ts, r.marker_ttl, r.marker_expiry, r.tombstone"
    " FROM rows r LEFT JOIN cells c ON c.pk = r.pk AND c.kind = r.kind AND c.ck = r.ck"
    " WHERE r.pk = ? AND r.kind = ? AND {condition} ORDER BY r.ck {order}, c.col, c.path"
)
"""Each row of the slice with its cells (one result row per cell; a row without cells comes once
with NULL cell columns). One statement instead of a row cursor and a cell cursor merged in
Python: a point read is three statements -> two. A cell without a row entry (the invariant says
there is none) is left out, as the two-cursor merge skipped it. The first eight columns are a
``_CellRow``."""
_rows_sql: dict[tuple[str, bool], str] = {}

_PARTITION_WITH_ROWS = (
    "SELECT p.token, p.tombstone, p.flags, r.ck, c.col, c.path, c.ts, c.dead, c.value, c.expiry, c.ttl,"
    " r.marker_ts, r.marker_ttl, r.marker_expiry, r.tombstone"
    " FROM partitions p LEFT JOIN rows r ON r.pk = p.pk AND r.kind = ? AND {condition}"
    " LEFT JOIN cells c ON c.pk = r.pk AND c.kind = r.kind AND c.ck = r.ck"
    " WHERE p.pk = ? ORDER BY r.ck {order}, c.col, c.path"
)
"""A point read in one statement: the partition's own columns, then ``_ROWS_WITH_CELLS``'s
layout (NULL when the partition has no row in the slice). Good only for partitions without
static rows and range or collection tombstones (``flags`` 0), which need reads of their own
first; the flags arrive with the first result row, and a partition that has any falls back to
``PartitionReader.read``."""
_partition_sql: dict[tuple[str, bool], str] = {}
SIMPLE_FLAGS = HAS_STATIC | HAS_RANGE_TOMBSTONES | HAS_COLLECTION_TOMBSTONES
"""Flags that rule the one-statement read out."""


def read_simple_partition(
    conn: sqlite3.Connection,
    pk: bytes,
    now: int,
    slice_: ClusteringSlice,
    *,
    reverse: bool,
    limit: int | None,
    include_static: bool,
) -> PartitionData | None:
    """``PartitionReader(...).read(...)`` for one partition key, with the partition lookup and
    its rows in one statement when the partition allows it (the common point read)."""
    condition, params = slice_condition(slice_, "r.ck")
    sql = _partition_sql.get((condition, reverse))
    if sql is None:
        sql = _partition_sql[condition, reverse] = _PARTITION_WITH_ROWS.format(
            condition=condition, order="DESC" if reverse else "ASC"
        )
    cursor = conn.execute(sql, [REGULAR_KIND, *params, pk])
    try:
        first = cursor.fetchone()
        if first is None:
            return None
        reader = PartitionReader(conn, pk, first[0], first[1], first[2], now)
        if first[2] & SIMPLE_FLAGS:
            cursor.close()
            return reader.read(slice_, reverse=reverse, limit=limit, include_static=include_static)
        rows: list[LiveRow] = []
        if first[3] is not None and (limit is None or limit > 0):
            results = itertools.chain((first,), cursor)
            regular = reader.rows_of((result[3:] for result in results), {})
            for row in regular:
                rows.append(row)
                if limit is not None and len(rows) >= limit:
                    break
            regular.close()
        return PartitionData(pk, reader.token, None, tuple(rows)) if rows else None
    finally:
        cursor.close()


NOT_SIMPLE = object()
"""``read_row_cells``: the partition needs the general read (``read_simple_partition``)."""


def read_row_cells(conn: sqlite3.Connection, pk: bytes, now: int) -> dict[str, bytes] | object | None:
    """The live single-cell values of a partition's one row, by column, for a table without
    clustering columns (the direct point read): what ``read_simple_partition`` would return for
    it, without building rows and cells. None: no live row. ``NOT_SIMPLE``: the partition has
    static, range or collection tombstone data, or more than one row - read it the general way.
    A live row whose only live cells are collection elements maps to an empty dict."""
    sql = _partition_sql.get(("1", False))
    if sql is None:
        sql = _partition_sql["1", False] = _PARTITION_WITH_ROWS.format(condition="1", order="ASC")
    results = conn.execute(sql, [REGULAR_KIND, pk]).fetchall()
    if not results:
        return None
    first = results[0]
    if first[2] & SIMPLE_FLAGS:
        return NOT_SIMPLE
    ck = first[3]
    if ck is None:
        return None
    deleted_at = max_timestamp(first[1], first[14])
    live = first[11] is not None and is_live(True, first[11], first[13], deleted_at, now)
    cells: dict[str, bytes] = {}
    for _, _, _, row_ck, col, path, ts, dead, value, expiry, *_ in results:
        if row_ck != ck:
            return NOT_SIMPLE
        if col is not None and is_live(not dead, ts, expiry, deleted_at, now):
            live = True
            if path == b"":
                cells[col] = value
    return cells if live else None


class PartitionReader:
    """Reads the live content of one partition at time ``now``."""

    def __init__(
        self, conn: sqlite3.Connection, pk: bytes, token: int, tombstone: int | None, flags: int, now: int
    ) -> None:
        self.conn = conn
        self.pk = pk
        self.token = token
        self.partition_tombstone = tombstone
        self.flags = flags
        self.now = now
        self.range_tombstones: list[tuple[ClusteringSlice, int]] = []
        if flags & HAS_RANGE_TOMBSTONES:
            self.range_tombstones = [
                (ClusteringSlice(bound_from_columns(sk, s), bound_from_columns(ek, e)), ts)
                for sk, s, ek, e, ts in conn.execute(
                    "SELECT start_kind, start, end_kind, end, ts FROM range_tombstones WHERE pk = ?", (pk,)
                )
            ]

    def read(
        self, slice_: ClusteringSlice, *, reverse: bool, limit: int | None, include_static: bool
    ) -> PartitionData | None:
        static_row = self._static_row() if include_static and self.flags & HAS_STATIC else None
        rows: list[LiveRow] = []
        if limit is None or limit > 0:
            regular = self.regular_rows(slice_, reverse)
            for row in regular:
                rows.append(row)
                if limit is not None and len(rows) >= limit:
                    break
            regular.close()
        if static_row is None and not rows:
            return None
        return PartitionData(self.pk, self.token, static_row, tuple(rows))

    def count(self) -> int:
        """CQL rows of the whole partition as a full scan counts them: its live regular rows, or
        1 when only its static row is live (``PartitionData.row_count``)."""
        live = sum(1 for _ in self.regular_rows(FULL_SLICE, False))
        if live == 0 and self.flags & HAS_STATIC and self._static_row() is not None:
            return 1
        return live

    def _static_row(self) -> LiveRow | None:
        # tombstones before the cells they shadow: see ``stored_mutations.mutations_for_partition``
        collection_tombs = self._collection_tombstones(STATIC_KIND, FULL_SLICE)
        cells = self.conn.execute(
            "SELECT ck, col, path, ts, dead, value, expiry, ttl FROM cells "
            "WHERE pk = ? AND kind = ? ORDER BY col, path",
            (self.pk, STATIC_KIND),
        ).fetchall()
        live = self._live_cells(cells, self.partition_tombstone, collection_tombs.get(b"", {}))
        return LiveRow(b"", True, None, live) if live else None

    def _collection_tombstones(self, kind: int, slice_: ClusteringSlice) -> dict[bytes, dict[str, int]]:
        out: dict[bytes, dict[str, int]] = {}
        if not self.flags & HAS_COLLECTION_TOMBSTONES:
            return out
        condition, params = slice_condition(slice_)
        for ck, col, ts in self.conn.execute(
            f"SELECT ck, col, ts FROM collection_tombstones WHERE pk = ? AND kind = ? AND {condition}",
            [self.pk, kind, *params],
        ):
            out.setdefault(ck, {})[col] = ts
        return out

    def regular_rows(self, slice_: ClusteringSlice, reverse: bool) -> Generator[LiveRow, None, None]:
        collection_tombs = self._collection_tombstones(REGULAR_KIND, slice_)
        condition, params = slice_condition(slice_, "r.ck")
        sql = _rows_sql.get((condition, reverse))
        if sql is None:
            sql = _rows_sql[condition, reverse] = _ROWS_WITH_CELLS.format(
                condition=condition, order="DESC" if reverse else "ASC"
            )
        cursor = self.conn.execute(sql, [self.pk, REGULAR_KIND, *params])
        try:
            yield from self.rows_of(cursor, collection_tombs)
        finally:
            # an unfinished statement would pin the connection's read snapshot (a reader stopped
            # early by a limit): close it so the next read sees every commit since
            cursor.close()

    def rows_of(
        self, results: Iterable[tuple[Any, ...]], collection_tombs: dict[bytes, dict[str, int]]
    ) -> Generator[LiveRow, None, None]:
        """Live rows from results in ``_ROWS_WITH_CELLS``'s layout (one per cell, grouped by row)."""
        row: tuple[Any, ...] | None = None
        cells: list[_CellRow] = []
        for result in results:
            if row is None or result[0] != row[0]:
                if row is not None:
                    live = self._live_row(row, cells, collection_tombs)
                    if live is not None:
                        yield live
                row, cells = result, []
            if result[1] is not None:
                cells.append(result[:8])
        if row is not None:
            live = self._live_row(row, cells, collection_tombs)
            if live is not None:
                yield live

    def _live_row(
        self, row: tuple[Any, ...], cells: list[_CellRow], collection_tombs: dict[bytes, dict[str, int]]
    ) -> LiveRow | None:
        """The live part of a joined result row (clustering key first, row columns last)."""
        ck, marker_ts, marker_ttl, marker_expiry, row_tombstone = row[0], row[8], row[9], row[10], row[11]
        deleted_at = max_timestamp(self.partition_tombstone, row_tombstone)
        if self.range_tombstones:
            deleted_at = max_timestamp(deleted_at, self._range_deletion(ck))
        live_cells = self._live_cells(cells, deleted_at, collection_tombs.get(ck, {}))
        marker = None
        if marker_ts is not None and is_live(True, marker_ts, marker_expiry, deleted_at, self.now):
            marker = (marker_ts, remaining_ttl(marker_expiry, self.now) if marker_ttl else None)
        if marker is None and not live_cells:
            return None
        return LiveRow(ck, False, marker, live_cells)

    def _range_deletion(self, ck: bytes) -> int | None:
        deleted_at: int | None = None
        for slice_, ts in self.range_tombstones:
            if slice_.contains(ck):
                deleted_at = max_timestamp(deleted_at, ts)
        return deleted_at

    def _live_cells(
        self, cells: list[_CellRow], deleted_at: int | None, collection_tombs: dict[str, int]
    ) -> tuple[LiveCell, ...]:
        live: list[LiveCell] = []
        for _ck, col, path, ts, dead, value, expiry, ttl in cells:
            cell_deleted_at = max_timestamp(deleted_at, collection_tombs.get(col))
            if is_live(not dead, ts, expiry, cell_deleted_at, self.now):
                live.append(LiveCell(col, path, value, ts, remaining_ttl(expiry, self.now) if ttl else None))
        return tuple(live)
