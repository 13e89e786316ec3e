"""The topology barrier over real Raft drivers and loopback sockets: a member answers only once it
has applied everything committed before the question, with the version it then has."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.raft import RaftDriver
from tabletdb.node.group0_shell.topology_rpc import TopologyBarrier
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import ConfState, Entry, Snapshot


class Counter:
    """A state machine whose 'topology version' is the number of entries with data applied."""

    def __init__(self) -> None:
        self.version = 0

    def apply(self, entries: list[Entry]) -> None:
        for entry in entries:
            if entry.data:
                self.version += 1

    def install(self, snapshot: Snapshot) -> None:
        pass


def cut_off(rpcs: list[RpcNode], member: int) -> None:
    for rpc in rpcs:
        if rpc.node_id == member:
            for other in rpcs:
                rpc.faults.block(other.node_id)
        else:
            rpc.faults.block(member)


def test_a_member_answers_the_version_of_everything_committed_before_the_question(tmp_path: Path) -> None:
    async def main() -> None:
        rpcs = [RpcNode(i) for i in (1, 2, 3)]
        machines = [Counter() for _ in rpcs]
        drivers: list[RaftDriver] = []
        for rpc, machine in zip(rpcs, machines):
            await rpc.start()
            store = DurableLog.open(str(tmp_path / str(rpc.node_id)))
            store.bootstrap(ConfState(voters=frozenset({1, 2, 3})))
            drivers.append(
                RaftDriver(rpc.node_id, rpc, store, machine.apply, machine.install, lambda: lambda: b"")
            )
        for driver in drivers:
            await driver.start()
            for rpc in rpcs:
                driver.add_peer(rpc.node_id, "127.0.0.1", rpc.port)
        barriers = [TopologyBarrier(r, d, lambda m=m: m.version) for r, d, m in zip(rpcs, drivers, machines)]  # type: ignore[misc]
        for barrier in barriers:
            barrier.register()
        try:
            drivers[0].campaign()
            async with asyncio.timeout(30):
                while not drivers[0].is_leader:
                    await asyncio.sleep(0.01)
                cut_off(rpcs, 3)  # member 3 lags: it hears nothing while the entries commit
                for i in range(5):
                    drivers[0].propose(b"change %d" % i)
                await drivers[0].read_barrier()  # the five are committed and applied on the leader
                committed = machines[0].version
                assert committed >= 5 and machines[2].version < committed
                for rpc in rpcs:
                    rpc.faults.heal()
                # asked by the leader over RPC, each member answers at least what was committed,
                # the lagging one included: it catches up before it answers
                answers = [await barriers[0].ask(member) for member in (3, 2, 1)]
            assert all(answer >= committed for answer in answers), (answers, committed)
        finally:
            for driver in drivers:
                await driver.stop()
            for rpc in rpcs:
                await rpc.stop()

    asyncio.run(main())
