"""Compaction on a running node: ``nodetool compact`` / ``flush`` and the background policy.

The background loop (``run``) wakes every ``POLL_S``, measures a few of this node's data files
whose garbage counts are unknown or stale (changed on disk since, or older than
``REMEASURE_S``: tombstones age past the GC horizon without any write), asks the pure policy
(``replica.compaction_policy.choose``) for the file most in need and compacts that one
(``replica.compactions.compact_file``), on worker threads a chunk of partitions at a time. One
compaction runs at a time on the node, background or asked for: the lock makes a manual one wait
for the file in progress. Measuring is full scans of a file on a worker thread, which is why it
is budgeted per round and skipped for files unchanged since.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tabletdb.replica.compaction_policy import FileState, choose, gc_before_ts, table_compaction
from tabletdb.replica.compactions import FileCompaction, Outcome, compact_file, flush_files, movable
from tabletdb.replica.storage_service import LocalFile, StorageService
from tabletdb.schema.index_table import index_table
from tabletdb.schema.model import Catalog, KeyspaceSchema, TableDef
from tabletdb.storage.compaction import Garbage
from tabletdb.storage.tablet_store import StorageError

log = logging.getLogger(__name__)

POLL_S = 10.0
REMEASURE_S = 300.0
MEASURE_PER_ROUND = 4
"""Files measured per round at most (each a full scan on a worker thread)."""


class UnknownTable(LookupError):
    """A keyspace or table named in a request does not exist; the message says which."""


@dataclass
class _Tracked:
    """What the background loop knows of one file."""

    garbage: Garbage | None = None
    changed_at: float = 0.0
    """The file's (and its write-ahead log's) latest mtime when it was measured."""
    measured_at: float = 0.0
    tombstones_after: int = 0
    compacted_at: float | None = None


@dataclass
class CompactionManager:
    storage: StorageService
    catalog: Callable[[], Catalog]
    poll_s: float = POLL_S
    _files: dict[Path, _Tracked] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _auto_off: set[uuid.UUID] = field(default_factory=set)
    """Tables whose files the background loop leaves alone (``nodetool disableautocompaction``);
    node-local and forgotten on restart, as in ScyllaDB. Manual compactions still run."""

    # -- automatic compaction on or off ----------------------------------------------------

    def set_auto_compaction(self, tables: Iterable[TableDef], enabled: bool) -> None:
        """Turn the background loop's compaction of ``tables`` (and their index tables) on or off."""
        ids = {t.id for table in tables for t in (table, *_index_tables(table))}
        if enabled:
            self._auto_off -= ids
        else:
            self._auto_off |= ids
        log.info("automatic compaction %s tables=%d", "enabled" if enabled else "disabled", len(ids))

    def auto_compaction(self, table: TableDef) -> bool:
        return table.id not in self._auto_off

    # -- what a request names --------------------------------------------------------------

    def tables(self, keyspace: str | None, names: Sequence[str] = ()) -> list[TableDef]:
        """The tables of ``keyspace`` (None: every keyspace) with their views' and indexes'
        tables, or only those of ``names``; ``UnknownTable`` for a name that does not exist."""
        catalog = self.catalog()
        if keyspace is None:
            return [t for ks in catalog.keyspaces.values() for t in _keyspace_tables(ks)]
        ks = catalog.keyspace(keyspace)
        if ks is None:
            raise UnknownTable(f"keyspace {keyspace} does not exist")
        if not names:
            return _keyspace_tables(ks)
        out: list[TableDef] = []
        for name in names:
            table = catalog.table_or_view(keyspace, name)
            if table is None:
                raise UnknownTable(f"table {keyspace}.{name} does not exist")
            out += [table, *_index_tables(table)]
        return out

    # -- asked for ---------------------------------------------------------------------------

    async def compact(self, tables: Iterable[TableDef]) -> list[FileCompaction]:
        """Compact every file of ``tables`` on this node, one after another."""
        done: list[FileCompaction] = []
        for table in tables:
            for local in self.storage.local_files(table):
                async with self._lock:
                    result = await compact_file(self.storage, table, local)
                self._record(result)
                done.append(result)
        return done

    async def flush(self, tables: Iterable[TableDef]) -> int:
        """Flush every open store of ``tables`` (``replica.compactions.flush_files``)."""
        paths = [local.path for table in tables for local in self.storage.local_files(table)]
        return await flush_files(self.storage, paths)

    # -- in the background -------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Compact files as the policy finds them due until ``stop`` is set."""
        while not stop.is_set():
            try:
                await self.round()
            except Exception:  # a bad round must not stop the next ones (nor the node)
                log.exception("background compaction round failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)

    async def round(self, now: float | None = None) -> FileCompaction | None:
        """One round: measure what is stale, compact the file most due (if any)."""
        now = time.time() if now is None else now
        files = self._candidates()
        for path in [p for p in self._files if p not in files]:
            del self._files[path]
        stale = sorted(
            (item for item in files.items() if self._stale(item[0], now)),
            key=lambda item: self._files.get(item[0], _Tracked()).measured_at,
        )
        for path, (table, _local) in stale[:MEASURE_PER_ROUND]:
            await self._measure(path, table, now)
        states = [
            FileState(path, table_compaction(table.options), t.garbage, t.tombstones_after, t.compacted_at)
            for path, (table, _local) in files.items()
            if (t := self._files.get(path)) is not None
        ]
        chosen = choose(states, now)
        if chosen is None:
            return None
        table, local = files[Path(str(chosen))]
        async with self._lock:
            result = await compact_file(self.storage, table, local, now)
        self._record(result, now)
        return result

    def _candidates(self) -> dict[Path, tuple[TableDef, LocalFile]]:
        out: dict[Path, tuple[TableDef, LocalFile]] = {}
        for table in self.tables(None):
            if table.id in self._auto_off:
                continue
            for local in self.storage.local_files(table):
                if local.path.exists() and movable(self.storage, table, local):
                    out[local.path] = (table, local)
        return out

    def _stale(self, path: Path, now: float) -> bool:
        tracked = self._files.get(path)
        if tracked is None or tracked.garbage is None:
            return True
        return _changed_at(path) > tracked.changed_at or now - tracked.measured_at >= REMEASURE_S

    async def _measure(self, path: Path, table: TableDef, now: float) -> None:
        store = self.storage.open_store(path)
        if store is None:
            if not path.exists():  # removed since (moved away, dropped): opening would recreate it
                return
            self.storage.open_committer(path)
            store = self.storage.open_store(path)
        if store is None:
            return
        changed = _changed_at(path)
        try:
            garbage = await asyncio.to_thread(
                store.measure_garbage, int(now), gc_before_ts(table.options, now)
            )
        except StorageError as exc:  # closed or damaged meanwhile: the storage service deals with it
            log.debug("not measured file=%s reason=%s", path, exc)
            return
        tracked = self._files.setdefault(path, _Tracked())
        tracked.garbage, tracked.changed_at, tracked.measured_at = garbage, changed, now

    def _record(self, result: FileCompaction, now: float | None = None) -> None:
        if result.outcome is not Outcome.COMPACTED or result.after is None:
            return
        tracked = self._files.setdefault(result.path, _Tracked())
        tracked.garbage = result.after
        tracked.tombstones_after = result.after.tombstones
        tracked.compacted_at = time.time() if now is None else now
        tracked.changed_at = _changed_at(result.path)
        tracked.measured_at = tracked.compacted_at


def _keyspace_tables(ks: KeyspaceSchema) -> list[TableDef]:
    tables = [ks.tables[name] for name in sorted(ks.tables)]
    views = [ks.views[name].table for name in sorted(ks.views)]
    return tables + views + [index for t in tables for index in _index_tables(t)]


def _index_tables(table: TableDef) -> list[TableDef]:
    return [found for index in table.indexes if (found := index_table(table, index)) is not None]


def _changed_at(path: Path) -> float:
    latest = 0.0
    for name in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(FileNotFoundError):
            latest = max(latest, name.stat().st_mtime)
    return latest
