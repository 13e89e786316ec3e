"""Writes carry the coordinator's topology version; a replica fenced above it refuses them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.coordinator.consistency import ALL, QUORUM
from tabletdb.cql.errors import WriteFailure
from tabletdb.replica.fencing import StaleTopology, check_fence
from tests.unit.coordinator.replica_cluster import Cluster
from tests.unit.coordinator.test_coordinator_replicated import ROOMY, row, run_async, values_on


def test_a_version_below_the_fence_is_refused_naming_both() -> None:
    check_fence(7, 7, 1)
    check_fence(8, 7, 1)
    with pytest.raises(StaleTopology, match="topology version 6, older than this replica's fence version 7"):
        check_fence(6, 7, 0x1F)


@pytest.fixture(params=[False, True], ids=["vnodes", "tablets"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, 3, 3, tablets=request.param, timeouts=ROOMY)
    yield c
    c.close()


@run_async
async def test_a_fenced_replica_takes_no_write_from_a_stale_coordinator(cluster: Cluster) -> None:
    cluster.versions = [4, 4, 4]
    cluster.fences[1] = 5  # node 1 applied a fence node 0 has not seen yet
    with pytest.raises(WriteFailure, match="fence version 5"):
        await cluster.writer(0).write(cluster.table, [row(b"k1", b"c", b"v1", 10)], ALL)
    await cluster.writer(0).write(cluster.table, [row(b"k2", b"c", b"v2", 10)], QUORUM)
    async with asyncio.timeout(30):  # node 2's copy may land after the level is met
        while values_on(cluster, 2, b"k2") != [b"v2"]:
            await asyncio.sleep(0.01)
    assert values_on(cluster, 1, b"k1") == [] and values_on(cluster, 1, b"k2") == []
    cluster.versions[0] = 5  # caught up: the same replica takes its writes again
    await cluster.writer(0).write(cluster.table, [row(b"k3", b"c", b"v3", 10)], ALL)
    assert values_on(cluster, 1, b"k3") == [b"v3"]
