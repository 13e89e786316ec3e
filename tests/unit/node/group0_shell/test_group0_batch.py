"""The per-node DDL batcher: one turn and one Raft entry for every change waiting, decided on
chained states; invalid changes fail alone, stale ones are re-decided in the next turn."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from tabletdb.cql.consistency import QUORUM
from tabletdb.cql.errors import AlreadyExists, WriteTimeout
from tabletdb.cql.types import INT
from tabletdb.group0.cluster_state import Applied, BatchEntry, ClusterState, SchemaEntry, apply_entry
from tabletdb.group0.state import SchemaCommand
from tabletdb.node.group0_shell.batch import DdlBatcher
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.model import Catalog
from tests.unit.schema.helpers import with_keyspace


class FakeTurns:
    def __init__(self) -> None:
        self.taken = 0
        self.released = 0
        self.gate: asyncio.Event | None = None
        """When set, turns are granted only once the test opens it."""

    async def acquire(self) -> tuple[bytes, int | None, int]:
        if self.gate is not None:
            await self.gate.wait()
        self.taken += 1
        return b"turn", None, 0

    async def release(self, token: bytes, leader: int | None) -> None:
        self.released += 1

    async def keep(self, token: bytes, leader: int | None) -> None:
        return None


class Cluster:
    """group0 reduced to its state: submitted entries apply in order, as Raft would."""

    def __init__(self) -> None:
        catalog = with_keyspace(None, "ks")
        self.state = ClusterState()
        first = SchemaCommand(self.state.state_id, uuid.uuid1(), _mutations_of(catalog))
        self.state, _ = apply_entry(self.state, SchemaEntry(first, ()))
        self.batches: list[int] = []
        self.competitor: list[SchemaEntry] = []

    async def submit(self, entries: Sequence[SchemaEntry]) -> list[Applied]:
        for entry in self.competitor:  # another node's change lands first
            self.state, _ = apply_entry(self.state, entry)
        self.competitor = []
        self.batches.append(len(entries))
        entry: Any = entries[0] if len(entries) == 1 else BatchEntry(tuple(entries))
        self.state, outcomes = apply_entry(self.state, entry)
        return list(outcomes)


def _mutations_of(catalog: Catalog) -> Any:
    from tabletdb.schema.mutations import PutKeyspace

    return (PutKeyspace(catalog.keyspaces["ks"].definition),)


def _create(name: str) -> Any:
    def decide(catalog: Catalog) -> DdlOutcome:
        return create_table(catalog, "ks", name, [("k", INT, False)], ["k"], new_id=uuid.uuid4())

    return decide


def _batcher(cluster: Cluster, turns: FakeTurns) -> DdlBatcher:
    async def applied(index: int) -> None:
        return None

    return DdlBatcher(lambda: cluster.state, turns, applied, cluster.submit, None)  # type: ignore[arg-type]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_waiting_changes_share_one_turn_and_one_entry() -> None:
    cluster, turns = Cluster(), FakeTurns()

    async def go() -> None:
        batcher = _batcher(cluster, turns)
        await asyncio.gather(*(batcher.change(_create(f"t{i}"), 10) for i in range(5)))

    run(go())
    assert cluster.batches == [5] and turns.taken == turns.released == 1
    assert set(cluster.state.metadata.catalog.keyspaces["ks"].tables) == {f"t{i}" for i in range(5)}


def test_a_change_invalid_on_the_state_before_it_fails_alone() -> None:
    cluster, turns = Cluster(), FakeTurns()

    async def go() -> list[Any]:
        batcher = _batcher(cluster, turns)
        changes = [_create("a"), _create("a"), _create("b")]
        return await asyncio.gather(*(batcher.change(c, 10) for c in changes), return_exceptions=True)

    first, second, third = run(go())
    assert isinstance(first, DdlOutcome) and isinstance(third, DdlOutcome)
    assert isinstance(second, AlreadyExists)
    assert cluster.batches == [2]
    assert set(cluster.state.metadata.catalog.keyspaces["ks"].tables) == {"a", "b"}


def test_changes_that_went_stale_are_decided_again_on_the_newer_state() -> None:
    cluster, turns = Cluster(), FakeTurns()
    before = cluster.state
    theirs = create_table(
        before.metadata.catalog, "ks", "theirs", [("k", INT, False)], ["k"], new_id=uuid.uuid4()
    )
    cluster.competitor = [SchemaEntry(SchemaCommand(before.state_id, uuid.uuid1(), theirs.mutations), ())]

    async def go() -> None:
        batcher = _batcher(cluster, turns)
        await asyncio.gather(batcher.change(_create("x"), 10), batcher.change(_create("y"), 10))

    run(go())
    assert cluster.batches == [2, 2] and turns.taken == 2
    assert set(cluster.state.metadata.catalog.keyspaces["ks"].tables) == {"theirs", "x", "y"}


def test_a_client_that_gave_up_is_not_decided_later() -> None:
    cluster, turns = Cluster(), FakeTurns()

    async def go() -> None:
        batcher = _batcher(cluster, turns)
        turns.gate = asyncio.Event()  # the leader is slow to grant a turn
        with pytest.raises(WriteTimeout, match=r"not applied within 0\.05s: still waiting for its turn"):
            await batcher.change(_create("late"), 0.05)
        turns.gate.set()
        await batcher.change(_create("next"), 10)

    run(go())
    assert set(cluster.state.metadata.catalog.keyspaces["ks"].tables) == {"next"}


def test_a_timeout_is_a_write_timeout_naming_what_the_change_waited_for() -> None:
    """Not a TimeoutError (the protocol layer would answer ServerError): a WriteTimeout at QUORUM
    of the voters, SIMPLE, whose message says whether the change may still take effect."""
    cluster, turns = Cluster(), FakeTurns()
    committing = asyncio.Event()
    release = asyncio.Event()
    submit = cluster.submit

    async def slow_submit(entries: Sequence[SchemaEntry]) -> list[Applied]:
        committing.set()
        await release.wait()  # group0 is slow to commit the entry
        return await submit(entries)

    async def applied(index: int) -> None:
        return None

    async def go() -> tuple[WriteTimeout, WriteTimeout]:
        batcher = DdlBatcher(lambda: cluster.state, turns, applied, slow_submit, None, lambda: 2)  # type: ignore[arg-type]
        first = asyncio.ensure_future(batcher.change(_create("slow"), 0.5))
        await committing.wait()
        with pytest.raises(WriteTimeout) as behind:  # queued behind the batch being committed
            await batcher.change(_create("behind"), 0.05)
        with pytest.raises(WriteTimeout) as proposed:
            await first
        release.set()
        await asyncio.sleep(0.05)
        return behind.value, proposed.value

    behind, proposed = run(go())
    assert "still waiting for its turn for schema changes from the group0 leader, behind a batch of 1" in str(
        behind
    )
    assert "still waiting for group0 to commit and apply its entry (it may still take effect" in str(proposed)
    for error in (behind, proposed):
        assert (error.consistency, error.received, error.block_for, error.write_type) == (
            QUORUM,
            0,
            2,
            "SIMPLE",
        )
    # the proposed change did take effect once group0 applied it; the queued one never was decided
    assert set(cluster.state.metadata.catalog.keyspaces["ks"].tables) == {"slow"}
