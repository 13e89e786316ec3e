"""Coordinators over three in-process replicas: levels, Unavailable, timeouts, read repair, scans."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from tabletdb.coordinator.consistency import ALL, ONE, QUORUM
from tabletdb.coordinator.context import Timeouts
from tabletdb.coordinator.reads import ConsistentReads
from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest, ReadTimeout, Unavailable, WriteTimeout
from tabletdb.cql.parser import parse_statement
from tabletdb.dht.murmur3 import token_of
from tabletdb.group0.topology import raft_id_of
from tabletdb.query.select import execute_select
from tabletdb.replica.verbs import wait_for_table
from tabletdb.schema.model import TableDef
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.keys import encode_clustering
from tabletdb.storage.mutation import Cell, ClusteringSlice, Mutation, RowMarker, RowWrite
from tabletdb.storage.tablet_store import ScanPosition
from tests.unit.coordinator.replica_cluster import Cluster, host

NOW = 1_700_000_000


def run_async(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test body on a fresh event loop (fixtures pass through by name)."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return wrapper


ROOMY = Timeouts(write=30.0, read=30.0, range=30.0, counter_write=30.0, truncate=30.0)
"""For requests that must succeed: replica writes fsync, which can take seconds on a busy disk."""
EXPIRING = Timeouts(write=2.0, read=2.0, range=2.0, counter_write=2.0, truncate=2.0)
"""For requests that must time out on a hung replica; the live replicas' answers (an fsync each)
must still arrive within it, so it is short only relative to ROOMY."""


def expire_quickly(cluster: Cluster) -> None:
    """Switch every coordinator to EXPIRING (timeouts are read per request)."""
    for replicas in cluster.replicas:
        replicas.timeouts = EXPIRING


def row(key: bytes, c: bytes, value: bytes, ts: int) -> Mutation:
    cell = Cell("v", value, ts)
    return Mutation(key, token_of(key), rows=(RowWrite(c, marker=RowMarker(ts), cells=(cell,)),))


def delete(key: bytes, ts: int) -> Mutation:
    return Mutation(key, token_of(key), partition_tombstone=ts)


def values_on(cluster: Cluster, i: int, key: bytes) -> list[bytes]:
    data = cluster.local(i).read_partition(cluster.table, key, token_of(key), NOW)
    return [] if data is None else [c.value for r in data.rows for c in r.cells]


@pytest.fixture(params=[False, True], ids=["vnodes", "tablets"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, 3, 3, tablets=request.param, timeouts=ROOMY)
    yield c
    c.close()


@run_async
async def test_quorum_write_reaches_every_live_replica(cluster: Cluster) -> None:
    await cluster.writer(0).write(cluster.table, [row(b"k1", b"c", b"v1", 10)], QUORUM)
    # the third replica may finish (its fsync) after the level is met: wait for it to converge
    async with asyncio.timeout(30):
        while not all(values_on(cluster, i, b"k1") == [b"v1"] for i in range(3)):
            await asyncio.sleep(0.01)
    assert [values_on(cluster, i, b"k1") for i in range(3)] == [[b"v1"]] * 3


@run_async
async def test_unavailable_is_raised_before_anything_is_sent(cluster: Cluster) -> None:
    cluster.down.add(raft_id_of(host(2)))
    with pytest.raises(Unavailable) as info:
        await cluster.writer(0).write(cluster.table, [row(b"k1", b"c", b"v1", 10)], ALL)
    assert (info.value.required, info.value.alive) == (3, 2)
    assert cluster.net.calls == []
    assert [values_on(cluster, i, b"k1") for i in range(3)] == [[], [], []]
    await cluster.writer(0).write(cluster.table, [row(b"k1", b"c", b"v1", 10)], QUORUM)
    with pytest.raises(Unavailable):
        await cluster.reader(0).read_partition(
            cluster.table, b"k1", token_of(b"k1"), NOW, ClusteringSlice(), False, ALL
        )


@run_async
async def test_write_timeout_counts_the_acks_that_arrived(cluster: Cluster) -> None:
    cluster.net.hang.add(raft_id_of(host(2)))
    await cluster.writer(0).write(cluster.table, [row(b"k1", b"c", b"v1", 10)], QUORUM)
    expire_quickly(cluster)
    with pytest.raises(WriteTimeout) as info:
        await cluster.writer(0).write(cluster.table, [row(b"k2", b"c", b"v2", 10)], ALL, "BATCH")
    assert (info.value.received, info.value.block_for, info.value.write_type) == (2, 3, "BATCH")


@run_async
async def test_read_timeout_when_a_contacted_replica_never_answers(cluster: Cluster) -> None:
    cluster.net.hang.add(raft_id_of(host(1)))
    cluster.net.hang.add(raft_id_of(host(2)))
    expire_quickly(cluster)
    with pytest.raises(ReadTimeout) as info:
        await cluster.reader(0).read_partition(
            cluster.table, b"k", token_of(b"k"), NOW, ClusteringSlice(), False, QUORUM
        )
    assert info.value.block_for == 2 and info.value.data_present


@run_async
async def test_a_refusing_replica_is_replaced_by_another_live_one(cluster: Cluster) -> None:
    await cluster.writer(0).write(cluster.table, [row(b"k", b"c", b"v", 10)], ALL)
    cluster.net.refuse.add(raft_id_of(host(1)))
    data = await cluster.reader(0).read_partition(
        cluster.table, b"k", token_of(b"k"), NOW, ClusteringSlice(), False, QUORUM
    )
    assert data is not None and data.rows[0].cells[0].value == b"v"


@run_async
async def test_digest_mismatch_repairs_every_contacted_replica(cluster: Cluster) -> None:
    table = cluster.table
    await cluster.local(0).apply(table, [row(b"k", b"c", b"old", 10)])
    await cluster.local(1).apply(table, [row(b"k", b"c", b"old", 10), row(b"k", b"c", b"new", 20)])
    await cluster.local(2).apply(table, [delete(b"k", 15), row(b"k", b"d", b"late", 30)])
    data = await cluster.reader(0).read_partition(
        table, b"k", token_of(b"k"), NOW, ClusteringSlice(), False, ALL
    )
    assert data is not None
    assert [(r.clustering, r.cells[0].value) for r in data.rows] == [(b"c", b"new"), (b"d", b"late")]
    for i in range(3):
        assert values_on(cluster, i, b"k") == [b"new", b"late"]


@run_async
async def test_one_reads_only_the_local_replica(cluster: Cluster) -> None:
    await cluster.local(0).apply(cluster.table, [row(b"k", b"c", b"mine", 10)])
    data = await cluster.reader(0).read_partition(
        cluster.table, b"k", token_of(b"k"), NOW, ClusteringSlice(), False, ONE
    )
    assert data is not None and cluster.net.calls == []


@run_async
async def test_paged_quorum_scan_repairs_and_returns_everything(cluster: Cluster) -> None:
    table = cluster.table
    keys = [f"key{i}".encode() for i in range(40)]
    for n, key in enumerate(keys):
        missing = n % 3  # every replica misses a third of the rows
        for i in range(3):
            if i != missing:
                await cluster.local(i).apply(table, [row(key, b"a", key, 5), row(key, b"b", key, 5)])
    got: list[tuple[bytes, bytes]] = []
    placement = cluster.replicas[1].placement
    for where in placement.ranges(table):
        after: ScanPosition | None = None
        while True:
            page = await cluster.reader(1).scan(table, where, where.token_range, NOW, 5, after, QUORUM)
            got.extend((d.partition_key, r.clustering) for d in page.partitions for r in d.rows)
            if page.next_position is None:
                break
            after = page.next_position
    assert sorted(got) == sorted((k, c) for k in keys for c in (b"a", b"b"))
    assert len(got) == len(set(got))


@run_async
async def test_truncate_needs_every_node(cluster: Cluster) -> None:
    await cluster.writer(0).write(cluster.table, [row(b"k", b"c", b"v", 10)], ALL)
    cluster.down.add(raft_id_of(host(1)))
    with pytest.raises(Unavailable):
        await cluster.writer(0).truncate(cluster.table)
    cluster.down.clear()
    await cluster.writer(0).truncate(cluster.table)
    assert [values_on(cluster, i, b"k") for i in range(3)] == [[], [], []]


@run_async
async def test_a_replica_wrongly_marked_down_is_tried_when_a_live_one_fails(cluster: Cluster) -> None:
    cluster.down.add(raft_id_of(host(2)))  # stale: node 2 is actually fine
    cluster.net.refuse.add(raft_id_of(host(1)))  # and node 1 died before anyone noticed
    await cluster.writer(0).write(cluster.table, [row(b"k", b"c", b"v", 10)], QUORUM)
    assert values_on(cluster, 2, b"k") == [b"v"]
    await cluster.local(0).apply(cluster.table, [row(b"k", b"c", b"w", 20)])
    data = await cluster.reader(0).read_partition(
        cluster.table, b"k", token_of(b"k"), NOW, ClusteringSlice(), False, QUORUM
    )
    assert data is not None and data.rows[0].cells[0].value == b"w"
    assert values_on(cluster, 2, b"k") == [b"w"]


@run_async
async def test_a_replica_waits_for_a_table_its_schema_does_not_have_yet(cluster: Cluster) -> None:
    verbs = cluster.net.verbs[raft_id_of(host(1))]
    known = verbs.table_of
    appeared = asyncio.Event()

    def late(table_id: uuid.UUID) -> TableDef | None:
        return known(table_id) if appeared.is_set() else None

    verbs.table_of = late
    asyncio.get_running_loop().call_later(0.05, appeared.set)
    await cluster.writer(0).write(cluster.table, [row(b"k", b"c", b"v", 10)], ALL)
    assert values_on(cluster, 1, b"k") == [b"v"]
    with pytest.raises(InvalidRequest, match="schema not caught up"):
        await wait_for_table(lambda _: None, uuid.UUID(int=5).bytes, wait=0.05)


@pytest.mark.parametrize("tablets", [False, True], ids=["vnodes", "tablets"])
def test_select_pages_across_nodes_at_rf1(tmp_path: Path, tablets: bool) -> None:
    """RF=1 on three nodes: a paged SELECT through one coordinator walks every node's ranges."""

    async def body() -> None:
        c = Cluster(tmp_path, 3, 1, tablets=tablets, timeouts=ROOMY)
        try:
            keys = [f"k{i:02d}".encode() for i in range(30)]
            ck = encode_clustering(c.table, [b"c"])
            await c.writer(0).write(c.table, [row(k, ck, k, 1) for k in keys], ONE)
            holders = {c.replicas[0].placement.replicas(c.table, token_of(k))[0].host_id for k in keys}
            assert len(holders) == 3  # the rows really are spread over the nodes
            stmt = parse_statement("SELECT k, v FROM ks.t")
            assert isinstance(stmt, ast.SelectStatement)
            got: list[bytes] = []
            state = None
            while True:
                source = ConsistentReads(c.reader(1), ONE)
                result = await execute_select(BoundSelect(stmt, c.table, [], 4, state), source, NOW)
                got.extend(r[0] for r in result.rows)
                state = result.metadata.paging_state
                if state is None:
                    break
            assert sorted(got) == keys and len(got) == len(set(got))
        finally:
            c.close()

    asyncio.run(body())
