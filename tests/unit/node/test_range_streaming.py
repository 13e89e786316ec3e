"""Vnode range stream and cleanup between nodes over real loopback sockets and real stores.

Three nodes (RpcNode + StorageService + the replica verbs each, in one process) and a vnode
table. A target pulls a range from its source and gets exactly that range (newer writes it
already had win); a node cleaned up keeps exactly the ranges it replicates in the ring of the
group0 state it applied, and refuses while it has not applied the version asked for.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from tabletdb.dht.murmur3 import token_of
from tabletdb.dht.ring import Location
from tabletdb.dht.token import TokenRange
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import Group0State
from tabletdb.group0.topology import NodeRecord, Topology, raft_id_of
from tabletdb.net.rpc import RemoteError, RpcNode
from tabletdb.node.range_streaming import RangeStreaming
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.verbs import ReplicaVerbs
from tabletdb.schema.model import SIMPLE, Catalog, KeyspaceDef, Replication
from tabletdb.schema.mutations import PutKeyspace, PutTable, apply_mutations
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.state import TopologyState, TopoNode
from tabletdb.topology.states import NodeState
from tabletdb.topology.vnode_phase import RangeCleanupTask, RangeStreamTask
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000
TABLE = table_def()
RF1 = Replication(SIMPLE, (("replication_factor", "1"),))
KEYS = [f"k{i}".encode() for i in range(200)]


def cluster_state(version: int = 3) -> ClusterState:
    catalog = apply_mutations(Catalog(), [PutKeyspace(KeyspaceDef("ks", RF1)), PutTable(TABLE)], uuid.uuid1())
    tokens = {host(i): tuple(-(1 << 62) + (i + 4 * k) * (1 << 59) for k in range(4)) for i in range(3)}
    members = {
        h: NodeRecord(h, "a", "a", "dc1", "r1", t, frozenset(), shard_count=2) for h, t in tokens.items()
    }
    nodes = {h: TopoNode(h, NodeState.NORMAL) for h in members}
    return ClusterState(
        Group0State(catalog=catalog),
        Topology("c", members),
        topology_state=TopologyState(nodes=nodes, version=version),
    )


class Nodes:
    def __init__(self, tmp: Path) -> None:
        self.state = cluster_state()
        self.applied = [self.state.topology_state.version] * 3
        self.rpcs = [RpcNode(raft_id_of(host(i))) for i in range(3)]
        self.storages = [StorageService(tmp / f"n{i}", host(i), 2, 12, dict) for i in range(3)]
        self.locals = [LocalReplica(s) for s in self.storages]
        tables = {TABLE.id: TABLE}
        self.ranges = [
            RangeStreaming(rpc, local, storage, tables.get, lambda: self.state, self._barrier(i))
            for i, (rpc, local, storage) in enumerate(zip(self.rpcs, self.locals, self.storages))
        ]

    def _barrier(self, i: int) -> Callable[[], Awaitable[int]]:
        async def barrier() -> int:
            return self.applied[i]

        return barrier

    async def start(self) -> None:
        for rpc, local, ranges in zip(self.rpcs, self.locals, self.ranges):
            await rpc.start()
            ranges.register()
            for verb, handler in ReplicaVerbs(local, {TABLE.id: TABLE}.get).handlers().items():
                rpc.register(verb, handler)
        for a in self.rpcs:
            for b in self.rpcs:
                if a is not b:
                    a.add_peer(b.node_id, "127.0.0.1", b.port)

    async def stop(self) -> None:
        for rpc in self.rpcs:
            await rpc.stop()
        for storage in self.storages:
            storage.close()

    async def write(self, node: int, key: bytes, value: bytes, ts: int) -> None:
        cell = Cell("v", value, ts)
        m = Mutation(key, token_of(key), rows=(RowWrite(b"c", marker=RowMarker(ts), cells=(cell,)),))
        await self.locals[node].apply_direct(TABLE, [m])

    def values(self, node: int, key: bytes) -> list[bytes | None]:
        data = self.locals[node].read_partition(TABLE, key, token_of(key), NOW)
        return [] if data is None else [c.value for r in data.rows for c in r.cells]


@asynccontextmanager
async def nodes(tmp: Path) -> AsyncIterator[Nodes]:
    cluster = Nodes(tmp)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def test_a_target_pulls_exactly_its_ranges_and_keeps_newer_writes(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            for key in KEYS:
                await c.write(0, key, b"old", 10)
            wanted = [TokenRange(-(1 << 62), 0), TokenRange(1 << 61, 1 << 62)]
            inside = [k for k in KEYS if any(r.contains(token_of(k)) for r in wanted)]
            assert 0 < len(inside) < len(KEYS)
            await c.write(2, inside[0], b"newer", 20)  # a write both rings took meanwhile
            task = RangeStreamTask((uuid.uuid1(), TABLE.id, host(2)), tuple((r, (host(0),)) for r in wanted))
            assert await c.ranges[1].stream(task) == len(inside)  # asked by another node
            assert c.values(2, inside[0]) == [b"newer"]
            assert all(c.values(2, k) == [b"old"] for k in inside[1:])
            assert all(c.values(2, k) == [] for k in KEYS if k not in inside)

    asyncio.run(main())


def test_cleanup_keeps_exactly_the_replicated_ranges(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            for key in KEYS:  # everything, as if node 0 had owned every range before
                await c.write(0, key, b"v", 10)
            members = c.state.topology.members
            ring = {h: r.tokens for h, r in members.items()}
            owned = vr.owned_ranges(ring, host(0), RF1, {h: Location("dc1", "r1") for h in members})
            mine = [k for k in KEYS if any(r.contains(token_of(k)) for r in owned)]
            assert 0 < len(mine) < len(KEYS)
            removed = await c.ranges[1].cleanup(RangeCleanupTask(host(0), c.state.topology_state.version))
            assert removed == len(KEYS) - len(mine)
            assert all(c.values(0, k) == ([b"v"] if k in mine else []) for k in KEYS)

    asyncio.run(main())


def test_cleanup_waits_for_the_version_and_refuses_on_a_node_owning_nothing(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            for key in KEYS:
                await c.write(0, key, b"v", 10)
            version = c.state.topology_state.version
            c.applied[0] = version - 1
            with pytest.raises(RemoteError, match="has applied"):
                await c.ranges[1].cleanup(RangeCleanupTask(host(0), version))
            assert all(c.values(0, k) == [b"v"] for k in KEYS)
            # a node that owns no tokens (a state where it is not an owner) refuses to clean
            c.applied[0] = version
            topo = c.state.topology_state
            c.state = replace(
                c.state,
                topology_state=topo.with_node(TopoNode(host(0), NodeState.BOOTSTRAPPING)),
            )
            with pytest.raises(RemoteError, match="owns no tokens"):
                await c.ranges[1].cleanup(RangeCleanupTask(host(0), version))
            assert all(c.values(0, k) == [b"v"] for k in KEYS)

    asyncio.run(main())
