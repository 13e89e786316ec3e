"""Writes and reads of a tablet in migration: routed by its stage, the level met on each set.

Four in-process replicas (real stores), RF=3 tablets; one replica of the tablet of ``KEY`` moves
to the fourth node through ``tablets.migration``'s stages, the same map values group0 holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.coordinator.consistency import ONE, QUORUM
from tabletdb.coordinator.placement import union
from tabletdb.cql.errors import Unavailable, WriteTimeout
from tabletdb.dht.murmur3 import token_of
from tabletdb.group0.topology import raft_id_of
from tabletdb.storage.mutation import ClusteringSlice
from tabletdb.tablets.migration import STAGE_ORDER, Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletReplica, TransitionStage
from tests.unit.coordinator.replica_cluster import Cluster, host
from tests.unit.coordinator.test_coordinator_replicated import (
    NOW,
    ROOMY,
    expire_quickly,
    row,
    run_async,
    values_on,
)

KEY = b"k1"
TOKEN = token_of(KEY)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, 4, 3, tablets=True, timeouts=ROOMY)
    yield c
    c.close()


def migrate_to(cluster: Cluster, stage: TransitionStage) -> tuple[int, int, list[int]]:
    """Start moving the first replica of KEY's tablet to the node without one, up to ``stage``.
    Returns (source node, target node, the replicas that stay) as node indexes."""
    tm = cluster.maps[cluster.table.id]
    tablet_id = tm.tablet_id_of(TOKEN)
    replicas = tm.tablets[tablet_id].replicas
    index = {host(i): i for i in range(4)}
    (spare,) = [i for i in range(4) if host(i) not in {r.host for r in replicas}]
    source = replicas[0]
    tm = begin_migration(tm, Migration(cluster.table.id, tablet_id, source, TabletReplica(host(spare), 0)))
    cluster.maps = {**cluster.maps, cluster.table.id: tm}
    advance_to(cluster, stage)
    return index[source.host], spare, [index[r.host] for r in replicas[1:]]


def advance_to(cluster: Cluster, stage: TransitionStage | None) -> None:
    """Move KEY's tablet on through the stages until it is at ``stage`` (None: finished)."""
    tm = cluster.maps[cluster.table.id]
    tablet_id = tm.tablet_id_of(TOKEN)
    while tm.tablets[tablet_id].stage is not stage:
        tm = advance_stage(tm, tablet_id)
    cluster.maps = {**cluster.maps, cluster.table.id: tm}


def test_each_stage_reads_and_writes_the_sets_tablets_migration_names(cluster: Cluster) -> None:
    placement = cluster.replicas[0].placement
    before = placement.replicas(cluster.table, TOKEN)
    assert placement.write_sets(cluster.table, TOKEN) == (before,)
    source, target, stay = migrate_to(cluster, STAGE_ORDER[0])
    hosts = lambda replicas: {r.host_id for r in replicas}  # noqa: E731
    old, new = {host(i) for i in [source, *stay]}, {host(i) for i in [target, *stay]}
    expected = {
        TransitionStage.ALLOW_WRITE_BOTH_READ_OLD: ([old], old),
        TransitionStage.WRITE_BOTH_READ_OLD: ([old, new], old),
        TransitionStage.STREAMING: ([old, new], old),
        TransitionStage.WRITE_BOTH_READ_NEW: ([old, new], new),
        TransitionStage.USE_NEW: ([new], new),
        TransitionStage.CLEANUP: ([new], new),
        TransitionStage.END_MIGRATION: ([new], new),
    }
    for stage, (writes, reads) in expected.items():
        advance_to(cluster, stage)
        assert [hosts(s) for s in placement.write_sets(cluster.table, TOKEN)] == writes, stage
        assert hosts(placement.replicas(cluster.table, TOKEN)) == reads, stage
    advance_to(cluster, None)  # migration finished
    assert hosts(placement.replicas(cluster.table, TOKEN)) == new
    assert [hosts(s) for s in placement.write_sets(cluster.table, TOKEN)] == [new]


@run_async
async def test_a_write_while_both_sets_are_written_reaches_the_target_too(cluster: Cluster) -> None:
    source, target, _ = migrate_to(cluster, TransitionStage.WRITE_BOTH_READ_OLD)
    await cluster.writer(source).write(cluster.table, [row(KEY, b"c", b"v1", 10)], QUORUM)
    async with asyncio.timeout(30):  # the level is met before every replica's fsync
        while not all(values_on(cluster, i, KEY) == [b"v1"] for i in range(4)):
            await asyncio.sleep(0.01)
    # once reads switch, the target answers from its own file: a read at ONE stays local
    advance_to(cluster, TransitionStage.WRITE_BOTH_READ_NEW)
    cluster.net.calls.clear()
    data = await cluster.reader(target).read_partition(
        cluster.table, KEY, TOKEN, NOW, ClusteringSlice(), False, ONE
    )
    assert data is not None and [c.value for r in data.rows for c in r.cells] == [b"v1"]
    assert cluster.net.calls == []


@run_async
async def test_the_level_must_be_met_on_the_new_set_as_well(cluster: Cluster) -> None:
    source, target, stay = migrate_to(cluster, TransitionStage.WRITE_BOTH_READ_OLD)
    for i in [target, *stay]:
        cluster.down.add(raft_id_of(host(i)))
    # ONE over the union would be met by the source alone; the new set has nobody alive
    with pytest.raises(Unavailable) as info:
        await cluster.writer(source).write(cluster.table, [row(KEY, b"c", b"v1", 10)], ONE)
    assert (info.value.required, info.value.alive) == (1, 0)
    cluster.down.clear()
    for i in [target, *stay]:
        cluster.net.hang.add(raft_id_of(host(i)))
    expire_quickly(cluster)
    with pytest.raises(WriteTimeout) as timeout:
        await cluster.writer(source).write(cluster.table, [row(KEY, b"c", b"v2", 11)], ONE)
    assert (timeout.value.received, timeout.value.block_for) == (1, 2)


@run_async
async def test_without_a_migration_one_live_replica_is_enough(cluster: Cluster) -> None:
    replicas = cluster.replicas[0].placement.replicas(cluster.table, TOKEN)
    index = {host(i): i for i in range(4)}
    first, *others = [index[r.host_id] for r in replicas]
    for i in others:
        cluster.down.add(raft_id_of(host(i)))
    await cluster.writer(first).write(cluster.table, [row(KEY, b"c", b"v1", 10)], ONE)
    assert values_on(cluster, first, KEY) == [b"v1"]


def test_union_keeps_each_replica_once_in_order(cluster: Cluster) -> None:
    migrate_to(cluster, TransitionStage.STREAMING)
    sets = cluster.replicas[0].placement.write_sets(cluster.table, TOKEN)
    assert len(union(sets)) == 4 and union(sets)[:3] == sets[0]
