"""Node-wide group commit: one fsync per event-loop tick for every tablet file the tick wrote.

Per-store group commit (``group_commit``) pays one fsync per tablet file per tick; with writes
spread over tens of tablets that is about one fsync per two writes, and a synced SQLite commit
costs ~160-250 us of CPU against ~35-40 us unsynced (docs/benchmarks.md, perf4). Here the writes
of a tick, whatever their stores, become one record of a node-wide log (``commit_log``), appended
and ``fdatasync``-ed once on a ``CommitPool`` worker thread. When that is done, back on the event
loop, each store commits its rows without a sync (``TabletStore.apply_rows(synced=False)``: WAL
with ``synchronous=NORMAL`` for that transaction, which SQLite keeps free of corruption on power
loss but may lose), and only then are the writers answered: an acknowledged write is durable (in
the log) and visible to reads (in its store). The unsynced commits run on the loop on purpose:
they do not wait for the disk, and on a worker thread each of their SQLite calls would wait for
the GIL behind the busy loop.

The log holds what the stores may not have on disk yet. It is emptied when it grows past
``trim_bytes``: the next commit's worker first fsyncs every store committed since the last reset
(``TabletStore.sync_to_disk``; all of them applied, since one commit is in flight at a time and
its own rows are applied after its append), then resets the log, then appends. Removing or
replacing data (TRUNCATE, DROP, a restore replacing a file) first logs a *removal* record for the
path (``removed``), so a replay never applies rows logged before it to what is there after. At
start (``replay``) every whole write record not followed by a removal of its path is applied
again to its store if the file exists; that is harmless for what the stores already have,
because every upsert is last-write-wins (counters are stored as totals, each built
by one Paxos round, so they too).

A store whose shared transaction fails gets each writer's rows applied alone, so one bad write
fails alone (it stays in the log: a write that failed may still appear after a crash, as
Cassandra allows for a failed write).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack

from tabletdb.storage.commit_log import CommitLog
from tabletdb.storage.commit_pool import CommitPool, default_pool
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.tablet_store import BatchRows, TabletStore, batch_rows

if TYPE_CHECKING:
    from tabletdb.storage.group_commit import GroupCommitter

log = logging.getLogger(__name__)

TRIM_BYTES = 64 * 1024 * 1024
"""Log size that makes a commit sync the written stores and empty the log."""

_Entry = tuple["GroupCommitter", Sequence[Mutation], "asyncio.Future[None]"]


class NodeCommitter:
    """Commits the writes of all stores of one node together (see the module docstring)."""

    def __init__(
        self, log_path: Path, root: Path, pool: CommitPool | None = None, trim_bytes: int = TRIM_BYTES
    ) -> None:
        self._log = CommitLog(log_path)
        self._root = root
        self._pool = pool
        self._trim_bytes = trim_bytes
        self._pending: list[_Entry] = []
        self._scheduled = False
        self._in_flight = False
        self._log_lock = threading.Lock()
        """Appends and resets of the log come from a worker thread and (removals) the loop."""
        self._dirty: dict[Path, TabletStore] = {}
        """Stores committed without a sync since they were last synced (owned by the loop; a
        commit that trims the log takes them over)."""
        self.flushes = 0
        """Log records of writes appended (observability and tests)."""

    def replay(self) -> int:
        """Apply the log's write records to their stores again, sync them, empty the log.

        Run once at start, before any store is opened. Rows logged before a removal of their
        path are skipped, and so are files that no longer exist (their table was dropped or
        truncated). Returns how many write records were replayed.
        """
        records = [msgpack.unpackb(payload) for payload in self._log.records()]
        removals = [(i, record[1]) for i, record in enumerate(records) if record[0] == _REMOVE]
        stores: dict[Path, TabletStore] = {}
        count = 0
        try:
            for i, record in enumerate(records):
                if record[0] != _WRITE:
                    continue
                count += 1
                for name, writers in record[1]:
                    if any(j > i and _under(name, prefix) for j, prefix in removals):
                        continue
                    path = self._root / name
                    if path not in stores:
                        if not path.exists():
                            continue
                        stores[path] = TabletStore(path)
                    for blob in writers:
                        try:
                            stores[path].apply_rows(tuple(msgpack.unpackb(blob)), synced=False)
                        except Exception:  # it failed when first applied too; its writer was told
                            log.exception("commit log replay: a write to %s failed again", path)
            for store in stores.values():
                store.sync_to_disk()
        finally:
            for store in stores.values():
                store.close()
        with self._log_lock:
            self._log.reset()
        if count:
            log.info("commit log replayed records=%d stores=%d", count, len(stores))
        return count

    def apply(self, committer: GroupCommitter, mutations: Sequence[Mutation]) -> asyncio.Future[None]:
        """Queue ``mutations`` for ``committer``'s store; the future completes once they are in
        the synced log and committed to the store, or with what applying them raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.append((committer, mutations, future))
        committer.outstanding += 1
        if not self._scheduled and not self._in_flight:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    def removed(self, path: Path) -> None:
        """Log (synced) that the data at ``path`` (a file or a directory) is being removed or
        replaced: a replay skips every row logged for it before. Call before removing it."""
        payload: bytes = msgpack.packb([_REMOVE, self._name(path)])
        with self._log_lock:
            self._log.append(payload)
        for dirty in [p for p in self._dirty if p == path or path in p.parents]:
            del self._dirty[dirty]

    def close(self) -> None:
        """Sync what was committed; with no commit in flight the log is emptied too (a clean
        stop leaves nothing to replay), otherwise it is kept for the next start."""
        for store in self._dirty.values():
            store.sync_to_disk()
        self._dirty.clear()
        with self._log_lock:
            if not self._in_flight and not self._pending:
                self._log.reset()
            self._log.close()

    def _flush(self) -> None:
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        outcomes: list[BaseException | None] = [None] * len(batch)
        stores: dict[int, tuple[GroupCommitter, list[int], list[BatchRows], list[bytes]]] = {}
        for i, (committer, mutations, _) in enumerate(batch):
            try:  # each writer packed alone, so one that cannot be (an out-of-range int) fails alone
                rows = batch_rows(mutations)
                packed: bytes = msgpack.packb(rows)
            except Exception as exc:
                outcomes[i] = exc
                continue
            entry = stores.setdefault(id(committer), (committer, [], [], []))
            entry[1].append(i)
            entry[2].append(rows)
            entry[3].append(packed)
        if not stores:
            self._settle(batch, outcomes)
            return
        payload: bytes = msgpack.packb(
            [_WRITE, [[self._name_of(c), blobs] for c, _, _, blobs in stores.values()]]
        )
        to_sync: list[TabletStore] = []
        if self._log.size >= self._trim_bytes:
            to_sync = list(self._dirty.values())
            self._dirty.clear()
        self._in_flight = True
        pool = self._pool if self._pool is not None else default_pool()
        pool.submit(
            lambda: self._append(payload, to_sync),
            lambda _, error: self._logged(batch, outcomes, stores, to_sync, error),
        )

    def _append(self, payload: bytes, to_sync: list[TabletStore]) -> None:
        """Worker thread: (trim: sync the stores, empty the log) then append and fdatasync."""
        for store in to_sync:
            store.sync_to_disk()
        with self._log_lock:
            if to_sync:
                self._log.reset()
            self._log.append(payload)

    def _logged(
        self,
        batch: list[_Entry],
        outcomes: list[BaseException | None],
        stores: dict[int, tuple[GroupCommitter, list[int], list[BatchRows], list[bytes]]],
        to_sync: list[TabletStore],
        error: BaseException | None,
    ) -> None:
        """Loop: the record is durable (or failed); commit each store unsynced, answer the writers."""
        self._in_flight = False
        if error is not None:
            for store in to_sync:  # not known to be synced: keep them for the next trim
                self._dirty[store.path] = store
            outcomes = [error] * len(batch)
        else:
            self.flushes += 1
            for committer, indexes, writers, _ in stores.values():
                store = committer.store
                self._dirty[store.path] = store
                try:
                    store.apply_rows(_merged(writers), synced=False)
                except Exception:
                    for i, rows in zip(indexes, writers):
                        try:
                            store.apply_rows(rows, synced=False)
                        except Exception as exc:
                            outcomes[i] = exc
                committer.flushes += 1
        self._settle(batch, outcomes)
        if self._pending and not self._scheduled:
            self._flush()

    def _settle(self, batch: list[_Entry], outcomes: list[BaseException | None]) -> None:
        for (committer, _, future), outcome in zip(batch, outcomes):
            committer.outstanding -= 1
            if future.done():  # the writer was cancelled; its data is applied anyway
                continue
            if outcome is None:
                future.set_result(None)
            else:
                future.set_exception(outcome)

    def _name_of(self, committer: GroupCommitter) -> str:
        """``_name`` of the committer's store, computed once (path arithmetic is slow)."""
        name = committer.log_name
        if name is None:
            name = committer.log_name = self._name(committer.store.path)
        return name

    def _name(self, path: Path) -> str:
        """The store's path as recorded: relative to the data directory when under it."""
        try:
            return str(path.relative_to(self._root))
        except ValueError:
            return str(path)


_WRITE = "w"
_REMOVE = "r"


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix.rstrip("/") + "/")


def _merged(writers: list[BatchRows]) -> BatchRows:
    if len(writers) == 1:
        return writers[0]
    out: list[list[Any]] = [[] for _ in writers[0]]
    for rows in writers:
        for merged, part in zip(out, rows):
            merged.extend(part)
    return tuple(out)
