"""Turning stored versions of one partition into its live content.

Rows and cells are streamed from two cursors in the same clustering order and merged here, so a
read with a limit stops as soon as it has enough live rows instead of loading the partition.
Liveness is decided in Python because it depends on ``now`` (TTL) and on tombstones stored apart
from the data they shadow (partition, row, range and collection tombstones).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator

from tabletdb.storage.mutation import Bound, ClusteringSlice
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


def slice_condition(slice_: ClusteringSlice) -> tuple[str, list[object]]:
    """SQL condition on ``ck`` selecting the slice, and its parameters."""
    parts: list[str] = []
    params: list[object] = []
    if slice_.start is not None:
        parts.append("ck >= ?" if slice_.start.inclusive else "ck > ?")
        params.append(slice_.start.key)
    if slice_.end is not None:
        parts.append("ck <= ?" if slice_.end.inclusive else "ck < ?")
        params.append(slice_.end.key)
    return (" AND ".join(parts) or "1"), params


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
            regular = self._regular_rows(slice_, reverse)
            for row in regular:
                rows.append(row)
                if limit is not None and len(rows) >= limit:
                    break
            regular.close()
        if static_row is None and not rows:
            return None
        return PartitionData(self.pk, self.token, static_row, tuple(rows))

    def _static_row(self) -> LiveRow | None:
        cells = self.conn.execute(
            "SELECT ck, col, path, ts, dead, value, expiry, ttl FROM cells "
            "WHERE pk = ? AND kind = ? ORDER BY col, path",
            (self.pk, STATIC_KIND),
        ).fetchall()
        collection_tombs = self._collection_tombstones(STATIC_KIND, "1", [])
        live = self._live_cells(cells, self.partition_tombstone, collection_tombs.get(b"", {}))
        return LiveRow(b"", True, None, live) if live else None

    def _collection_tombstones(
        self, kind: int, condition: str, params: list[object]
    ) -> dict[bytes, dict[str, int]]:
        out: dict[bytes, dict[str, int]] = {}
        if not self.flags & HAS_COLLECTION_TOMBSTONES:
            return out
        for ck, col, ts in self.conn.execute(
            f"SELECT ck, col, ts FROM collection_tombstones WHERE pk = ? AND kind = ? AND {condition}",
            [self.pk, kind, *params],
        ):
            out.setdefault(ck, {})[col] = ts
        return out

    def _regular_rows(self, slice_: ClusteringSlice, reverse: bool) -> Generator[LiveRow, None, None]:
        condition, params = slice_condition(slice_)
        order = "DESC" if reverse else "ASC"
        collection_tombs = self._collection_tombstones(REGULAR_KIND, condition, params)
        row_cursor = self.conn.execute(
            f"SELECT ck, marker_ts, marker_ttl, marker_expiry, tombstone FROM rows "
            f"WHERE pk = ? AND kind = ? AND {condition} ORDER BY ck {order}",
            [self.pk, REGULAR_KIND, *params],
        )
        cell_cursor = self.conn.execute(
            f"SELECT ck, col, path, ts, dead, value, expiry, ttl FROM cells "
            f"WHERE pk = ? AND kind = ? AND {condition} ORDER BY ck {order}, col, path",
            [self.pk, REGULAR_KIND, *params],
        )
        try:
            pending: _CellRow | None = cell_cursor.fetchone()
            for ck, marker_ts, marker_ttl, marker_expiry, row_tombstone in row_cursor:
                cells: list[_CellRow] = []
                # skip cells of keys that precede this row in iteration order (none if the invariant
                # "every cell has a row entry" holds), then take this row's cells
                while pending is not None and (pending[0] > ck if reverse else pending[0] < ck):
                    pending = cell_cursor.fetchone()
                while pending is not None and pending[0] == ck:
                    cells.append(pending)
                    pending = cell_cursor.fetchone()
                deleted_at = max_timestamp(
                    max_timestamp(self.partition_tombstone, row_tombstone), self._range_deletion(ck)
                )
                live_cells = self._live_cells(cells, deleted_at, collection_tombs.get(ck, {}))
                marker = None
                if marker_ts is not None and is_live(True, marker_ts, marker_expiry, deleted_at, self.now):
                    marker = (marker_ts, remaining_ttl(marker_expiry, self.now) if marker_ttl else None)
                if marker is not None or live_cells:
                    yield LiveRow(ck, False, marker, live_cells)
        finally:
            # an unfinished statement would pin the connection's read snapshot (a reader stopped
            # early by a limit): close both so the next read sees every commit since
            row_cursor.close()
            cell_cursor.close()

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
