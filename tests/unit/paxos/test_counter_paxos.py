"""Counter updates as Paxos rounds over three in-process replicas (real stores, in-memory network).

What the real-process tests cannot pin down: increments from three coordinators at once whose
failure detectors disagree, a commit at ALL reaching every replica before the client hears back,
Unavailable from too few live replicas, and WriteTimeout with write type COUNTER.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.coordinator.consistency import ALL, ONE, QUORUM
from tabletdb.coordinator.context import Timeouts
from tabletdb.cql import codec
from tabletdb.cql.errors import Unavailable, WriteTimeout
from tabletdb.cql.types import BIGINT
from tabletdb.dht.murmur3 import token_of
from tabletdb.group0.topology import raft_id_of
from tabletdb.paxos.service import PaxosService
from tabletdb.storage.mutation import Cell, Mutation, RowWrite
from tests.unit.coordinator.replica_cluster import Cluster, host
from tests.unit.paxos.test_paxos_service import EXPIRING, ROOMY, Network, _three_services

Setup = tuple[Cluster, Network, list[PaxosService]]
KEY = b"hits"


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    yield from _with_counter_timeout(_three_services(tmp_path, ROOMY), 60.0)


@pytest.fixture
def expiring(tmp_path: Path) -> Iterator[Setup]:
    yield from _with_counter_timeout(_three_services(tmp_path, EXPIRING), 0.8)


def _with_counter_timeout(services: Iterator[Setup], seconds: float) -> Iterator[Setup]:
    """A counter round's budget is the coordinator's counter write timeout (not the CAS ones)."""
    for setup in services:
        for replicas in setup[0].replicas:
            replicas.timeouts = Timeouts(counter_write=seconds)
        yield setup


def delta(n: int, ts: int = 1) -> Mutation:
    return Mutation(
        KEY, token_of(KEY), rows=(RowWrite(b"c", cells=(Cell("v", codec.serialize(BIGINT, n), ts),)),)
    )


def total_on(cluster: Cluster, i: int) -> int | None:
    data = cluster.local(i).read_partition(cluster.counter_table, KEY, token_of(KEY), now=0)
    return None if data is None else int(codec.deserialize(BIGINT, data.rows[0].cells_of("v")[0].value))


async def update(setup: Setup, i: int, n: int, cl: int) -> None:
    """Through node ``i``'s one counter coordinator, as a node has (its updates share rounds)."""
    cluster, _, services = setup
    await cluster.counters[i].update(cluster.counter_table, [delta(n)], cl, services[i])


@pytest.mark.parametrize("views", ["agree", "disagree"])
def test_concurrent_increments_from_every_coordinator_are_all_counted(setup: Setup, views: str) -> None:
    cluster, _, _ = setup
    if views == "disagree":  # a flap: each coordinator believes a different peer is down
        for i, replicas in enumerate(cluster.replicas):
            wrongly_down = raft_id_of(host((i + 1) % 3))
            replicas._is_up = lambda raft, wrongly_down=wrongly_down: raft != wrongly_down

    async def go() -> None:
        await asyncio.gather(*(update(setup, n % 3, n if n % 4 else -n, QUORUM) for n in range(1, 31)))

    asyncio.run(go())
    expected = sum(n if n % 4 else -n for n in range(1, 31))
    totals = [total_on(cluster, i) for i in range(3)]
    assert totals.count(expected) >= 2, totals  # a quorum holds it; the third may still be committing


def test_a_commit_at_all_is_on_every_replica_when_the_client_hears_back(setup: Setup) -> None:
    cluster, _, _ = setup
    asyncio.run(update(setup, 0, 5, ALL))
    asyncio.run(update(setup, 1, 2, ALL))
    assert [total_on(cluster, i) for i in range(3)] == [7, 7, 7]


def test_a_replica_that_missed_updates_is_caught_up_by_the_next_round(setup: Setup) -> None:
    cluster, net, _ = setup
    victim = raft_id_of(host(2))
    cluster.down.add(victim)
    net.down.add(victim)
    asyncio.run(update(setup, 0, 5, QUORUM))
    assert total_on(cluster, 2) is None
    cluster.down.clear()
    net.down.clear()
    asyncio.run(update(setup, 2, 1, ALL))  # node 2 coordinates, built on the quorum's total
    assert [total_on(cluster, i) for i in range(3)] == [6, 6, 6]


def test_fewer_than_a_quorum_alive_is_unavailable_even_at_one(setup: Setup) -> None:
    cluster, net, _ = setup
    down = {raft_id_of(host(1)), raft_id_of(host(2))}
    cluster.down |= down
    net.down |= down
    with pytest.raises(Unavailable) as info:
        asyncio.run(update(setup, 0, 1, ONE))
    assert (info.value.consistency, info.value.required, info.value.alive) == (QUORUM, 2, 1)
    with pytest.raises(Unavailable) as info:
        asyncio.run(update(setup, 0, 1, ALL))
    assert (info.value.consistency, info.value.required) == (ALL, 3)
    assert total_on(cluster, 0) is None


def test_replicas_that_never_answer_are_a_counter_write_timeout(expiring: Setup) -> None:
    _, net, _ = expiring
    net.hang |= {raft_id_of(host(1)), raft_id_of(host(2))}  # up as far as the failure detector knows
    with pytest.raises(WriteTimeout) as info:
        asyncio.run(update(expiring, 0, 1, QUORUM))
    assert (info.value.write_type, info.value.consistency) == ("COUNTER", QUORUM)
