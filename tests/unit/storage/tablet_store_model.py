"""A tiny in-memory model of TabletStore semantics, written independently of the SQL store.

It keeps the winning version of everything in dicts and evaluates liveness by brute force, so a
disagreement with TabletStore points at a bug in one of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabletdb.dht import TokenRange
from tabletdb.storage.mutation import Cell, ClusteringSlice, Mutation, RowMarker
from tabletdb.storage.reconcile import LiveCell, LiveRow, PartitionData


def newer_cell(a: Cell, b: Cell) -> bool:
    """True if ``a`` beats ``b``: timestamp, tombstone over live, value bytes, expiry, smaller ttl."""
    if a.timestamp != b.timestamp:
        return a.timestamp > b.timestamp
    if (a.value is None) != (b.value is None):
        return a.value is None
    if (a.value or b"") != (b.value or b""):
        return (a.value or b"") > (b.value or b"")
    if a.expiry != b.expiry:
        return a.expiry > b.expiry
    return a.ttl < b.ttl


def newer_marker(a: RowMarker, b: RowMarker) -> bool:
    if a.timestamp != b.timestamp:
        return a.timestamp > b.timestamp
    if a.expiry != b.expiry:
        return a.expiry > b.expiry
    return a.ttl < b.ttl


def later(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass
class ModelRow:
    marker: RowMarker | None = None
    tombstone: int | None = None
    cells: dict[tuple[str, bytes], Cell] = field(default_factory=dict)
    collection_tombstones: dict[str, int] = field(default_factory=dict)


@dataclass
class ModelPartition:
    token: int
    tombstone: int | None = None
    rows: dict[tuple[bool, bytes], ModelRow] = field(default_factory=dict)
    range_tombstones: list[tuple[ClusteringSlice, int]] = field(default_factory=list)


class ModelStore:
    def __init__(self) -> None:
        self.partitions: dict[bytes, ModelPartition] = {}

    def apply(self, mutations: list[Mutation]) -> None:
        for m in mutations:
            part = self.partitions.setdefault(m.partition_key, ModelPartition(m.token))
            part.tombstone = later(part.tombstone, m.partition_tombstone)
            for rw in m.rows:
                row = part.rows.setdefault((rw.static, rw.clustering), ModelRow())
                if rw.marker is not None and (row.marker is None or newer_marker(rw.marker, row.marker)):
                    row.marker = rw.marker
                row.tombstone = later(row.tombstone, rw.tombstone)
                for c in rw.cells:
                    old = row.cells.get((c.column, c.path))
                    if old is None or newer_cell(c, old):
                        row.cells[(c.column, c.path)] = c
                for col, ts in rw.collection_tombstones:
                    row.collection_tombstones[col] = max(ts, row.collection_tombstones.get(col, ts))
            part.range_tombstones.extend((rt.clustering, rt.timestamp) for rt in m.range_tombstones)

    def _live_row(
        self, part: ModelPartition, static: bool, ck: bytes, row: ModelRow, now: int
    ) -> LiveRow | None:
        deleted = part.tombstone
        if not static:
            deleted = later(deleted, row.tombstone)
            for slice_, ts in part.range_tombstones:
                if slice_.contains(ck):
                    deleted = later(deleted, ts)

        def alive(ts: int, expiry: int, also: int | None = None) -> bool:
            d = later(deleted, also)
            return (d is None or ts > d) and (expiry == 0 or expiry > now)

        cells = tuple(
            LiveCell(c.column, c.path, c.value, c.timestamp, c.expiry - now if c.ttl else None)
            for (col, _path), c in sorted(row.cells.items())
            if c.value is not None and alive(c.timestamp, c.expiry, row.collection_tombstones.get(col))
        )
        marker = None
        if not static and row.marker is not None and alive(row.marker.timestamp, row.marker.expiry):
            marker = (row.marker.timestamp, row.marker.expiry - now if row.marker.ttl else None)
        if marker is None and not cells:
            return None
        return LiveRow(ck, static, marker, cells)

    def read_partition(
        self,
        pk: bytes,
        now: int,
        slice_: ClusteringSlice,
        reverse: bool = False,
        limit: int | None = None,
        include_static: bool = True,
    ) -> PartitionData | None:
        part = self.partitions.get(pk)
        if part is None:
            return None
        static = None
        if include_static and (True, b"") in part.rows:
            static = self._live_row(part, True, b"", part.rows[(True, b"")], now)
        keys = sorted(ck for (is_static, ck) in part.rows if not is_static and slice_.contains(ck))
        if reverse:
            keys.reverse()
        rows: list[LiveRow] = []
        for ck in keys:
            live = self._live_row(part, False, ck, part.rows[(False, ck)], now)
            if live is not None and (limit is None or len(rows) < limit):
                rows.append(live)
        if static is None and not rows:
            return None
        return PartitionData(pk, part.token, static, tuple(rows))

    def scan_all(
        self,
        token_range: TokenRange,
        now: int,
        slice_: ClusteringSlice | None = None,
        per_partition_limit: int | None = None,
    ) -> list[PartitionData]:
        keys = sorted((p.token, pk) for pk, p in self.partitions.items() if token_range.contains(p.token))
        out = []
        for _token, pk in keys:
            data = self.read_partition(pk, now, slice_ or ClusteringSlice(), limit=per_partition_limit)
            if data is not None:
                out.append(data)
        return out
