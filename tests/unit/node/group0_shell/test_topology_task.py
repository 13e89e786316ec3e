"""The topology task carries a decommission through to the end: real tablet streaming and cleanup
between three nodes' stores over loopback sockets, every step applied by group0's own entry
encoding and apply. Group0 itself is one in-process value here (Raft and the barrier's read
barrier are tested on their own, ``test_topology_barrier``)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from tabletdb.group0.cluster_state import ClusterState, TopologyEntry, apply_entry, decode_entry, encode_entry
from tabletdb.group0.state import Group0State
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.node.group0_shell import topology_task
from tabletdb.node.group0_shell.topology_task import TopologyIo, TopologyTask
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.tablets.tablet_map import TabletInfo, TransitionStage
from tabletdb.topology import coordinator as co
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.requests import enqueue
from tabletdb.topology.state import Request, TopologyState, TopoNode
from tabletdb.topology.states import NodeState, RequestKind
from tests.unit.coordinator.replica_cluster import host
from tests.unit.node.test_tablet_streaming import TABLE, Nodes, nodes


def index_of(h: uuid.UUID) -> int:
    return (h.int >> 100) - 1


class Group0:
    """The cluster's group0 value, changed only by encoded entries through ``apply_entry``."""

    def __init__(self, cluster: Nodes) -> None:
        self.cluster = cluster
        members = {
            host(i): NodeRecord(
                host(i), "127.0.0.1", "127.0.0.1", "dc1", f"r{i}", (), frozenset(), shard_count=1
            )
            for i in range(3)
        }
        topology = TopologyState(
            state_id=uuid.uuid1(), nodes={h: TopoNode(h, NodeState.NORMAL) for h in members}
        )
        self.state = ClusterState(
            metadata=Group0State(tablets=FrozenMap(cluster.maps.items())),
            topology=Topology("c", members),
            topology_state=topology,
        )
        self.refused = 0
        self._waiting: list[asyncio.Event] = []

    async def submit(self, command: TopologyCommand) -> None:
        before = self.state.topology_state.state_id
        self.state, _ = apply_entry(self.state, decode_entry(encode_entry(TopologyEntry(command))))
        self.refused += self.state.topology_state.state_id == before
        self.cluster.maps = dict(self.state.metadata.tablets)  # what every node's stores follow
        for waiting in self._waiting:
            waiting.set()
        self._waiting.clear()

    async def changed(self) -> None:
        """Until the next entry is applied (as ``RaftDriver.changed``)."""
        waiting = asyncio.Event()
        self._waiting.append(waiting)
        await waiting.wait()


def io_for(cluster: Nodes, group0: Group0, coordinator: int) -> TopologyIo:
    verbs = cluster.streaming[coordinator]

    async def barrier(h: uuid.UUID) -> int:
        return group0.state.topology_state.version

    async def stream(task: co.StreamTask) -> object:
        _, table_id, tablet_id = task.key
        sources = [index_of(s.host) + 1 for s in task.sources]
        return await verbs.stream(index_of(task.target.host) + 1, table_id, tablet_id, sources)

    async def cleanup(task: co.CleanupTask) -> object:
        _, table_id, tablet_id = task.key
        return await verbs.cleanup(index_of(task.replica.host) + 1, table_id, tablet_id, task.replica.shard)

    return TopologyIo(
        lambda: True, lambda: group0.state, lambda h: True, barrier, stream, cleanup, group0.submit
    )


def test_a_decommission_moves_every_replica_off_the_node_and_cleans_it_up(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = [f"key-{i}".encode() for i in range(40)]
            for n, key in enumerate(keys):
                _, owners, _ = c.tablet_of(key)
                for owner in owners:
                    await c.write(owner, key, b"v%d" % n, 10)
            leaving = host(2)
            held = [p for p in c.storages[2].local_files(TABLE) if p.path.exists()]
            assert held  # the node holds data to move
            group0 = Group0(c)
            request = Request(uuid.uuid1(), RequestKind.LEAVE, leaving)
            alive = frozenset(group0.state.topology_state.nodes)
            await group0.submit(enqueue(group0.state.topology_state, request, alive, uuid.uuid1()))
            task = TopologyTask(io_for(c, group0, coordinator=0))
            actions: list[co.Action] = []
            async with asyncio.timeout(120):
                while not isinstance(action := await task.step_once(), co.Idle):
                    actions.append(action)
            topo = group0.state.topology_state
            assert topo.state_of(leaving) is NodeState.LEFT
            assert [r.request.request_id for r in topo.results] == [request.request_id]
            assert topo.results[0].error == ""
            assert group0.refused == 0 and topo.fence_version > 0
            assert any(isinstance(a, co.Stream) for a in actions)
            tm = group0.state.metadata.tablets[TABLE.id]
            assert all(
                leaving not in {r.host for r in t.replicas} and not t.in_transition for t in tm.tablets
            )
            for n, key in enumerate(keys):
                _, owners, _ = c.tablet_of(key)
                assert [c.values(o, key) for o in owners] == [[b"v%d" % n]] * 2, key
            assert not any(p.path.exists() for p in held)  # cleaned up

    asyncio.run(main())


def test_a_task_that_loses_leadership_forgets_what_it_observed(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            group0 = Group0(c)
            request = Request(uuid.uuid1(), RequestKind.LEAVE, host(2))
            alive = frozenset(group0.state.topology_state.nodes)
            await group0.submit(enqueue(group0.state.topology_state, request, alive, uuid.uuid1()))
            leading = [True]
            io = io_for(c, group0, coordinator=0)
            task = TopologyTask(TopologyIo(lambda: leading[0], *list(io.__dict__.values())[1:]))
            stop = asyncio.Event()
            runner = asyncio.create_task(task.run(stop))
            async with asyncio.timeout(60):
                while task.obs.barrier_version < 1:
                    await asyncio.sleep(0.01)
                leading[0] = False
                while task.obs.barrier_version != -1:
                    await asyncio.sleep(0.01)
                stop.set()
                await runner

    asyncio.run(main())


def test_an_idle_coordinator_starts_a_request_as_soon_as_group0_applies_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle, the task waits for group0's next change rather than a timer: with the timer an hour
    long, a decommission queued meanwhile still runs to its end."""
    monkeypatch.setattr(topology_task, "IDLE_WAIT", 3600.0)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            group0 = Group0(c)
            idle = asyncio.Event()

            async def changed() -> None:
                idle.set()
                await group0.changed()

            task = TopologyTask(replace(io_for(c, group0, coordinator=0), changed=changed))
            stop = asyncio.Event()
            runner = asyncio.create_task(task.run(stop))
            try:
                async with asyncio.timeout(60):
                    await idle.wait()  # it stepped, found nothing to do, and waits
                    request = Request(uuid.uuid1(), RequestKind.LEAVE, host(2))
                    alive = frozenset(group0.state.topology_state.nodes)
                    await group0.submit(enqueue(group0.state.topology_state, request, alive, uuid.uuid1()))
                    while group0.state.topology_state.state_of(host(2)) is not NodeState.LEFT:
                        await asyncio.sleep(0.01)
            finally:
                stop.set()
                await runner

    asyncio.run(main())


def test_a_rolled_back_decommission_deletes_the_copies_it_streamed_to_its_targets(tmp_path: Path) -> None:
    """The leaving node dies after streaming, before reads switched: every move is reverted and
    the targets' files of the tablets they were filled with are deleted (cleanup_target)."""

    async def main() -> None:
        async with nodes(tmp_path) as c:
            for n in range(40):
                key = f"key-{n}".encode()
                _, owners, _ = c.tablet_of(key)
                for owner in owners:
                    await c.write(owner, key, b"v", 10)
            before = {i: _files(c, i) for i in (0, 1)}
            group0 = Group0(c)
            leaving = host(2)
            request = Request(uuid.uuid1(), RequestKind.LEAVE, leaving)
            alive = frozenset(group0.state.topology_state.nodes)
            await group0.submit(enqueue(group0.state.topology_state, request, alive, uuid.uuid1()))
            dead: set[uuid.UUID] = set()
            now = [0]
            io = io_for(c, group0, coordinator=0)
            io = TopologyIo(io.is_leader, io.state, lambda h: h not in dead, *list(io.__dict__.values())[3:])
            task = TopologyTask(io, co.CoordinatorConfig(rollback_after_ms=1_000), clock_ms=lambda: now[0])
            async with asyncio.timeout(120):
                while not any(t.stage is TransitionStage.STREAMING for t in _tablets(group0)):
                    await task.step_once()
                assert isinstance(await task.step_once(), co.Barrier)  # every node is at streaming
                dead.add(leaving)  # seen down from now on; its files are still read by the stream
                assert isinstance(await task.step_once(), co.Stream)
                copies = {i: _files(c, i) - before[i] for i in (0, 1)}
                assert any(copies.values())  # the targets hold streamed copies
                now[0] = 5_000  # down long enough: roll back (reads have not switched)
                actions = []
                while not isinstance(action := await task.step_once(), co.Idle):
                    actions.append(action)
            topo = group0.state.topology_state
            assert "rolled back" in topo.results[-1].error and topo.state_of(leaving) is NodeState.NORMAL
            assert any(isinstance(a, co.Cleanup) for a in actions)
            for i in (0, 1):
                assert not any(p.exists() for p in copies[i]), f"node {i} kept a partial copy"
                assert all(p.exists() for p in before[i])  # its own replicas stay

    asyncio.run(main())


def _files(c: Nodes, i: int) -> set[Path]:
    return {p.path for p in c.storages[i].local_files(TABLE) if p.path.exists()}


def _tablets(group0: Group0) -> tuple[TabletInfo, ...]:
    return tuple(group0.state.metadata.tablets[TABLE.id].tablets)


def test_tablet_sizes_are_polled_only_when_a_round_may_start_and_then_at_most_every_ten_seconds(
    tmp_path: Path,
) -> None:
    """Bounded staleness without a poll per step: again after ``SIZES_MAX_AGE_S`` or when the
    tablet maps changed, never while balancing is off or a transition runs."""
    from dataclasses import replace as with_

    from tabletdb.node.group0_shell.topology_task import SIZES_MAX_AGE_S

    async def main() -> None:
        async with nodes(tmp_path) as c:
            group0 = Group0(c)
            polls: list[int] = []
            sizes = {(TABLE.id, t): 1000 for t in range(4)}  # equal: nothing to move

            async def tablet_sizes() -> dict[tuple[uuid.UUID, int], int]:
                polls.append(now[0])
                return sizes

            now = [0]
            io = with_(io_for(c, group0, coordinator=0), tablet_sizes=tablet_sizes)
            task = TopologyTask(io, clock_ms=lambda: now[0])
            for t in (0, 500, 9_000):
                now[0] = t
                assert isinstance(await task.step_once(), co.Idle)
            assert polls == [0]
            now[0] = int(SIZES_MAX_AGE_S * 1000)
            await task.step_once()
            assert polls == [0, now[0]]
            maps = dict(group0.state.metadata.tablets)  # a new maps value, as after a move
            group0.state = with_(
                group0.state, metadata=with_(group0.state.metadata, tablets=FrozenMap(maps.items()))
            )
            now[0] += 1
            await task.step_once()
            assert polls[-1] == now[0]
            group0.state = with_(group0.state, balancing_enabled=False)
            now[0] += 60_000
            assert isinstance(await task.step_once(), co.Idle)
            assert len(polls) == 3

    asyncio.run(main())
