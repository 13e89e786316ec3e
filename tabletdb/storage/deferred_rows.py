"""Rows a tablet store holds in memory until it writes them in one larger transaction.

SQLite's cost per upserted write falls steeply with the size of the transaction and of each
``executemany``: on this machine ~45 µs for a write committed alone, ~21 µs in batches of 64,
~11 µs in batches of 1,024 (docs/benchmarks.md, perf7). The node-wide commit log
(``node_commit``) already makes a write durable before its store sees it, so the store need not
write it at once: it keeps the rows here and writes them together later. Reads stay exact
because the store writes these rows first whenever a read could see them: a read of one
partition when that partition has rows here (``keys``), any wider read always.

Each writer's rows stay a separate ``BatchRows``, so when a merged write fails the store can
tell a bad writer from a bad disk (``TabletStore.write_deferred``).
"""

from __future__ import annotations

from typing import Any

from tabletdb.storage.batch_rows import BatchRows, merge_rows


class DeferredRows:
    """The writers' rows not yet written to the file, and the partition keys they touch."""

    __slots__ = ("count", "keys", "writers")

    def __init__(self) -> None:
        self.writers: list[BatchRows] = []
        self.keys: set[bytes] = set()
        """Partition keys with rows here: a read of any other partition need not wait for them."""
        self.count = 0
        """Partition entries held (one per mutation): what a node's budget counts."""

    def add(self, rows: BatchRows) -> None:
        partitions: list[Any] = rows[0]
        self.writers.append(rows)
        self.keys.update(p[0] for p in partitions)
        self.count += len(partitions)

    def take(self) -> list[BatchRows]:
        """Everything held, leaving this empty."""
        writers = self.writers
        self.writers, self.keys, self.count = [], set(), 0
        return writers

    def merged(self) -> BatchRows:
        return merge_rows(self.writers)

    def __bool__(self) -> bool:
        return bool(self.writers)
