"""A tablet with fewer replicas than its keyspace's RF (RF raised by ALTER before replicas were
added): consistency levels count the RF, so CL=ALL is never met by fewer copies than claimed."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.coordinator.consistency import (
    ALL,
    EACH_QUORUM,
    LOCAL_QUORUM,
    ONE,
    QUORUM,
    ResponseTracker,
    check_available,
)
from tabletdb.coordinator.placement import ReplicaPlacement, ShortReplicaSet
from tabletdb.cql.errors import Unavailable
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.schema.model import NTS, Catalog, KeyspaceDef, KeyspaceTablets, Replication
from tabletdb.schema.mutations import PutKeyspace, PutTable, apply_mutations
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tests.unit.coordinator.replica_cluster import host, table_def


def _cluster(rf: str) -> tuple[ReplicaPlacement, dict[uuid.UUID, TabletMap], list[Catalog]]:
    members = {
        host(i): NodeRecord(host(i), "a", "a", "dc1", f"r{i}", (), frozenset(), shard_count=1)
        for i in range(3)
    }
    topo = Topology("c", members)
    ks = KeyspaceDef("ks", Replication(NTS, (("dc1", rf),)), tablets=KeyspaceTablets(True))
    catalogs = [apply_mutations(Catalog(), [PutKeyspace(ks), PutTable(table_def())], uuid.uuid1())]
    maps = {table_def().id: TabletMap.even(table_def().id, ((TabletReplica(host(0), 0),),))}
    placement = ReplicaPlacement(host(0), "dc1", lambda: topo, lambda: catalogs[0], lambda: maps)
    return placement, maps, catalogs


def test_a_tablet_short_of_its_rf_counts_the_rf() -> None:
    placement, _, _ = _cluster("2")
    replicas = placement.replicas(table_def(), 0)
    assert isinstance(replicas, ShortReplicaSet) and len(replicas) == 1
    assert not placement.only_local(replicas)  # no local shortcut: the level must be counted
    assert placement.write_sets(table_def(), 0) == (replicas,)
    assert ResponseTracker(ALL, replicas, "dc1", write=True).block_for == 2
    assert ResponseTracker(QUORUM, replicas, "dc1", write=True).block_for == 2
    assert ResponseTracker(LOCAL_QUORUM, replicas, "dc1", write=True).block_for == 2
    assert ResponseTracker(EACH_QUORUM, replicas, "dc1", write=True).block_for == 2
    assert check_available(ONE, replicas, "dc1", lambda r: True, write=True) == list(replicas)
    with pytest.raises(Unavailable, match="ALL: 1 of 2 required replicas are alive"):
        check_available(ALL, replicas, "dc1", lambda r: True, write=True)


def test_a_tablet_with_its_rf_is_a_plain_set_and_follows_alter() -> None:
    placement, _, catalogs = _cluster("1")
    replicas = placement.replicas(table_def(), 0)
    assert not isinstance(replicas, ShortReplicaSet) and placement.only_local(replicas)
    assert ResponseTracker(ALL, replicas, "dc1", write=True).block_for == 1
    # ALTER raises the RF: the cached entry is rebuilt from the new catalog
    ks = KeyspaceDef("ks", Replication(NTS, (("dc1", "3"),)), tablets=KeyspaceTablets(True))
    catalogs[0] = apply_mutations(catalogs[0], [PutKeyspace(ks)], uuid.uuid1())
    replicas = placement.replicas(table_def(), 0)
    assert isinstance(replicas, ShortReplicaSet)
    assert ResponseTracker(ALL, replicas, "dc1", write=True).block_for == 3
    assert ResponseTracker(QUORUM, replicas, "dc1", write=False).block_for == 2


def test_while_the_rf_goes_down_a_tablet_on_its_new_smaller_set_is_not_short() -> None:
    """RF 2 -> 1: the catalog keeps 2 until the request ends, the tablet already reads from one
    replica. Counting 2 would make ALL Unavailable for the whole request; counting 1 is what the
    keyspace is becoming. Once the request is gone the catalog alone counts again."""
    from dataclasses import replace

    from tabletdb.topology.rf_request import KeyspaceRfChange
    from tabletdb.topology.state import Request, TopologyState, Transition
    from tabletdb.topology.states import RequestKind, TransitionState

    members = {
        host(i): NodeRecord(host(i), "a", "a", "dc1", f"r{i}", (), frozenset(), shard_count=1)
        for i in range(2)
    }
    topo = Topology("c", members)
    before = KeyspaceDef("ks", Replication(NTS, (("dc1", "2"),)), tablets=KeyspaceTablets(True))
    after = replace(before, replication=Replication(NTS, (("dc1", "1"),)))
    catalog = apply_mutations(Catalog(), [PutKeyspace(before), PutTable(table_def())], uuid.uuid1())
    maps = {table_def().id: TabletMap.even(table_def().id, ((TabletReplica(host(0), 0),),))}
    change = Request(
        uuid.uuid1(), RequestKind.KEYSPACE_RF_CHANGE, host(0), rf_change=KeyspaceRfChange(before, after)
    )
    states = [TopologyState(transition=Transition(change, TransitionState.TABLET_MIGRATION))]
    placement = ReplicaPlacement(
        host(0), "dc1", lambda: topo, lambda: catalog, lambda: maps, topology_state=lambda: states[0]
    )
    replicas = placement.replicas(table_def(), 0)
    assert not isinstance(replicas, ShortReplicaSet)
    assert ResponseTracker(ALL, replicas, "dc1", write=True).block_for == 1
    states[0] = TopologyState()  # the request failed: the catalog's 2 counts again
    replicas = placement.replicas(table_def(), 0)
    assert isinstance(replicas, ShortReplicaSet)
    assert ResponseTracker(ALL, replicas, "dc1", write=True).block_for == 2
