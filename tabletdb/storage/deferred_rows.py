"""Rows a tablet store holds in memory until it writes them in one larger transaction.

SQLite's cost per upserted write falls steeply with the size of the transaction and of each
``executemany``: on this machine ~45 µs for a write committed alone, ~21 µs in batches of 64,
~11 µs in batches of 1,024 (docs/benchmarks.md, perf7). The node-wide commit log
(``node_commit``) already makes a write durable before its store sees it, so the store need not
write it at once: it keeps the rows here and writes them together later. Reads stay exact
because the store writes these rows first whenever a read could see them: a read of one
partition when that partition has rows here (``keys``), any wider read always.

The rows are kept as the five flat parameter lists a ``BatchRows`` has, ready for
``executemany`` without a merge, and without a container per writer for the garbage collector to
walk while they wait. Where each writer's rows end is kept too, so when a merged write fails the
store can tell a bad writer from a bad disk (``TabletStore.write_deferred``).
"""

from __future__ import annotations

from typing import Any

from tabletdb.storage.batch_rows import BatchRows


class DeferredRows:
    """The writers' rows not yet written to the file, and the partition keys they touch."""

    __slots__ = ("_ends", "_parts", "count", "keys", "size")

    def __init__(self) -> None:
        self._parts: BatchRows = ([], [], [], [], [])
        self._ends: list[tuple[int, int, int, int, int]] = []
        """Per writer, the length of each part once its rows were added."""
        self.keys: set[bytes] = set()
        """Partition keys with rows here: a read of any other partition need not wait for them."""
        self.count = 0
        """Partition entries held (one per mutation)."""
        self.size = 0
        """Estimated bytes of memory held (what the node's budget counts)."""

    def add(self, rows: BatchRows, size: int = 0) -> None:
        """Keep ``rows`` (estimated at ``size`` bytes)."""
        partitions, row_markers, cells, collection_tombstones, range_tombstones = self._parts
        new_partitions: list[Any] = rows[0]
        partitions.extend(new_partitions)
        row_markers.extend(rows[1])
        cells.extend(rows[2])
        if rows[3]:
            collection_tombstones.extend(rows[3])
        if rows[4]:
            range_tombstones.extend(rows[4])
        self._ends.append(
            (len(partitions), len(row_markers), len(cells), len(collection_tombstones), len(range_tombstones))
        )
        self.keys.update(p[0] for p in new_partitions)
        self.count += len(new_partitions)
        self.size += size

    @property
    def merged(self) -> BatchRows:
        """Everything held, as one batch (every upsert is last-write-wins, so order is free)."""
        return self._parts

    def writers(self) -> list[BatchRows]:
        """Everything held, one batch per writer, in the order they came."""
        out: list[BatchRows] = []
        start = (0, 0, 0, 0, 0)
        for end in self._ends:
            out.append(tuple(part[s:e] for part, s, e in zip(self._parts, start, end)))
            start = end
        return out

    def clear(self) -> None:
        self._parts = ([], [], [], [], [])
        self._ends = []
        self.keys = set()
        self.count = 0
        self.size = 0

    def __bool__(self) -> bool:
        return bool(self._ends)
