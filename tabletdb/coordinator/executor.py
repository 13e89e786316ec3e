"""Executing writes on this node: timestamps, per-partition serialization, group commit.

Server timestamps are wall-clock microseconds made strictly increasing per node, so two writes
from one client never tie. Statements that read before writing (list index, counters, LWT) hold
the partition's lock from the read to the durable write; plain writes skip it. Mutations go to
their replicas through ``coordinator_write`` (the local one through its group committer); the
client is answered once enough replicas have synced them for the consistency level.
"""

from __future__ import annotations

import asyncio
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Sequence

from tabletdb.coordinator.consistency import ONE
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.group0.topology import Topology
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.stores import DataStores
from tabletdb.schema.model import Catalog, TableDef
from tabletdb.statements.bound_modification import BoundModification
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Bound, ClusteringSlice, Mutation
from tabletdb.storage.reconcile import LiveCell

Clock = Callable[[], float]


def _no_cells(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
    return ()


class TimestampSource:
    """Microsecond write timestamps, strictly increasing on this node."""

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self._last = 0

    def next(self) -> int:
        now = int(self._clock() * 1_000_000)
        self._last = max(self._last + 1, now)
        return self._last


def single_node_replicas(stores: DataStores) -> Replicas:
    """A cluster of one: every token is on this node (in-process tests, tools)."""
    placement = ReplicaPlacement(uuid.UUID(int=0), "", Topology, Catalog, stores.tablet_maps)
    return Replicas(placement, LocalReplica(stores))


class WriteExecutor:
    """Builds mutations (timestamps, read-before-write) and hands them to the write coordinator."""

    def __init__(
        self, stores: DataStores, clock: Clock = time.time, replicas: Replicas | None = None
    ) -> None:
        self.stores = stores
        self.clock = clock
        self.timestamps = TimestampSource(clock)
        self.replicas = replicas if replicas is not None else single_node_replicas(stores)
        self.coordinator = WriteCoordinator(self.replicas)
        self.reads = ReadCoordinator(self.replicas)
        self._locks: weakref.WeakValueDictionary[tuple[str, bytes], asyncio.Lock]
        self._locks = weakref.WeakValueDictionary()
        """Held locks stay alive through their holders and waiters; idle ones are dropped."""

    def now_seconds(self) -> int:
        return int(self.clock())

    def current_cells(self, table: TableDef) -> CurrentCells:
        def read(key: bytes, token: int, ck: bytes, static: bool, column: str) -> Sequence[LiveCell]:
            store = self.stores.store(table, token)
            if static:
                data = store.read_partition(key, self.now_seconds(), limit=0)
                row = None if data is None else data.static_row
            else:
                data = store.read_partition(
                    key, self.now_seconds(), ClusteringSlice(Bound(ck), Bound(ck)), include_static=False
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
        carries its increment (``coordinator_counter`` adds it to the total). ``current``: where
        read-before-write operations read (default this node's stores; a Paxos round passes the
        replicas' reconciled partition).
        """
        ts = default_ts if default_ts is not None else self.timestamps.next()
        if current is None:
            current = _no_cells if deltas else self.current_cells(bound.table)
        return bound.mutations(ts, self.now_seconds(), current)

    def write(
        self, table: TableDef, mutations: Sequence[Mutation], cl: int = ONE, write_type: str = "SIMPLE"
    ) -> Awaitable[object]:
        """Write to the replicas at consistency ``cl`` (durable on each before it counts)."""
        return self.coordinator.write(table, mutations, cl, write_type)

    def lock(self, table: TableDef, key: bytes) -> asyncio.Lock:
        found = self._locks.get((table.id.hex, key))
        if found is None:
            found = self._locks[(table.id.hex, key)] = asyncio.Lock()
        return found
