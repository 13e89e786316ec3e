"""Executing a write statement on this node, up to its mutations: server time, current cells.

Server timestamps are wall-clock microseconds made strictly increasing per node, so two writes
from one client never tie. Statements that read before writing (list index, counters, LWT) hold
a partition's lock (``PartitionLocks``) from the read to the durable write where this node is
the partition's only replica; plain writes skip it. The mutations go to their replicas through
the write coordinator (``coordinator.writes``), which the data path is handed separately.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable, Sequence

from tabletdb.replica.stores import DataStores, damaged_replica
from tabletdb.schema.model import TableDef
from tabletdb.statements.bound_modification import BoundModification
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Bound, ClusteringSlice, Mutation
from tabletdb.storage.reconcile import LiveCell
from tabletdb.storage.tablet_store import TabletCorrupt, TabletUnavailable

Clock = Callable[[], float]


def _no_cells(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
    return ()


class ServerClock:
    """This node's time as writes see it: one clock for write timestamps and for TTL expiry, so a
    test (or a simulation) that moves it moves both."""

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self._last = 0

    def timestamp(self) -> int:
        """A microsecond write timestamp, strictly greater than any this clock gave before."""
        now = int(self._clock() * 1_000_000)
        self._last = max(self._last + 1, now)
        return self._last

    def now_seconds(self) -> int:
        """Whole seconds: what TTLs count from and what expiry is judged against."""
        return int(self._clock())


class PartitionLocks:
    """One asyncio lock per (table, partition key), for read-before-write where this node is the
    partition's only replica: held from the read of its stores to the durable write."""

    def __init__(self) -> None:
        self._locks: weakref.WeakValueDictionary[tuple[str, bytes], asyncio.Lock]
        self._locks = weakref.WeakValueDictionary()
        """Held locks stay alive through their holders and waiters; idle ones are dropped."""

    def lock(self, table: TableDef, key: bytes) -> asyncio.Lock:
        found = self._locks.get((table.id.hex, key))
        if found is None:
            found = self._locks[(table.id.hex, key)] = asyncio.Lock()
        return found


class WriteExecutor:
    """Turns modification statements into mutations: validated, stamped with this node's time,
    and (for read-before-write operations) built on the current cells."""

    def __init__(self, stores: DataStores, clock: ServerClock) -> None:
        self._stores = stores
        self._clock = clock

    def current_cells(self, table: TableDef) -> CurrentCells:
        def read(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
            try:
                return read_cells(key, token, ck, static, column)
            except (TabletCorrupt, TabletUnavailable) as exc:
                raise damaged_replica(table, exc) from exc

        def read_cells(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
            store = self._stores.store(table, token)
            if static:
                data = store.read_partition(key, self._clock.now_seconds(), limit=0)
                row = None if data is None else data.static_row
            else:
                data = store.read_partition(
                    key,
                    self._clock.now_seconds(),
                    ClusteringSlice(Bound(ck), Bound(ck)),
                    include_static=False,
                )
                row = None if data is None or not data.rows else data.rows[0]
            return () if row is None else row.cells_of(column)

        return read

    def mutations_for(
        self,
        bound: BoundModification,
        default_ts: int | None,
        *,
        deltas: bool = False,
        current: CurrentCells | None = None,
    ) -> list[Mutation]:
        """Validate and build; raises before anything is written.

        ``deltas``: build counter updates against an empty current value, so each counter cell
        carries its increment (``paxos.counters`` adds it to the total). ``current``: where
        read-before-write operations read (default this node's stores; a Paxos round passes the
        replicas' reconciled partition).
        """
        ts = default_ts if default_ts is not None else self._clock.timestamp()
        if current is None:
            current = _no_cells if deltas else self.current_cells(bound.table)
        return bound.mutations(ts, self._clock.now_seconds(), current)
