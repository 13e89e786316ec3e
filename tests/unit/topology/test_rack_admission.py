"""Joins and removals that would break a keyspace's rack rules are refused at admission."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.rack_shape import rack_check, token_owners_shape
from tabletdb.group0.state import Group0State
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.schema.ddl_keyspace import create_keyspace
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import apply_mutations
from tabletdb.topology.rack_admission import rack_change_error
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.state import Request, TopologyState, TopoNode
from tabletdb.topology.states import NodeState, RequestKind


def h(i: int) -> uuid.UUID:
    return uuid.UUID(int=i + 1)


def keyspaces(**replication: dict[str, object]) -> Catalog:
    catalog = Catalog()
    for name, rep in replication.items():
        outcome = create_keyspace(
            catalog, name, {"class": "NetworkTopologyStrategy", **rep}, config=SchemaConfig()
        )
        catalog = apply_mutations(catalog, outcome.mutations, uuid.uuid1())
    return catalog


THREE_RACKS = {h(0): ("dc1", "r1"), h(1): ("dc1", "r2"), h(2): ("dc1", "r3"), h(3): ("dc1", "r3")}


def test_numeric_rf_equal_to_the_racks_guards_rack_count_only_by_config() -> None:
    catalog = keyspaces(ks={"dc1": 3})
    join_r4 = (RequestKind.JOIN, h(9), ("dc1", "r4"))
    assert rack_change_error(catalog, THREE_RACKS, *join_r4, rf_rack_valid_keyspaces=False) is None
    why = rack_change_error(catalog, THREE_RACKS, *join_r4, rf_rack_valid_keyspaces=True)
    assert why is not None and why.startswith(
        "node join rejected: Cannot add the node because its addition would make some existing keyspace "
        "RF-rack-invalid (keyspace ks would have replication factor 3 in datacenter dc1 with 4 rack(s))"
    )
    assert rack_change_error(catalog, THREE_RACKS, RequestKind.JOIN, h(9), ("dc1", "r1"), True) is None
    # r3 keeps a node after one of its two leaves; the last one may not go
    assert rack_change_error(catalog, THREE_RACKS, RequestKind.LEAVE, h(3), None, True) is None
    two_left = {k: v for k, v in THREE_RACKS.items() if k != h(3)}
    why = rack_change_error(catalog, two_left, RequestKind.REMOVE, h(2), None, True)
    assert why is not None and why.startswith(
        "node remove rejected: Cannot remove the node because its removal would make some existing "
        "keyspace RF-rack-invalid"
    )
    why = rack_change_error(catalog, two_left, RequestKind.LEAVE, h(2), None, True)
    assert why is not None and why.startswith("node decommission rejected")


def test_a_keyspace_already_invalid_does_not_block_other_changes() -> None:
    catalog = keyspaces(ks={"dc1": 2})
    assert rack_change_error(catalog, THREE_RACKS, RequestKind.JOIN, h(9), ("dc1", "r4"), True) is None


def test_the_last_node_of_a_listed_rack_may_never_go() -> None:
    catalog = keyspaces(ks={"dc1": ["r1", "r2"]})
    why = rack_change_error(catalog, THREE_RACKS, RequestKind.REMOVE, h(1), None, False)
    assert why is not None and "keyspace ks lists rack r2 of datacenter dc1, which would have no nodes" in why
    assert rack_change_error(catalog, THREE_RACKS, RequestKind.REMOVE, h(2), None, False) is None
    assert rack_change_error(catalog, THREE_RACKS, RequestKind.JOIN, h(9), ("dc1", "r9"), True) is None


def test_vnode_keyspaces_and_unknown_locations_are_not_judged() -> None:
    vnodes = Catalog()
    outcome = create_keyspace(
        vnodes,
        "vn",
        {"class": "NetworkTopologyStrategy", "dc1": 3},
        tablets={"enabled": False},
        config=SchemaConfig(),
    )
    vnodes = apply_mutations(vnodes, outcome.mutations, uuid.uuid1())
    assert rack_change_error(vnodes, THREE_RACKS, RequestKind.JOIN, h(9), ("dc1", "r4"), True) is None
    catalog = keyspaces(ks={"dc1": 3})
    assert rack_change_error(catalog, THREE_RACKS, RequestKind.JOIN, h(9), None, True) is None


def _cluster() -> ClusterState:
    members = {
        host: NodeRecord(host, "a", "a", dc, rack, (1,), frozenset())
        for host, (dc, rack) in THREE_RACKS.items()
    }
    topo = TopologyState(nodes={host: TopoNode(host, NodeState.NORMAL) for host in members})
    metadata = Group0State(catalog=keyspaces(ks={"dc1": ["r1", "r2", "r3"]}))
    return ClusterState(metadata=metadata, topology=Topology("c", members), topology_state=topo)


def test_enqueue_refuses_with_the_group0_predicate() -> None:
    cluster = _cluster()
    assert token_owners_shape(cluster).racks == {"dc1": {"r1": 1, "r2": 1, "r3": 2}}
    check = rack_check(cluster, rf_rack_valid_keyspaces=False)
    with pytest.raises(RequestRefused, match=r"node decommission rejected.*lists rack r1"):
        enqueue(
            cluster.topology_state,
            Request(uuid.uuid1(), RequestKind.LEAVE, h(0)),
            frozenset(),
            uuid.uuid1(),
            check,
        )
    queued = enqueue(
        cluster.topology_state,
        Request(uuid.uuid1(), RequestKind.LEAVE, h(3)),
        frozenset(),
        uuid.uuid1(),
        check,
    )
    assert queued.topology.queue[0].host_id == h(3)
