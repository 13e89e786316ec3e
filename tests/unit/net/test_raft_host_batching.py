"""RaftHost's batching switch: proposals arriving in one loop iteration share a Ready and an fsync
when batching is on, and each get their own when it is off (the benchmark's two modes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tabletdb.net.raft_host import RaftHost
from tabletdb.raft.types import Role

PROPOSALS = 20


async def _wait_leader(host: RaftHost) -> None:
    while host.raft is None or host.raft.role != Role.LEADER:
        await asyncio.sleep(host.tick_seconds)


async def _syncs_for_concurrent_proposals(directory: Path, batch: bool) -> tuple[int, list[int]]:
    host = RaftHost(1, str(directory), {1: ("127.0.0.1", 0)}, tick_seconds=0.005, batch=batch)
    await host.start()
    try:
        await asyncio.wait_for(_wait_leader(host), timeout=30)
        await asyncio.sleep(0.05)  # let the leader's no-op commit and the commit be persisted
        before = host.syncs
        data = [f"cmd-{i}".encode() for i in range(PROPOSALS)]
        indexes = await asyncio.gather(*(host._on_propose(0, d) for d in data))
        return host.syncs - before, list(indexes)
    finally:
        await host.stop()


@pytest.mark.parametrize("batch", [True, False])
def test_batching_switch_sets_fsyncs_per_proposal(tmp_path: Path, batch: bool) -> None:
    syncs, indexes = asyncio.run(_syncs_for_concurrent_proposals(tmp_path, batch))
    assert sorted(indexes) == list(range(indexes[0], indexes[0] + PROPOSALS)), "one entry per proposal"
    if batch:
        # One Ready appends all proposals; at most one more persists the commit index. Ticks
        # landing in between may add a hard-state write each, never one per proposal.
        assert syncs < PROPOSALS // 2, f"batching on: {syncs} fsyncs for {PROPOSALS} proposals"
    else:
        assert syncs >= PROPOSALS, f"batching off: {syncs} fsyncs for {PROPOSALS} proposals"
