"""CDC generations in group0: built by the deciding node with the schema command that puts a CDC
table in a vnode keyspace, committed with it, kept across entries and snapshots."""

from __future__ import annotations

import uuid

from tabletdb.cdc.generation import operating, refines
from tabletdb.cdc.stream_id import stream_id_token
from tabletdb.cql.types import INT
from tabletdb.dht.sharding import shard_of
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import (
    Group0State,
    SchemaCommand,
    apply,
    decode_command,
    decode_state,
    encode_command,
    encode_state,
)
from tabletdb.group0.tablet_planning import (
    CDC_GENERATION_DELAY_US,
    TabletPlanner,
    cdc_generation_outdated,
    with_tablet_changes,
)
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.mutations import PutTable
from tabletdb.tablets.count import SizingConfig
from tests.unit.schema.helpers import with_keyspace

VNODES = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 1}, "tablets": {"enabled": False}}
NOW = 1_800_000_000.0


def _node(n: int, tokens: tuple[int, ...], shards: int = 2) -> NodeRecord:
    return NodeRecord(
        uuid.UUID(int=n << 80), f"10.0.0.{n}", f"10.0.0.{n}", "dc1", "r", tokens, frozenset(), shards
    )


def _cluster(members: list[NodeRecord], metadata: Group0State | None = None) -> ClusterState:
    metadata = metadata or Group0State(with_keyspace(None, "vk", **VNODES))
    return ClusterState(metadata, Topology("c", {m.host_id: m for m in members}))


def _create(cluster: ClusterState, name: str, cdc: bool = True) -> SchemaCommand:
    options = {"cdc": {"enabled": True}} if cdc else {}
    catalog = cluster.metadata.catalog
    outcome = create_table(
        catalog, "vk", name, [("k", INT, False)], ["k"], options=options, new_id=uuid.uuid4()
    )
    return SchemaCommand(cluster.metadata.state_id, uuid.uuid1(), outcome.mutations)


PLANNER = TabletPlanner(SizingConfig(), (uuid.UUID(int=1), "dc1", "r", 2), clock=lambda: NOW)


def test_first_cdc_table_brings_a_generation_for_the_ring() -> None:
    cluster = _cluster([_node(1, (-100, 300)), _node(2, (50,), shards=3)])
    planned, after = with_tablet_changes(cluster, _create(cluster, "plain", cdc=False), PLANNER)
    assert planned.cdc_generation is None and after.cdc_generations == ()
    cluster = _cluster(list(cluster.topology.members.values()), after)
    planned, after = with_tablet_changes(cluster, _create(cluster, "t"), PLANNER)
    assert planned.cdc_generation is not None
    start, generation = planned.cdc_generation
    assert start == 0 and refines(generation, [-100, 50, 300])
    assert [len(e.streams) for e in generation.entries] == [2, 3, 2]
    assert apply(cluster.metadata, planned) == (after, True)
    for token in (-5000, -100, 0, 51, 300, 10**18):
        stream = generation.stream_for(token)
        assert shard_of(stream_id_token(stream), 3 if -100 < token <= 50 else 2, 12) == shard_of(
            token, 3 if -100 < token <= 50 else 2, 12
        )


def test_a_generation_is_kept_until_the_ring_changes() -> None:
    cluster = _cluster([_node(1, (-100, 300))])
    planned, after = with_tablet_changes(cluster, _create(cluster, "t"), PLANNER)
    assert planned.cdc_generation is not None
    cluster = _cluster(list(cluster.topology.members.values()), after)
    planned, after = with_tablet_changes(cluster, _create(cluster, "u"), PLANNER)
    assert planned.cdc_generation is None and len(after.cdc_generations) == 1
    grown = _cluster([*cluster.topology.members.values(), _node(2, (7,))], after)
    planned, after = with_tablet_changes(grown, _create(grown, "w"), PLANNER)
    assert planned.cdc_generation is not None
    start, generation = planned.cdc_generation
    assert start == int(NOW * 1_000_000) + CDC_GENERATION_DELAY_US and refines(generation, [-100, 7, 300])
    first = after.cdc_generations[0][1]
    assert operating(after.cdc_generations, start - 1) is first
    assert operating(after.cdc_generations, start) is generation
    assert operating(after.cdc_generations, -5) is first  # older than every generation: the first


def test_no_ring_no_generation() -> None:
    cluster = _cluster([])
    planned, _ = with_tablet_changes(cluster, _create(cluster, "t"), PLANNER)
    assert planned.cdc_generation is None


def test_generations_survive_encoding() -> None:
    cluster = _cluster([_node(1, (-100, 300))])
    planned, after = with_tablet_changes(cluster, _create(cluster, "t"), PLANNER)
    assert decode_command(encode_command(planned)) == planned
    assert decode_state(encode_state(after)) == after
    assert operating((), 5) is None


TABLETS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 1}, "tablets": {"initial": 4}}


def test_a_cdc_tablet_table_gets_its_first_stream_set_with_its_log() -> None:
    metadata = Group0State(with_keyspace(None, "tk", **TABLETS))
    cluster = ClusterState(metadata, Topology("c", {}))

    def create(name: str, cdc: bool) -> SchemaCommand:
        options = {"cdc": {"enabled": True}} if cdc else {}
        outcome = create_table(
            cluster.metadata.catalog,
            "tk",
            name,
            [("k", INT, False)],
            ["k"],
            options=options,
            new_id=uuid.uuid4(),
        )
        return SchemaCommand(cluster.metadata.state_id, uuid.uuid1(), outcome.mutations)

    planned, after = with_tablet_changes(cluster, create("plain", False), PLANNER)
    assert planned.cdc_stream_sets == () and after.cdc_stream_sets == ()
    cluster = ClusterState(after, cluster.topology)
    planned, after = with_tablet_changes(cluster, create("t", True), PLANNER)
    (stream_set,) = planned.cdc_stream_sets
    table = after.catalog.table("tk", "t")
    assert table is not None and stream_set.table_id == table.id
    assert stream_set.timestamp == int(NOW * 1_000_000)
    assert stream_set.last_tokens == after.tablets[table.id].last_tokens
    assert apply(cluster.metadata, planned) == (after, True)
    assert decode_command(encode_command(planned)) == planned
    assert decode_state(encode_state(after)) == after


def test_an_outdated_generation_is_found_and_rebuilt_by_touching_the_table() -> None:
    """The leader's check (``cdc_generation_outdated``) and the command it commits: the table
    put again, unchanged, brings the generation for the new ring."""
    cluster = _cluster([_node(1, (-100, 300))])
    assert cdc_generation_outdated(cluster) is None  # no CDC table: nothing to keep
    planned, after = with_tablet_changes(cluster, _create(cluster, "t"), PLANNER)
    cluster = _cluster([_node(1, (-100, 300))], after)
    assert cdc_generation_outdated(cluster) is None  # the generation fits the ring
    grown = _cluster([_node(1, (-100, 300)), _node(2, (7, 1000))], after)
    table = cdc_generation_outdated(grown)
    assert table is not None and table.name == "t"
    touch = SchemaCommand(grown.metadata.state_id, uuid.uuid1(), (PutTable(table),))
    planned, after = with_tablet_changes(grown, touch, PLANNER)
    assert planned.cdc_generation is not None
    start, generation = planned.cdc_generation
    assert start % 1000 == 0 and start > int(NOW * 1_000_000)
    assert refines(generation, [-100, 7, 300, 1000])
    assert after.catalog.table("vk", "t") == table
    assert cdc_generation_outdated(_cluster(list(grown.topology.members.values()), after)) is None
