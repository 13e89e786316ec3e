"""Which TOPOLOGY_CHANGE events take a driver from one ring to the next."""

from __future__ import annotations

import uuid

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.node.topology_events import NEW_NODE, REMOVED_NODE, ring_addresses, ring_changes
from tabletdb.topology.state import TopologyState, TopoNode
from tabletdb.topology.states import NodeState

ME, A, B, C = (uuid.UUID(int=i << 96) for i in (1, 2, 3, 4))


def _state(nodes: dict[uuid.UUID, tuple[str, NodeState]]) -> ClusterState:
    members = {
        h: NodeRecord(h, address, address, "dc1", "rack1", (i,), frozenset())
        for i, (h, (address, _)) in enumerate(nodes.items())
    }
    topology_state = TopologyState(nodes={h: TopoNode(h, s) for h, (_, s) in nodes.items()})
    return ClusterState(topology=Topology("c", members), topology_state=topology_state)


def test_a_node_is_in_the_ring_while_it_serves_data_and_never_announces_itself() -> None:
    state = _state(
        {
            ME: ("10.0.0.1", NodeState.NORMAL),
            A: ("10.0.0.2", NodeState.NORMAL),
            B: ("10.0.0.3", NodeState.BOOTSTRAPPING),
            C: ("10.0.0.4", NodeState.DECOMMISSIONING),
        }
    )
    assert ring_addresses(state, ME) == {A: "10.0.0.2", C: "10.0.0.4"}


def test_joins_departures_and_address_changes() -> None:
    before = {A: "10.0.0.2", B: "10.0.0.3"}
    assert ring_changes(before, before) == []
    assert ring_changes(before, {**before, C: "10.0.0.4"}) == [(NEW_NODE, "10.0.0.4")]
    assert ring_changes(before, {A: "10.0.0.2"}) == [(REMOVED_NODE, "10.0.0.3")]
    moved = ring_changes(before, {A: "10.0.0.2", B: "10.0.0.9"})
    assert moved == [(REMOVED_NODE, "10.0.0.3"), (NEW_NODE, "10.0.0.9")]


def test_a_bootstrapping_node_is_announced_when_it_becomes_normal() -> None:
    joining = _state({ME: ("10.0.0.1", NodeState.NORMAL), B: ("10.0.0.3", NodeState.BOOTSTRAPPING)})
    normal = _state({ME: ("10.0.0.1", NodeState.NORMAL), B: ("10.0.0.3", NodeState.NORMAL)})
    left = _state({ME: ("10.0.0.1", NodeState.NORMAL), B: ("10.0.0.3", NodeState.LEFT)})
    assert ring_changes(ring_addresses(joining, ME), ring_addresses(normal, ME)) == [(NEW_NODE, "10.0.0.3")]
    assert ring_changes(ring_addresses(normal, ME), ring_addresses(left, ME)) == [(REMOVED_NODE, "10.0.0.3")]


def test_system_peers_and_events_see_the_same_members() -> None:
    """A joining or replacing node is in neither until it is normal; a member with no topology
    record (from before the coordinator) is in both."""
    from tabletdb.node.topology_events import in_ring

    state = _state(
        {
            ME: ("10.0.0.1", NodeState.NORMAL),
            A: ("10.0.0.2", NodeState.NONE),
            B: ("10.0.0.3", NodeState.REPLACING),
            C: ("10.0.0.4", NodeState.REMOVING),
        }
    )
    assert [h for h in (A, B, C) if in_ring(state, h)] == [C]
    legacy = ClusterState(topology=state.topology)
    assert all(in_ring(legacy, h) for h in (A, B, C))
    assert ring_addresses(legacy, ME) == {A: "10.0.0.2", B: "10.0.0.3", C: "10.0.0.4"}
