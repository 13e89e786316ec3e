"""When group0 snapshots: every N entries, and not before the log since the last snapshot is as
big as that snapshot, so the cost of encoding the whole state stays constant per byte logged."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.raft import RaftDriver
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import ConfState, Entry, Snapshot

STATE_BYTES = 5_000
ENTRY_BYTES = 100


def _snapshot_indexes(directory: Path, by_size: bool, entries: int) -> list[int]:
    """Propose `entries` entries of ENTRY_BYTES on a lone voter; the indexes snapshots were taken at."""

    async def go() -> list[int]:
        store = DurableLog.open(str(directory))
        store.bootstrap(ConfState(voters=frozenset({1})))
        taken: list[int] = []

        def applied(_entries: list[Entry]) -> None:
            pass

        def installed(_snapshot: Snapshot) -> None:
            pass

        driver = RaftDriver(
            1, RpcNode(1), store, applied, installed, lambda: lambda: b"s" * STATE_BYTES, snapshot_every=10
        )
        driver.snapshot_by_size = by_size
        driver.campaign()
        for _ in range(entries):
            driver.propose(b"e" * ENTRY_BYTES)
            if driver._snapshotting is not None:
                await driver._snapshotting  # encoded in a worker thread: let it land
                driver._snapshotting = None
                taken.append(store.snapshot_meta.index)
        store.sync()
        return taken

    return asyncio.run(go())


def test_snapshots_wait_for_as_much_log_as_the_last_snapshot_holds(tmp_path: Path) -> None:
    taken = _snapshot_indexes(tmp_path, by_size=True, entries=120)
    # the first by count alone; then every 5,000 bytes of entries (50 of them)
    assert len(taken) == 3
    assert [b - a for a, b in itertools.pairwise(taken)] == [50, 50]


def test_a_fixed_interval_snapshots_by_count_alone(tmp_path: Path) -> None:
    taken = _snapshot_indexes(tmp_path, by_size=False, entries=45)
    assert [b - a for a, b in itertools.pairwise(taken)] == [10, 10, 10]
