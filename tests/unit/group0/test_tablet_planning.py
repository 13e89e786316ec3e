"""The deciding node's tablet planning: one apply of a command's mutations gives both the catalog
the planner places tables for and the state the next command is decided on."""

from __future__ import annotations

import uuid

from tabletdb.cql.types import INT
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import Group0State, SchemaCommand, apply
from tabletdb.group0.tablet_planning import TabletPlanner, with_tablet_changes
from tabletdb.schema.ddl_table import create_table
from tabletdb.tablets.count import SizingConfig
from tests.unit.schema.helpers import with_keyspace

HOST = uuid.UUID(int=5 << 64)
TABLETS_KS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 1}, "tablets": {"initial": 2}}


def _create_table(cluster: ClusterState, name: str) -> SchemaCommand:
    metadata = cluster.metadata
    outcome = create_table(metadata.catalog, "tk", name, [("k", INT, False)], ["k"], new_id=uuid.uuid4())
    return SchemaCommand(metadata.state_id, uuid.uuid1(), outcome.mutations)


def test_the_state_left_is_what_applying_the_planned_command_makes() -> None:
    cluster = ClusterState(Group0State(with_keyspace(None, "tk", **TABLETS_KS)))
    planner = TabletPlanner(SizingConfig(), (HOST, "dc1", "rack1", 2))
    for name in ("t0", "t1", "t2"):
        planned, after = with_tablet_changes(cluster, _create_table(cluster, name), planner)
        assert [c.tablet_map is not None for c in planned.tablet_changes] == [True]
        assert apply(cluster.metadata, planned) == (after, True)
        cluster = ClusterState(after)


def test_before_its_join_is_recorded_the_node_places_tablets_on_itself() -> None:
    cluster = ClusterState(Group0State(with_keyspace(None, "tk", **TABLETS_KS)))
    planner = TabletPlanner(SizingConfig(), (HOST, "dc1", "rack1", 2))
    planned, _ = with_tablet_changes(cluster, _create_table(cluster, "t"), planner)
    (change,) = planned.tablet_changes
    assert change.tablet_map is not None
    assert {r.host for t in change.tablet_map.tablets for r in t.replicas} == {HOST}


def test_without_a_planner_the_command_is_applied_unchanged() -> None:
    cluster = ClusterState(Group0State(with_keyspace(None, "tk", **TABLETS_KS)))
    command = _create_table(cluster, "t")
    planned, after = with_tablet_changes(cluster, command, None)
    assert planned is command and apply(cluster.metadata, command) == (after, True)


def test_new_tables_go_to_normal_nodes_the_coordinator_does_not_ignore() -> None:
    """A joining or leaving node gets or loses replicas through the coordinator; a dead node
    being replaced (the coordinator ignores it meanwhile) would hold a replica nobody writes."""
    from dataclasses import replace

    from tabletdb.group0.topology import NodeRecord, Topology
    from tabletdb.topology.state import TopologyState, TopoNode
    from tabletdb.topology.states import NodeState

    states = {
        HOST: NodeState.NORMAL,
        uuid.UUID(int=6 << 64): NodeState.NORMAL,  # dead, being replaced: ignored
        uuid.UUID(int=7 << 64): NodeState.BOOTSTRAPPING,
        uuid.UUID(int=8 << 64): NodeState.DECOMMISSIONING,
    }
    records = {
        h: NodeRecord(h, f"10.0.0.{i}", f"10.0.0.{i}", "dc1", "rack1", (i,), frozenset())
        for i, h in enumerate(states)
    }
    ignored = frozenset({uuid.UUID(int=6 << 64)})
    topology_state = TopologyState(nodes={h: TopoNode(h, s) for h, s in states.items()}, ignored=ignored)
    ks = {**TABLETS_KS, "tablets": {"initial": 8}}
    cluster = ClusterState(
        Group0State(with_keyspace(None, "tk", **ks)), Topology("c", records), topology_state=topology_state
    )
    planner = TabletPlanner(SizingConfig(), (HOST, "dc1", "rack1", 2))
    planned, _ = with_tablet_changes(cluster, _create_table(cluster, "t"), planner)
    (change,) = planned.tablet_changes
    assert change.tablet_map is not None
    assert {r.host for t in change.tablet_map.tablets for r in t.replicas} == {HOST}
    cluster = replace(cluster, topology_state=replace(topology_state, ignored=frozenset()))
    planned, _ = with_tablet_changes(cluster, _create_table(cluster, "t"), planner)
    (change,) = planned.tablet_changes
    assert change.tablet_map is not None
    assert {r.host for t in change.tablet_map.tablets for r in t.replicas} == {HOST, uuid.UUID(int=6 << 64)}
