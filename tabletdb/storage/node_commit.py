"""Node-wide group commit: one commit-log record per event-loop tick for every tablet file the
tick wrote.

Per-store group commit (``group_commit``) pays one fsync per tablet file per tick; with writes
spread over tens of tablets that is about one fsync per two writes, and a synced SQLite commit
costs ~160-250 us of CPU against ~35-40 us unsynced (docs/benchmarks.md, perf4). Here the writes
of a tick, whatever their stores, become one record of a node-wide log (``commit_log``). In
*batch* mode (``commitlog_sync: batch``) the record is appended and ``fdatasync``-ed on a
``CommitPool`` worker thread before anyone is answered; in *periodic* mode (the default, as in
Cassandra and ScyllaDB) it is written on the loop (the kernel keeps it through a kill -9 of the
node) and a worker syncs the log within ``sync_period_s``. Then, on the loop, each store is
handed its rows to write later (``TabletStore.defer_rows``; reads of the store see them at once)
and the writers are answered: an acknowledged write is in the log and visible to reads.

A store writes its deferred rows in one unsynced transaction (WAL with ``synchronous=NORMAL``,
which SQLite keeps free of corruption on power loss but may lose) when it holds ``STORE_BATCH``
of them (or ``STORE_BATCH_BYTES``), when a read needs them, when the node's stores together hold
``NODE_BUDGET_BYTES``, and at the latest ``WRITE_OUT_S`` after they came: the cost per write of a
SQLite transaction falls four-fold from one write to a thousand (perf7). These writes run on the
loop, one store per loop iteration: they do not wait for the disk, and on a worker thread each
SQLite call would wait for the GIL behind the busy loop.

The log holds what the stores may not have on disk yet. It is emptied when it grows past
``trim_bytes``: the next commit first writes every store's deferred rows (on the loop), then its
worker fsyncs every store given rows since the last reset (``TabletStore.sync_to_disk``; one
commit is in flight at a time and its own rows are deferred after its append), resets the log,
and appends. Removing or replacing data (TRUNCATE, DROP, a restore replacing a file) first logs a
*removal* record for the path (``removed``) and drops the path's deferred rows, so a replay
never applies rows logged before it to what is there after; deleting token ranges from a file
(cleanup of vnode ranges) logs a *range removal* the replay repeats in order
(``removed_ranges``). At start (``replay``, ``commit_replay``) every valid write record not
followed by a removal of its path is applied again to its store if the file exists; a log
damaged between valid records stops the start.

A write that cannot be packed for the log fails alone. Rows that the store later fails to write
while the rest of the deferred batch succeeds are dropped and logged (``write_deferred``): they
are in the log and would fail in a replay too, as Cassandra allows for a failed write's data.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgpack

from tabletdb.storage.batch_rows import BatchRows, batch_rows
from tabletdb.storage.commit_log import CommitLog
from tabletdb.storage.commit_pool import CommitPool, default_pool
from tabletdb.storage.commit_replay import REMOVE, REMOVE_RANGES, WRITE, replay
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.tablet_store import StorageError, TabletCorrupt, TabletStore

log = logging.getLogger(__name__)

TRIM_BYTES = 64 * 1024 * 1024
"""Log size that makes a commit sync the written stores and empty the log."""

STORE_BATCH = 1024
"""Deferred writes that make a store write them out: about where SQLite's cost per write stops
falling with the transaction size (~11 µs at 1,024 against ~45 µs alone), and a loop pause of
~10 ms."""

STORE_BATCH_BYTES = 4 * 1024 * 1024
"""Deferred bytes that make a store write them out, however few writes (large values)."""

NODE_BUDGET_BYTES = 32 * 1024 * 1024
"""Estimated memory the node's stores may hold in deferred rows together before all are written
out: a write counts its log size plus ``WRITE_OVERHEAD`` (the Python objects holding it)."""

WRITE_OVERHEAD = 400
"""Bytes of tuples and list slots a deferred write holds beyond its values (measured: RSS grew
~17 MB with ~32,000 small writes deferred)."""

WRITE_OUT_S = 10.0
"""At most this long between a write being deferred and its store writing it out, busy or not:
it bounds what a restart replays and how stale the files are for a copy made around the node."""

_Entry = tuple["LoggedStore", Sequence[Mutation], "asyncio.Future[None]"]
_StoreBatch = tuple["LoggedStore", list[int], list[BatchRows], list[bytes]]
"""One store's part of a tick: its handle, the batch indexes of its writers, their rows, packed."""


@dataclass
class CommitCounters:
    """What the node's commits did, for metrics: plain ints bumped on the loop."""

    records: int = 0
    """Log records of writes appended (one per tick that wrote)."""
    writes: int = 0
    """Writes in those records (one per writer per store)."""
    write_outs: int = 0
    """Transactions writing a store's deferred rows started by the committer (batch full, budget,
    period, log trim, stop); reads that need the rows write them too, uncounted."""


class LoggedStore:
    """The commit state the node committer keeps for one store, and only it writes: the store's
    name in the log, its writes not yet answered, the records that carried its writes.

    The per-store ``GroupCommitter`` holds one (from ``NodeCommitter.attach``) to hand its writes
    over and reads it to tell whether the store is idle; keeping the state here rather than on
    the group committer leaves one owner of the commit accounting. A plain object rather than a
    dict entry of the node committer: a write bumps ``outstanding`` without a hash lookup.
    """

    __slots__ = ("name", "outstanding", "records", "store")

    def __init__(self, store: TabletStore, name: str) -> None:
        self.store = store
        self.name = name
        """The store's path as recorded: computed once, path arithmetic is slow."""
        self.outstanding = 0
        """Writes handed to the node committer and not yet answered."""
        self.records = 0
        """Log records that carried this store's writes (observability and tests)."""


class NodeCommitter:
    """Commits the writes of all stores of one node together (see the module docstring)."""

    def __init__(
        self,
        log_path: Path,
        root: Path,
        pool: CommitPool | None = None,
        trim_bytes: int = TRIM_BYTES,
        *,
        sync_period_s: float | None = None,
    ) -> None:
        """``sync_period_s`` None: *batch* mode, every record is fdatasync-ed before its writers
        are answered. A number: *periodic* mode (see the module docstring)."""
        self._log = CommitLog(log_path)
        self._root = root
        self._pool = pool
        self._trim_bytes = trim_bytes
        self._sync_period_s = sync_period_s
        self._unsynced = False
        """Periodic mode: records were appended since the log was last synced."""
        self._sync_timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the writers run on (a node has one; tests may run several in turn)."""
        self._pending: list[_Entry] = []
        self._scheduled = False
        self._in_flight = False
        self._log_lock = threading.Lock()
        """Appends and resets of the log come from a worker thread and (removals) the loop."""
        self._dirty: dict[Path, TabletStore] = {}
        """Stores given rows (deferred or committed without a sync) since they were last synced
        (owned by the loop; a commit that trims the log takes them over)."""
        self._deferred_bound = 0
        """At least the bytes deferred in all stores (recounted when it passes the budget)."""
        self._write_out: dict[Path, TabletStore] = {}
        """Stores to write their deferred rows, one per loop iteration (``_write_next``)."""
        self._write_out_timer: asyncio.TimerHandle | None = None
        self.counters = CommitCounters()

    def replay(self, *, skip_corrupt: bool = False) -> int:
        """Apply the log's write records to their stores again, sync them, empty the log
        (``commit_replay``); how many write records were replayed.

        Run once at start, before any store is opened. A log corrupt between valid records
        raises ``CommitLogCorrupt`` and is left as it is (the log is closed: this committer is
        unusable) unless ``skip_corrupt``.
        """
        try:
            count = replay(self._log, self._root, skip_corrupt=skip_corrupt)
        except BaseException:
            with self._log_lock:
                self._log.close()
            raise
        with self._log_lock:
            self._log.reset()
        return count

    def attach(self, store: TabletStore) -> LoggedStore:
        """The handle through which ``store``'s writes go to this committer (one per store)."""
        return LoggedStore(store, self._name(store.path))

    def apply(self, logged: LoggedStore, mutations: Sequence[Mutation]) -> asyncio.Future[None]:
        """Queue ``mutations`` for ``logged``'s store; the future completes once they are in
        the log (synced, in batch mode) and handed to the store, or with what stopped them."""
        loop = self._loop
        if loop is None or loop.is_closed():  # kept: get_running_loop() is a getpid() call
            loop = self._adopt_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.append((logged, mutations, future))
        logged.outstanding += 1
        if not self._scheduled and not self._in_flight:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    def _adopt_running_loop(self) -> asyncio.AbstractEventLoop:
        """A node has one loop; tests may run several in turn. Timers and callbacks of a loop
        that closed never fire: forget them, and restart the pending write-outs on this one."""
        loop = self._loop = asyncio.get_running_loop()
        self._sync_timer = self._write_out_timer = None
        if self._write_out:
            loop.call_soon(self._write_next)
        return loop

    def removed(self, path: Path) -> None:
        """Log (synced) that the data at ``path`` (a file or a directory) is being removed or
        replaced: a replay skips every row logged for it before. Call before removing it."""
        payload: bytes = msgpack.packb([REMOVE, self._name(path)])
        with self._log_lock:
            self._log.append(payload)
        for dirty in [p for p in self._dirty if p == path or path in p.parents]:
            self._dirty.pop(dirty).discard_deferred()
            self._write_out.pop(dirty, None)

    def removed_ranges(self, path: Path, ranges: Sequence[tuple[int, int]]) -> None:
        """Log (synced) that the partitions of the store at ``path`` in the token ranges
        ``(start, end]`` are being deleted (cleanup of ranges this node no longer owns): a replay
        deletes them again at this point of the log, so rows logged before cannot come back.
        Call before deleting them."""
        payload: bytes = msgpack.packb([REMOVE_RANGES, self._name(path), [list(r) for r in ranges]])
        with self._log_lock:
            self._log.append(payload)

    def close(self) -> None:
        """Sync what was committed; with no commit in flight the log is emptied too (a clean
        stop leaves nothing to replay), otherwise it is kept for the next start."""
        if self._write_out_timer is not None:
            self._write_out_timer.cancel()
        complete = self._write_all_deferred()
        for store in self._dirty.values():
            store.sync_to_disk()
        self._dirty.clear()
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        with self._log_lock:
            if complete and not self._in_flight and not self._pending:
                self._log.reset()
            elif self._unsynced:
                self._log.sync()
            self._log.close()

    def _flush(self) -> None:
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        outcomes: list[BaseException | None] = [None] * len(batch)
        stores: dict[int, _StoreBatch] = {}
        for i, (logged, mutations, _) in enumerate(batch):
            try:  # each writer packed alone, so one that cannot be (an out-of-range int) fails alone
                rows = batch_rows(mutations)
                packed: bytes = msgpack.packb(rows)
            except Exception as exc:
                outcomes[i] = exc
                continue
            entry = stores.setdefault(id(logged), (logged, [], [], []))
            entry[1].append(i)
            entry[2].append(rows)
            entry[3].append(packed)
        if not stores:
            self._settle(batch, outcomes)
            return
        payload: bytes = msgpack.packb(
            [WRITE, [[logged.name, blobs] for logged, _, _, blobs in stores.values()]]
        )
        to_sync: list[TabletStore] = []
        # the log may be emptied only once every row it holds is in a file to sync
        if self._log.size >= self._trim_bytes and self._write_all_deferred():
            to_sync = list(self._dirty.values())
            self._dirty.clear()
        if self._sync_period_s is not None and not to_sync:
            self._logged(batch, outcomes, stores, to_sync, self._append_unsynced(payload))
            return
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
            self._unsynced = False

    def _append_unsynced(self, payload: bytes) -> OSError | None:
        """Periodic mode, on the loop: write the record (the OS keeps it through a kill -9) and
        have a worker fdatasync the log within the period; what the write raised, if anything."""
        try:
            self._log.append(payload, sync=False)
        except OSError as exc:
            return exc
        self._unsynced = True
        if self._sync_timer is None and self._sync_period_s is not None:
            loop = asyncio.get_running_loop()
            self._sync_timer = loop.call_later(self._sync_period_s, self._sync_log)
        return None

    def _sync_log(self) -> None:
        self._sync_timer = None
        if not self._unsynced:
            return
        self._unsynced = False
        pool = self._pool if self._pool is not None else default_pool()
        pool.submit(self._sync_log_now, self._log_synced)

    def _sync_log_now(self) -> None:
        """Worker thread; the lock keeps ``reset`` and ``close`` away (appends may go on)."""
        with self._log_lock:
            if not self._log.closed:  # the node stopped meanwhile (close synced it)
                self._log.sync()

    def _log_synced(self, _: object, error: BaseException | None) -> None:
        if error is not None:  # the records stay in the page cache; kill -9 still spares them
            log.error("commit log fdatasync failed: %s", error)
            self._unsynced = True

    def _logged(
        self,
        batch: list[_Entry],
        outcomes: list[BaseException | None],
        stores: dict[int, _StoreBatch],
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
            self.counters.records += 1
            for logged, indexes, writers, blobs in stores.values():
                store = logged.store
                for i, rows, packed in zip(indexes, writers, blobs):
                    size = len(packed) + WRITE_OVERHEAD
                    try:  # a store closed meanwhile (TRUNCATE, DROP) refuses, as its writes would
                        store.defer_rows(rows, size)
                    except StorageError as exc:
                        outcomes[i] = exc
                        continue
                    self._dirty[store.path] = store
                    self._deferred_bound += size
                    self.counters.writes += 1
                if store.deferred_count >= STORE_BATCH or store.deferred_size >= STORE_BATCH_BYTES:
                    self._queue_write_out(store)
                logged.records += 1
            self._keep_to_budget()
        self._settle(batch, outcomes)
        if self._pending and not self._scheduled:
            self._flush()

    # -- writing deferred rows out -----------------------------------------------------------

    def _keep_to_budget(self) -> None:
        if self._write_out_timer is None and self._deferred_bound:
            loop = asyncio.get_running_loop()
            self._write_out_timer = loop.call_later(WRITE_OUT_S, self._write_out_all)
        if self._deferred_bound < NODE_BUDGET_BYTES:
            return
        self._deferred_bound = sum(store.deferred_size for store in self._dirty.values())
        if self._deferred_bound >= NODE_BUDGET_BYTES:
            self._write_out_all()

    def _write_out_all(self) -> None:
        if self._write_out_timer is not None:  # a no-op when it is what called
            self._write_out_timer.cancel()
            self._write_out_timer = None
        for store in self._dirty.values():
            if store.deferred_count:
                self._queue_write_out(store)
        self._deferred_bound = 0

    def _queue_write_out(self, store: TabletStore) -> None:
        """Write the store's deferred rows soon: after the writers just answered, and one store
        per loop iteration, so requests are served between them."""
        if not self._write_out:
            asyncio.get_running_loop().call_soon(self._write_next)
        self._write_out[store.path] = store

    def _write_next(self) -> None:
        if not self._write_out:
            return
        store = self._write_out.pop(next(iter(self._write_out)))
        self.counters.write_outs += 1
        try:
            store.write_deferred()
        except TabletCorrupt as exc:  # the storage service sets the file aside and logs it (ERROR)
            log.debug("deferred rows kept: %s", exc)
        except Exception:  # kept deferred, durable in the log; reads of the store report it
            log.exception("writing deferred rows to %s failed", store.path)
        if self._write_out:
            asyncio.get_running_loop().call_soon(self._write_next)

    def _write_all_deferred(self) -> bool:
        """Write every store's deferred rows now; False if some could not be (logged)."""
        self._write_out.clear()
        complete = True
        for store in self._dirty.values():
            if store.deferred_count:
                self.counters.write_outs += 1
            try:
                store.write_deferred()
            except Exception:
                log.exception("writing deferred rows to %s failed", store.path)
                complete = False
        self._deferred_bound = 0
        return complete

    def _settle(self, batch: list[_Entry], outcomes: list[BaseException | None]) -> None:
        for (logged, _, future), outcome in zip(batch, outcomes):
            logged.outstanding -= 1
            if future.done():  # the writer was cancelled; its data is applied anyway
                continue
            if outcome is None:
                future.set_result(None)
            else:
                future.set_exception(outcome)

    def _name(self, path: Path) -> str:
        """The store's path as recorded: relative to the data directory when under it."""
        try:
            return str(path.relative_to(self._root))
        except ValueError:
            return str(path)
