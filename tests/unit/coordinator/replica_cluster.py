"""Several replicas in one process: real stores, real coordinators, an in-memory transport.

Each node has its own ``StorageService`` in its own directory and its own ``Replicas``; the
transport hands requests to the target node's ``ReplicaVerbs`` after a msgpack round trip (so
payloads must be wire-clean). Nodes can be marked down (the failure detector's view), made to
refuse connections, or to never answer.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgpack

from tabletdb.coordinator.context import Replicas, Timeouts
from tabletdb.coordinator.executor import PartitionLocks, ServerClock, WriteExecutor
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.cql.types import BLOB, COUNTER, CqlType
from tabletdb.dht.ring import random_tokens
from tabletdb.group0.topology import NodeRecord, Topology, raft_id_of
from tabletdb.paxos.counters import CounterCoordinator
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.verbs import ReplicaVerbs
from tabletdb.schema.model import (
    NTS,
    Catalog,
    ColumnDef,
    ColumnKind,
    KeyspaceDef,
    KeyspaceTablets,
    Replication,
    TableDef,
)
from tabletdb.schema.mutations import PutKeyspace, PutTable, apply_mutations
from tabletdb.tablets.allocation import NodeCapacity, new_tablet_map
from tabletdb.tablets.tablet_map import TabletMap

DC = "dc1"


def host(i: int) -> uuid.UUID:
    """Host ids whose top 63 bits (the RPC ids) differ."""
    return uuid.UUID(int=(i + 1) << 100 | 7)


def table_def(keyspace: str = "ks", name: str = "t", value_type: CqlType = BLOB) -> TableDef:
    columns = (
        ColumnDef("k", BLOB, ColumnKind.PARTITION_KEY, 0),
        ColumnDef("c", BLOB, ColumnKind.CLUSTERING, 0),
        ColumnDef("v", value_type, ColumnKind.REGULAR),
    )
    return TableDef(keyspace, name, uuid.uuid5(uuid.NAMESPACE_OID, keyspace + name), columns)


class FakeNet:
    """The Transport: routes calls to in-process nodes; ``refuse``/``hang`` simulate failures."""

    def __init__(self) -> None:
        self.verbs: dict[int, ReplicaVerbs] = {}
        self.refuse: set[int] = set()
        self.hang: set[int] = set()
        self.calls: list[tuple[int, str]] = []

    async def call(self, peer: int, verb: str, payload: Any = None, timeout: float = 5.0) -> Any:
        async with asyncio.timeout(timeout):  # as RpcNode.call does
            return await self._call(peer, verb, payload)

    async def _call(self, peer: int, verb: str, payload: Any) -> Any:
        self.calls.append((peer, verb))
        if peer in self.refuse:
            raise ConnectionRefusedError(f"node {peer} refused the connection")
        if peer in self.hang:
            await asyncio.Event().wait()
        wire = msgpack.unpackb(msgpack.packb(payload, use_bin_type=True), raw=False)
        reply = await self.verbs[peer].handlers()[verb](0, wire)
        return msgpack.unpackb(msgpack.packb(reply, use_bin_type=True), raw=False)


class Cluster:
    def __init__(self, workdir: Path, size: int, rf: int, *, tablets: bool, timeouts: Timeouts) -> None:
        rng = random.Random(size * 31 + rf)
        taken: set[int] = set()
        members = {}
        for i in range(size):
            tokens = random_tokens(rng, 8, taken)
            taken.update(tokens)
            h = host(i)
            members[h] = NodeRecord(
                h, f"127.0.0.{i + 1}", f"127.0.0.{i + 1}", DC, f"r{i}", tuple(tokens), frozenset()
            )
        self.topology = Topology("test", members)
        self.table = table_def()
        self.counter_table = table_def(name="counts", value_type=COUNTER)
        ks = KeyspaceDef("ks", Replication(NTS, ((DC, str(rf)),)), tablets=KeyspaceTablets(tablets))
        puts = [PutKeyspace(ks), PutTable(self.table), PutTable(self.counter_table)]
        self.catalog = apply_mutations(Catalog(), puts, uuid.uuid1())
        self.maps: Mapping[uuid.UUID, TabletMap] = {}
        if tablets:
            nodes = [NodeCapacity(h, DC, r.rack, 2) for h, r in members.items()]
            self.maps = {
                t.id: new_tablet_map(t.id, 4, {DC: rf}, nodes) for t in (self.table, self.counter_table)
            }
        self.net = FakeNet()
        self.down: set[int] = set()
        self.stores: list[StorageService] = []
        self.replicas: list[Replicas] = []
        self.versions = [0] * size
        """Each node's topology version as its coordinator stamps it on writes."""
        self.fences = [0] * size
        """Each node's fence version: its replica refuses writes stamped below it."""
        self.counters: list[CounterCoordinator] = []
        for i in range(size):
            storage = StorageService(workdir / f"n{i}", host(i), 2, 12, lambda: self.maps)
            placement = ReplicaPlacement(
                host(i),
                DC,
                lambda: self.topology,
                lambda: self.catalog,
                lambda: self.maps,
                lambda i=i: self.versions[i],  # type: ignore[misc]
            )
            local = LocalReplica(storage)
            replicas = Replicas(placement, local, self.net, lambda raft: raft not in self.down, timeouts)
            self.net.verbs[raft_id_of(host(i))] = ReplicaVerbs(
                local,
                self.catalog.by_id,
                lambda i=i: self.fences[i],  # type: ignore[misc]
            )
            self.counters.append(_counters(storage, replicas))
            self.stores.append(storage)
            self.replicas.append(replicas)

    def writer(self, i: int) -> WriteCoordinator:
        return WriteCoordinator(self.replicas[i])

    def reader(self, i: int) -> ReadCoordinator:
        return ReadCoordinator(self.replicas[i])

    def local(self, i: int) -> LocalReplica:
        return self.replicas[i].local

    def close(self) -> None:
        for s in self.stores:
            s.close()


def _counters(storage: StorageService, replicas: Replicas) -> CounterCoordinator:
    """One node's counter coordinator, wired as a node wires it (its updates share rounds)."""
    clock, locks = ServerClock(), PartitionLocks()
    writer = WriteExecutor(storage, clock)
    writes = WriteCoordinator(replicas)
    return CounterCoordinator(
        replicas, writes, writer.current_cells, locks.lock, clock.timestamp, clock.now_seconds
    )
