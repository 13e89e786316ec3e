"""Group commit: every write that arrives during one event-loop tick shares one transaction.

A synced SQLite commit costs an fsync; paying it per write would cap a replica at a few hundred
writes per second. Writers await ``apply``; the first one in a tick schedules a flush with
``call_soon`` and everything queued until it runs is committed together (DESIGN.md decision 5).
If the shared transaction fails, each writer's mutations are retried alone so one bad write
cannot fail its neighbours, and each writer gets its own outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from tabletdb.storage.mutation import Mutation
from tabletdb.storage.tablet_store import TabletStore


class GroupCommitter:
    """Batches ``TabletStore.apply`` calls made within one event-loop tick."""

    def __init__(self, store: TabletStore) -> None:
        self.store = store
        self._pending: list[tuple[Sequence[Mutation], asyncio.Future[None]]] = []
        self._scheduled = False
        self.flushes = 0
        """How many transactions were committed (observability and tests)."""

    async def apply(self, mutations: Sequence[Mutation]) -> None:
        """Return once ``mutations`` are durable; raises what applying them raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.append((mutations, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        self._scheduled = False
        try:
            self.store.apply([m for mutations, _ in batch for m in mutations])
            self.flushes += 1
            outcomes: list[BaseException | None] = [None] * len(batch)
        except Exception:
            outcomes = [self._apply_alone(mutations) for mutations, _ in batch]
        for (_, future), error in zip(batch, outcomes):
            if future.done():  # the writer was cancelled; its data is applied anyway
                continue
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

    def _apply_alone(self, mutations: Sequence[Mutation]) -> BaseException | None:
        try:
            self.store.apply(mutations)
        except Exception as exc:
            return exc
        self.flushes += 1
        return None
