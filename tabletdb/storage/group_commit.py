"""Group commit: writes to one store that arrive while it is busy share one transaction and fsync.

A synced SQLite commit costs an fsync; paying it per write would cap a replica at a few hundred
writes per second. Writers await ``apply``; the first one schedules a flush at the end of the
current event-loop tick (``call_soon``), and everything queued until then is committed together
(DESIGN.md decision 5). The commit runs on a ``CommitPool`` worker thread, so the fsyncs of
different stores overlap and the loop keeps serving; while one batch of a store is being
committed, later writes to that store queue up and form the next batch, started as soon as the
first is durable (at most one commit per store at a time: a store is used by one thread at a time
and batches land in order). Every writer is answered only after its batch's fsync.

If the shared transaction fails, each writer's mutations are retried alone so one bad write
cannot fail its neighbours, and each writer gets its own outcome. In-memory stores (tests) have
no fsync to overlap and commit on the loop.

Given a ``NodeCommitter`` (the node's storage service does), a committer hands its writes to it
instead: one log record per tick for all the node's stores (``node_commit``). The node committer
then owns that store's commit state (``LoggedStore``: writes outstanding, records, the store's
name in the log); this object only reads it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence

from tabletdb.storage.commit_pool import CommitPool, default_pool
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.node_commit import LoggedStore, NodeCommitter
from tabletdb.storage.tablet_store import TabletStore

_Batch = list[tuple[Sequence[Mutation], asyncio.Future[None]]]


class GroupCommitter:
    """Batches ``TabletStore.apply`` calls; one commit of a store in flight at a time."""

    def __init__(
        self, store: TabletStore, pool: CommitPool | None = None, node: NodeCommitter | None = None
    ) -> None:
        self.store = store
        self._pool = pool
        self._logged: LoggedStore | None = None
        """The node committer's state for this store (None: this object commits the store)."""
        self._to_node: Callable[[Sequence[Mutation]], asyncio.Future[None]] | None = None
        """``node.apply`` bound to this store's handle (a C-level partial: one call per write)."""
        if node is not None and not store.in_memory:
            self._logged = node.attach(store)
            self._to_node = functools.partial(node.apply, self._logged)
        self._pending: _Batch = []
        self._scheduled = False
        self._in_flight = False
        self._flushes = 0
        """Transactions this object committed (without a node committer only)."""

    @property
    def flushes(self) -> int:
        """How many transactions were committed - with a node committer, how many log records
        carried this store's writes (observability and tests)."""
        return self._flushes if self._logged is None else self._logged.records

    @property
    def idle(self) -> bool:
        """Nothing queued, committing or deferred: the store may be closed (restore replaces its file)."""
        return not (self.committing or self.store.deferred_count)

    @property
    def committing(self) -> bool:
        """Writes queued or being committed (rows deferred in the store aside): while this holds,
        the store may not be closed even if its rows are to be dropped (a damaged file)."""
        outstanding = self._logged is not None and self._logged.outstanding
        return bool(self._pending or self._scheduled or self._in_flight or outstanding)

    def apply(self, mutations: Sequence[Mutation]) -> asyncio.Future[None]:
        """Queue ``mutations``; the future completes once they are durable, or with what applying
        them raised. A plain future rather than a coroutine, so ``gather`` over several stores
        wraps no task around each (a task per write costs more than the rest of the queueing)."""
        to_node = self._to_node
        if to_node is not None:
            return to_node(mutations)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.append((mutations, future))
        if not self._scheduled and not self._in_flight:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    def _flush(self) -> None:
        self._scheduled = False
        batch, self._pending = self._pending, []
        if not batch:
            return
        if self.store.in_memory:
            _settle(batch, self._commit(batch))
            return
        self._in_flight = True
        pool = self._pool if self._pool is not None else default_pool()
        pool.submit(
            lambda: self._commit(batch), lambda outcomes, error: self._committed(batch, outcomes, error)
        )

    def _committed(
        self, batch: _Batch, outcomes: list[BaseException | None] | None, error: BaseException | None
    ) -> None:
        self._in_flight = False
        _settle(batch, outcomes if outcomes is not None else [error] * len(batch))
        if self._pending:
            self._flush()

    def _commit(self, batch: _Batch) -> list[BaseException | None]:
        """Commit the batch (on a worker thread for file stores); one outcome per writer."""
        try:
            self.store.apply([m for mutations, _ in batch for m in mutations])
        except Exception:
            return [self._apply_alone(mutations) for mutations, _ in batch]
        self._flushes += 1
        return [None] * len(batch)

    def _apply_alone(self, mutations: Sequence[Mutation]) -> BaseException | None:
        try:
            self.store.apply(mutations)
        except Exception as exc:
            return exc
        self._flushes += 1
        return None


def _settle(batch: _Batch, outcomes: Sequence[BaseException | None]) -> None:
    for (_, future), error in zip(batch, outcomes):
        if future.done():  # the writer was cancelled; its data is applied anyway
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
