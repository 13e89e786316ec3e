"""The SQL parameters a batch of mutations becomes: what a tablet store upserts and what the
node-wide commit log records.

Plain values only (bytes, ints, strings, None), so the commit log can pack them as they are and a
replay can hand them back to ``TabletStore.apply_rows`` unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from tabletdb.storage.mutation import Mutation
from tabletdb.storage.read_path import bound_to_columns
from tabletdb.storage.sqlite_schema import (
    HAS_COLLECTION_TOMBSTONES,
    HAS_RANGE_TOMBSTONES,
    HAS_STATIC,
    REGULAR_KIND,
    STATIC_KIND,
    UPSERT_CELL,
    UPSERT_COLLECTION_TOMBSTONE,
    UPSERT_PARTITION,
    UPSERT_RANGE_TOMBSTONE,
    UPSERT_ROW,
)

UPSERTS = (UPSERT_PARTITION, UPSERT_ROW, UPSERT_CELL, UPSERT_COLLECTION_TOMBSTONE, UPSERT_RANGE_TOMBSTONE)


class _BatchParams:
    """SQL parameters of a batch of mutations, one list per upsert statement."""

    def __init__(self) -> None:
        self.partitions: list[tuple[object, ...]] = []
        self.rows: list[tuple[object, ...]] = []
        self.cells: list[tuple[object, ...]] = []
        self.collection_tombstones: list[tuple[object, ...]] = []
        self.range_tombstones: list[tuple[object, ...]] = []

    def add(self, m: Mutation) -> None:
        pk = m.partition_key
        flags = HAS_RANGE_TOMBSTONES if m.range_tombstones else 0
        for row in m.rows:
            kind = STATIC_KIND if row.static else REGULAR_KIND
            ck = row.clustering
            marker = row.marker
            if marker is None:
                self.rows.append((pk, kind, ck, None, 0, 0, row.tombstone))
            else:
                self.rows.append((pk, kind, ck, marker.timestamp, marker.ttl, marker.expiry, row.tombstone))
            for c in row.cells:
                dead = 1 if c.value is None else 0
                self.cells.append(
                    (pk, kind, ck, c.column, c.path, c.timestamp, dead, c.value or b"", c.expiry, c.ttl)
                )
            for column, ts in row.collection_tombstones:
                self.collection_tombstones.append((pk, kind, ck, column, ts))
            if row.static:
                flags |= HAS_STATIC
            if row.collection_tombstones:
                flags |= HAS_COLLECTION_TOMBSTONES
        for rt in m.range_tombstones:
            start_kind, start = bound_to_columns(rt.clustering.start)
            end_kind, end = bound_to_columns(rt.clustering.end)
            self.range_tombstones.append((pk, start_kind, start, end_kind, end, rt.timestamp))
        self.partitions.append((pk, m.token, m.partition_tombstone, flags))


BatchRows = tuple[list[tuple[object, ...]], ...]
"""SQL parameters of a batch, one list per upsert of ``_UPSERTS`` (partitions first): plain
values only, so a node-wide commit log can store them as they are (``node_commit``)."""


def batch_rows(mutations: Iterable[Mutation]) -> BatchRows:
    """The parameters ``TabletStore.apply_rows`` writes for ``mutations``."""
    params = _BatchParams()
    for mutation in mutations:
        params.add(mutation)
    return (
        params.partitions,
        params.rows,
        params.cells,
        params.collection_tombstones,
        params.range_tombstones,
    )
