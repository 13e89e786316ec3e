"""The group0 leader's adoption of a CDC log map that does not name its base, on a real group0
service (one node, two shards): a map made by an earlier version is forged into group0 with one
raw schema command (the form such a map takes: the same tablets, no base), and one adoption step
names the base; a map whose replicas sit elsewhere gets a tablet MOVE request instead."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tabletdb.group0.cluster_state import SchemaEntry
from tabletdb.group0.state import SchemaCommand
from tabletdb.group0.state_id import timeuuid_after
from tabletdb.group0.tablets_state import TabletChange
from tabletdb.node.group0_shell.cdc_log_maps import LogMapAdoption
from tabletdb.tablets.colocation import separated
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tabletdb.topology.states import RequestKind
from tests.unit.query.data_harness import HOST, DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


async def _cdc_table(node: DataNode) -> tuple[uuid.UUID, uuid.UUID]:
    await node.run(
        "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1} "
        "AND tablets = {'initial': 4}"
    )
    await node.run("CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    base, log = node.metadata.catalog.table("ks", "t"), node.metadata.catalog.table("ks", "t_scylla_cdc_log")
    assert base is not None and log is not None
    assert node.tablets[log.id].base_table == base.id  # a new log is co-located from the start
    return base.id, log.id


async def _forge(node: DataNode, log_map: TabletMap) -> None:
    """Put ``log_map`` into group0 as an earlier version's command would have left it."""
    prev = node.metadata.state.metadata.state_id
    new = timeuuid_after(prev, time.time_ns(), random.Random(1))
    command = SchemaCommand(prev, new, (), tablet_changes=(TabletChange(log_map.table_id, log_map),))
    await node.metadata._submit_schema([SchemaEntry(command, ())])  # a raw entry
    assert node.tablets[log_map.table_id] == log_map


def test_a_log_map_on_its_base_tablets_gets_its_base_named(node: DataNode) -> None:
    async def go() -> None:
        base, log = await _cdc_table(node)
        await _forge(node, replace(node.tablets[log], base_table=None))
        adoption = LogMapAdoption(HOST)
        await adoption.step(node.metadata)
        assert node.tablets[log].base_table == base
        assert separated(dict(node.tablets)) == []
        before = node.metadata.state.metadata.state_id
        await adoption.step(node.metadata)  # nothing left to adopt: no command
        assert node.metadata.state.metadata.state_id == before

    node.drive(go())


def test_a_log_map_placed_apart_gets_a_move_onto_the_base_replica(node: DataNode) -> None:
    async def go() -> None:
        base, log = await _cdc_table(node)
        base_map = node.tablets[base]
        other = tuple(
            (TabletReplica(r.host, 1 - r.shard),) for t in base_map.tablets for r in t.replicas
        )  # each log tablet on the other shard of this node
        await _forge(node, TabletMap.even(log, other))
        await LogMapAdoption(HOST).step(node.metadata)
        (request,) = node.metadata.state.topology_state.queue
        assert request.kind is RequestKind.MOVE and request.move is not None
        assert request.move.table_id == log
        assert request.move.target == base_map.tablets[0].replicas[0]
        assert request.move.source == other[0][0]
        assert node.tablets[log].base_table is None  # named only once the tablets match

    node.drive(go())
