"""The Paxos shell over three in-process replicas: real stores and acceptor files, an in-memory network.

Covers what the pure simulation cannot: the verbs' wire form, the per-key acceptor lock, commits
reaching every replica's base table, Unavailable from the failure detector's view and WriteTimeout
(CAS) when replicas never answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgpack
import pytest

from tabletdb.coordinator.context import Timeouts
from tabletdb.cql.consistency import LOCAL_SERIAL, SERIAL
from tabletdb.cql.errors import Unavailable, WriteTimeout
from tabletdb.dht.murmur3 import token_of
from tabletdb.group0.topology import raft_id_of
from tabletdb.net.rpc import Handler
from tabletdb.paxos.messages import Ballot
from tabletdb.paxos.rounds import Reconciler, encode_mutations
from tabletdb.paxos.service import PaxosService, PaxosTimeouts
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletReplica, TransitionStage
from tests.unit.coordinator.replica_cluster import Cluster, host

KEY = b"partition"
TOKEN = token_of(KEY)


class Network:
    """Routes `call` to the peer's registered handler after a msgpack round trip."""

    def __init__(self) -> None:
        self.handlers: dict[int, dict[str, Handler]] = {}
        self.down: set[int] = set()
        self.hang: set[int] = set()

    def node(self, node_id: int) -> FakeRpc:
        self.handlers[node_id] = {}
        return FakeRpc(self, node_id)


class FakeRpc:
    def __init__(self, net: Network, node_id: int) -> None:
        self.net, self.node_id = net, node_id

    def register(self, verb: str, handler: Handler) -> None:
        self.net.handlers[self.node_id][verb] = handler

    async def call(self, peer: int, verb: str, payload: Any = None, timeout: float = 5.0) -> Any:
        if peer in self.net.down:
            raise ConnectionRefusedError(f"node {peer} is down")
        if peer in self.net.hang:
            await asyncio.sleep(timeout)
            raise TimeoutError(f"node {peer} did not answer")
        wire = msgpack.unpackb(msgpack.packb(payload, use_bin_type=True), raw=False)
        reply = await self.net.handlers[peer][verb](self.node_id, wire)
        return msgpack.unpackb(msgpack.packb(reply, use_bin_type=True), raw=False)


ROOMY = PaxosTimeouts(cas_contention=30.0, write=30.0)
"""For transactions that must finish: each accept and commit fsyncs, seconds on a busy disk."""
EXPIRING = PaxosTimeouts(cas_contention=0.5, write=0.3)
"""For the test whose replicas never answer: nothing has to arrive within it."""


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Cluster, Network, list[PaxosService]]]:
    yield from _three_services(tmp_path, ROOMY)


@pytest.fixture
def expiring(tmp_path: Path) -> Iterator[tuple[Cluster, Network, list[PaxosService]]]:
    yield from _three_services(tmp_path, EXPIRING)


def _three_services(
    tmp_path: Path, timeouts: PaxosTimeouts
) -> Iterator[tuple[Cluster, Network, list[PaxosService]]]:
    cluster = Cluster(tmp_path, 3, 3, tablets=True, timeouts=Timeouts())
    net = Network()
    services = []
    for i, replicas in enumerate(cluster.replicas):
        rpc = net.node(raft_id_of(host(i)))
        service = PaxosService(
            rpc,
            str(tmp_path / f"paxos-{i}.db"),
            cluster.catalog.by_id,
            replicas,
            replicas.local.apply,
            timeouts,
        )
        service.register()
        services.append(service)
    yield cluster, net, services
    for s in services:
        s.close()
    cluster.close()


def insert_if_absent(value: bytes, seen: list[bytes | None]) -> Any:
    """An on_read for INSERT ... IF NOT EXISTS of (KEY, c=b'', v=value) stamped with the ballot."""
    reconciler = Reconciler()

    def on_read(ballot: Ballot, reads: Sequence[bytes | None]) -> bytes | None:
        with reconciler.reconciled(reads) as store:
            data = None if store is None else store.read_partition(KEY, now=0)
            current = None if data is None else data.rows[0].cells_of("v")[0].value
        seen.append(current)
        if current is not None:
            return None
        ts = ballot.micros
        row = RowWrite(b"", marker=RowMarker(ts), cells=(Cell("v", value, ts),))
        return encode_mutations([Mutation(KEY, TOKEN, rows=(row,))])

    return on_read


def stored(cluster: Cluster, i: int) -> bytes | None:
    data = cluster.local(i).read_partition(cluster.table, KEY, TOKEN, now=0)
    return None if data is None else data.rows[0].cells_of("v")[0].value


async def every_replica_stored(cluster: Cluster) -> None:
    """Until all three base tables hold a value (or 30 s pass; the caller's asserts then explain)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(30):
            while any(stored(cluster, i) is None for i in range(3)):
                await asyncio.sleep(0.01)


def test_one_insert_wins_and_every_replica_applies_it(
    setup: tuple[Cluster, Network, list[PaxosService]],
) -> None:
    cluster, _, services = setup

    async def go() -> list[Any]:
        seen: list[bytes | None] = []
        results = await asyncio.gather(
            *(
                s.transact(cluster.table, TOKEN, KEY, insert_if_absent(b"from %d" % i, seen))
                for i, s in enumerate(services)
            ),
            return_exceptions=True,
        )
        await every_replica_stored(cluster)  # commits beyond the quorum finish in the background
        return results

    results = asyncio.run(go())
    outcomes = [r for r in results if not isinstance(r, WriteTimeout)]
    assert all(isinstance(r, bool) for r in outcomes), results
    winners = [i for i, r in enumerate(results) if r is True]
    assert len(winners) <= 1
    values = {stored(cluster, i) for i in range(3)}
    assert len(values) == 1
    value = values.pop()
    assert value is not None
    if winners:
        assert value == b"from %d" % winners[0]
    again: list[bytes | None] = []
    assert (
        asyncio.run(services[1].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"late", again)))
        is False
    )
    assert again == [value]


def test_two_replicas_down_is_unavailable(setup: tuple[Cluster, Network, list[PaxosService]]) -> None:
    cluster, net, services = setup
    cluster.down |= {raft_id_of(host(1)), raft_id_of(host(2))}
    net.down |= {raft_id_of(host(1)), raft_id_of(host(2))}
    with pytest.raises(Unavailable) as info:
        asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"x", [])))
    assert (info.value.consistency, info.value.required, info.value.alive) == (SERIAL, 2, 1)
    with pytest.raises(Unavailable) as info:  # one DC: its replicas are all the replicas
        asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"x", []), LOCAL_SERIAL))
    assert (info.value.consistency, info.value.required, info.value.alive) == (LOCAL_SERIAL, 2, 1)


def test_one_replica_down_still_commits(setup: tuple[Cluster, Network, list[PaxosService]]) -> None:
    cluster, net, services = setup
    cluster.down.add(raft_id_of(host(2)))
    net.down.add(raft_id_of(host(2)))
    assert asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"x", []))) is True
    assert [stored(cluster, i) for i in range(3)] == [b"x", b"x", None]


def test_replicas_that_never_answer_time_out_as_cas(
    expiring: tuple[Cluster, Network, list[PaxosService]],
) -> None:
    cluster, net, services = expiring
    net.hang |= {raft_id_of(host(1)), raft_id_of(host(2))}  # up as far as the failure detector knows
    with pytest.raises(WriteTimeout) as info:
        asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"x", [])))
    assert info.value.write_type == "CAS"
    assert stored(cluster, 0) is None


def test_a_dropped_tables_paxos_state_is_forgotten(
    setup: tuple[Cluster, Network, list[PaxosService]],
) -> None:
    from tabletdb.schema.mutations import DropTable, apply_mutations

    cluster, _, services = setup
    services[0].follow_schema(cluster.catalog)
    assert asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"x", []))) is True
    store = services[0]._acceptor.store
    assert store.count() == 1
    dropped = apply_mutations(cluster.catalog, [DropTable("ks", "t")], uuid.uuid1())
    services[0].follow_schema(dropped)
    assert store.count() == 0


def test_a_round_that_proposes_nothing_finishes_an_interrupted_transaction(
    setup: tuple[Cluster, Network, list[PaxosService]],
) -> None:
    """What a SERIAL read relies on: an accepted, never committed value is committed first."""
    from tabletdb.paxos.messages import Accept, Prepare, Proposal

    cluster, _, services = setup
    ballot = Ballot(1_000, 99, 1)
    row = RowWrite(b"", marker=RowMarker(1_000), cells=(Cell("v", b"half-done", 1_000),))
    value = encode_mutations([Mutation(KEY, TOKEN, rows=(row,))])
    key = cluster.table.id.bytes + KEY

    async def interrupted() -> None:  # a coordinator got two acceptances, then died
        for s in services[:2]:
            await s.handle(cluster.table, TOKEN, Prepare(key, ballot))
            await s.handle(cluster.table, TOKEN, Accept(key, Proposal(ballot, value)))

    async def serial_read() -> bool:
        done = await services[2].transact(cluster.table, TOKEN, KEY, lambda b, reads: None)
        await every_replica_stored(cluster)
        return done

    asyncio.run(interrupted())
    assert [stored(cluster, i) for i in range(3)] == [None, None, None]
    assert asyncio.run(serial_read()) is False
    assert [stored(cluster, i) for i in range(3)] == [b"half-done"] * 3


def test_a_dead_replica_nobody_noticed_does_not_stall_a_contended_round(tmp_path: Path) -> None:
    """Node 2 refuses connections but the failure detector still says up; node 1 promised a
    higher ballot to someone else. The refused prepare counts as a refusal, so the round backs
    off and retries above node 1's ballot at once instead of waiting for node 2 until the round
    timeout (here the whole budget: waiting would be a WriteTimeout)."""
    from tabletdb.paxos.messages import Prepare

    for cluster, net, services in _three_services(tmp_path, PaxosTimeouts(cas_contention=0.0, write=30.0)):
        net.down.add(raft_id_of(host(2)))
        competitor = Ballot(time.time_ns() // 1000 + 1_000_000, 99, 1)
        key = cluster.table.id.bytes + KEY
        asyncio.run(services[1].handle(cluster.table, TOKEN, Prepare(key, competitor)))
        done = asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"x", [])))
        assert done is True
        assert [stored(cluster, i) for i in range(2)] == [b"x", b"x"]


def test_a_transaction_on_a_tablet_written_to_two_replica_sets_is_refused_until_it_switches(
    setup: tuple[Cluster, Network, list[PaxosService]],
) -> None:
    cluster, _, services = setup
    tm = cluster.maps[cluster.table.id]
    tablet_id = tm.tablet_id_of(TOKEN)
    source = tm.tablets[tablet_id].replicas[0]
    moved = TabletReplica(source.host, 1 - source.shard)  # an intra-node move: another shard
    tm = begin_migration(tm, Migration(cluster.table.id, tablet_id, source, moved))
    refused_at, allowed_at = [], []
    while tm.tablets[tablet_id].in_transition:
        cluster.maps = {**cluster.maps, cluster.table.id: tm}
        stage = tm.tablets[tablet_id].stage
        try:
            asyncio.run(services[0].transact(cluster.table, TOKEN, KEY, insert_if_absent(b"v", [])))
            allowed_at.append(stage)
        except Unavailable as exc:
            assert "moving to new replicas" in str(exc)
            refused_at.append(stage)
        tm = advance_stage(tm, tablet_id)
    both = [
        TransitionStage.WRITE_BOTH_READ_OLD,
        TransitionStage.STREAMING,
        TransitionStage.WRITE_BOTH_READ_NEW,
    ]
    assert refused_at == both
    assert len(allowed_at) == 4
