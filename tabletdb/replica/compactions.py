"""Compacting and flushing this node's tablet files while the node serves (the I/O half of
``replica.compaction_policy``).

A compaction writes the store's deferred rows on the loop, then drops what it may on a worker
thread, a chunk of partitions per transaction (``TabletStore.compact_written``), so writes and
reads wait at most for one chunk. With garbage collection (a tombstone GC horizon) the store is
first settled (``StorageService.settle_before_gc``: deferred rows written, file synced, its
removal logged in the commit log) so that a replay after a crash never puts rows older than a
dropped tombstone back; that needs a moment with no write to the file in flight, which is
awaited briefly (``SETTLE_WAIT_S``) and otherwise reported as ``busy``.

Files of a table being split or merged, and of a tablet migrating (between nodes or shards),
are left alone (``skipped``): their data is being copied to other files, and compaction is
cheap to run again once the move is done.

A flush (``nodetool flush``) writes the stores' deferred rows into their files, syncs them and
folds each file's write-ahead log into it (``TabletStore.checkpoint``).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tabletdb.replica.compaction_policy import gc_before_ts
from tabletdb.replica.storage_service import LocalFile, StorageService
from tabletdb.schema.model import TableDef
from tabletdb.storage.compaction import Garbage
from tabletdb.storage.tablet_store import StorageError, TabletStore
from tabletdb.tablets.count import ResizeState

log = logging.getLogger(__name__)

SETTLE_WAIT_S = 5.0
"""How long a compaction with GC waits for a moment with no write in flight to its file."""


class Outcome(enum.Enum):
    COMPACTED = "compacted"
    MISSING = "missing"
    """No file: the tablet was never written here."""
    SKIPPED = "skipped"
    """Its table is being resized or the tablet is migrating, or the file awaits repair."""
    BUSY = "busy"
    """Writes to it never paused for ``SETTLE_WAIT_S``."""
    GONE = "gone"
    """The file was closed under the compaction (moved away, dropped, set aside)."""


@dataclass(frozen=True, slots=True)
class FileCompaction:
    path: Path
    outcome: Outcome
    after: Garbage | None = None
    """Measured right after compacting (None unless compacted)."""


def movable(storage: StorageService, table: TableDef, local: LocalFile) -> bool:
    """Whether the file may be compacted now (see the module docstring)."""
    tablet_map = storage.tablet_maps().get(table.id)
    if tablet_map is None or local.tablet_id is None:
        return True
    if tablet_map.resize is not ResizeState.NONE or local.tablet_id >= tablet_map.tablet_count:
        return False
    return not tablet_map.tablets[local.tablet_id].in_transition


async def compact_file(
    storage: StorageService, table: TableDef, local: LocalFile, now_s: float | None = None
) -> FileCompaction:
    """Compact one of this node's files of ``table`` (see the module docstring)."""
    now_s = time.time() if now_s is None else now_s
    path = local.path
    if not path.exists():
        return FileCompaction(path, Outcome.MISSING)
    if not movable(storage, table, local) or path in storage.unrepaired():
        return FileCompaction(path, Outcome.SKIPPED)
    horizon = gc_before_ts(table.options, now_s)
    store = await _settled(storage, path) if horizon is not None else _written(storage, path)
    if store is None:
        return FileCompaction(path, Outcome.BUSY if path.exists() else Outcome.MISSING)
    now = int(now_s)
    try:
        await asyncio.to_thread(store.compact_written, now, horizon)
        after = await asyncio.to_thread(store.measure_garbage, now, horizon)
    except (sqlite3.ProgrammingError, StorageError) as exc:
        if isinstance(exc, StorageError) and store.corrupt is not None:
            raise
        log.info("compaction stopped: the file was closed under it file=%s reason=%s", path, exc)
        return FileCompaction(path, Outcome.GONE)
    log.info(
        "tablet file compacted table=%s.%s file=%s gc_before_ts=%s entries=%d tombstones_left=%d",
        table.keyspace,
        table.name,
        path,
        horizon,
        after.entries,
        after.tombstones,
    )
    return FileCompaction(path, Outcome.COMPACTED, after)


def _written(storage: StorageService, path: Path) -> TabletStore:
    store = storage.open_store(path)
    if store is None:
        storage.open_committer(path)
        store = storage.open_store(path)
        assert store is not None, "open_committer opens the store"
    store.write_deferred()
    return store


async def _settled(storage: StorageService, path: Path) -> TabletStore | None:
    deadline = time.monotonic() + SETTLE_WAIT_S
    delay = 0.001
    while True:
        store = storage.settle_before_gc(path)
        if store is not None or not path.exists() or time.monotonic() >= deadline:
            return store
        await asyncio.sleep(delay)  # the writes in flight commit meanwhile
        delay = min(delay * 2, 0.1)


async def flush_files(storage: StorageService, paths: Iterable[Path]) -> int:
    """Write the deferred rows of the open stores at ``paths`` into their files, sync them and
    fold their write-ahead logs in; how many stores were flushed."""
    stores = [store for store in (storage.open_store(p) for p in paths) if store is not None]
    for store in stores:
        store.write_deferred()

    def settle(store: TabletStore) -> None:
        store.sync_to_disk()
        store.checkpoint()

    flushed = 0
    for store in stores:
        try:
            await asyncio.to_thread(settle, store)
        except (sqlite3.ProgrammingError, StorageError) as exc:  # closed meanwhile: nothing left to flush
            if isinstance(exc, StorageError) and store.corrupt is not None:
                raise
            continue
        flushed += 1
    return flushed
