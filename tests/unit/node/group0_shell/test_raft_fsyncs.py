"""group0's Raft shell handles each proposal on arrival: concurrent proposals get one log entry
each, in order, and one Ready and one fsync each (no batching of proposals across a loop
iteration; group0 batches DDL above the shell, `node.group0_shell.batch`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.raft import RaftDriver
from tabletdb.raft.types import ConfState, Entry
from tests.harness.raft_member import TimedLog

PROPOSALS = 20


async def _syncs_for_concurrent_proposals(directory: Path) -> tuple[int, list[int]]:
    store = TimedLog(str(directory))
    store.bootstrap(ConfState(voters=frozenset({1})))
    indexes: dict[bytes, int] = {}
    applied = asyncio.Event()

    def apply(entries: list[Entry]) -> None:
        indexes.update((e.data, e.index) for e in entries if e.data)
        if len(indexes) == PROPOSALS:
            applied.set()

    driver = RaftDriver(1, RpcNode(1), store, apply, lambda _s: None, lambda: lambda: b"")
    await driver.start()
    try:
        driver.campaign()  # a lone voter: leader at once, its no-op committed and persisted
        assert driver.is_leader
        before = store.syncs
        data = [f"cmd-{i}".encode() for i in range(PROPOSALS)]
        for d in data:  # all in one event-loop iteration, as concurrent RPCs would arrive
            driver.propose(d)
        await asyncio.wait_for(applied.wait(), timeout=30)
        return store.syncs - before, [indexes[d] for d in data]
    finally:
        await driver.stop()


def test_each_proposal_gets_its_own_entry_and_fsync(tmp_path: Path) -> None:
    syncs, indexes = asyncio.run(_syncs_for_concurrent_proposals(tmp_path))
    assert sorted(indexes) == list(range(indexes[0], indexes[0] + PROPOSALS)), "one entry per proposal"
    assert syncs >= PROPOSALS, f"{syncs} fsyncs for {PROPOSALS} proposals"
