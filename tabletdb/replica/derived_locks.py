"""Locks (and timestamps) for writes that derive view and index rows from a read of the base partition.

A write that reads the base partition before and after itself must not interleave with another
write to the same partition (both would derive from the same "before"), so such writes hold a
lock per base partition: writes to different partitions still run concurrently and share group
commits. Building an index over existing data takes the table exclusively: it waits for the
derived writes in flight to finish and holds new ones back until the build is done.

One node has one ``DerivedLocks``: its wiring hands the same object to the base replica's view
updates (``ViewUpdates``) and to the fill of new views and indexes (``Backfill``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager


class DerivedLocks:
    """Per-partition locks for derived writes, table-wide holds for builds, and their stamps."""

    def __init__(self) -> None:
        self._partitions: dict[tuple[uuid.UUID, bytes], tuple[asyncio.Lock, int]] = {}
        self._active: dict[uuid.UUID, int] = {}
        self._building: set[uuid.UUID] = set()
        self._changed = asyncio.Condition()
        self._last_stamp = 0

    def stamp(self, base_timestamp: int) -> int:
        """The timestamp for the view and index changes of one base write: the write's own, or
        one past the last such stamp if that is later.

        Derived rows mirror the base's current state, and writes to one base row are derived in
        the order they are applied (under its partition lock), so each derivation must win over
        the previous one even when the client gave the base write an older timestamp than an
        earlier one (which can still win for the columns it writes): otherwise a moved view row
        would keep cells a later-stamped rewrite gave it, or a deleted one could not come back.
        """
        self._last_stamp = max(base_timestamp, self._last_stamp + 1)
        return self._last_stamp

    @asynccontextmanager
    async def writing(self, table_id: uuid.UUID, partition_keys: Sequence[bytes]) -> AsyncIterator[None]:
        """Hold the given partitions of ``table_id`` (taken in key order, so batches never deadlock)."""
        async with self._changed:
            await self._changed.wait_for(lambda: table_id not in self._building)
            self._active[table_id] = self._active.get(table_id, 0) + 1
        keys = [(table_id, key) for key in sorted(set(partition_keys))]
        try:
            async with AsyncExitStack() as stack:
                for key in keys:
                    lock = self._take(key)
                    stack.callback(self._give_back, key)
                    await stack.enter_async_context(lock)
                yield
        finally:
            async with self._changed:
                self._active[table_id] -= 1
                self._changed.notify_all()

    @asynccontextmanager
    async def building(self, table_id: uuid.UUID) -> AsyncIterator[None]:
        """Hold ``table_id`` exclusively of derived writes."""
        async with self._changed:
            await self._changed.wait_for(lambda: table_id not in self._building)
            self._building.add(table_id)
            await self._changed.wait_for(lambda: self._active.get(table_id, 0) == 0)
        try:
            yield
        finally:
            async with self._changed:
                self._building.discard(table_id)
                self._changed.notify_all()

    def _take(self, key: tuple[uuid.UUID, bytes]) -> asyncio.Lock:
        lock, users = self._partitions.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._partitions[key] = (lock, users + 1)
        return lock

    def _give_back(self, key: tuple[uuid.UUID, bytes]) -> None:
        """Forget a partition's lock once nobody holds or waits for it (locks never pile up)."""
        lock, users = self._partitions[key]
        if users <= 1:
            del self._partitions[key]
        else:
            self._partitions[key] = (lock, users - 1)
