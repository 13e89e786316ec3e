"""Replica sets of (table, token) from group0 state: tablets, vnode strategies, merged ranges."""

from __future__ import annotations

import itertools
import random
import uuid
from dataclasses import replace

from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.dht.murmur3 import token_of
from tabletdb.dht.ring import ReplicaTable, TokenRing, random_tokens
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN
from tabletdb.group0.tablets_state import cluster_capacity, new_table_map
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.schema.model import NTS, SIMPLE, Catalog, KeyspaceDef, KeyspaceTablets, Replication
from tabletdb.schema.mutations import PutKeyspace, PutTable, apply_mutations
from tabletdb.tablets.count import SizingConfig
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.topology.state import Request, TopologyState, TopoNode, Transition
from tabletdb.topology.states import NodeState, RequestKind, TransitionState
from tests.unit.coordinator.replica_cluster import host, table_def

RACKS = ["r0", "r1", "r2", "r0", "r1", "r2"]


def topology(n: int, dcs: list[str] | None = None) -> Topology:
    rng = random.Random(n)
    members = {}
    taken: set[int] = set()
    for i in range(n):
        tokens = random_tokens(rng, 16, taken)
        taken.update(tokens)
        dc = dcs[i] if dcs else "dc1"
        members[host(i)] = NodeRecord(
            host(i), "a", "a", dc, RACKS[i], tuple(tokens), frozenset(), shard_count=2
        )
    return Topology("c", members)


def catalog(replication: Replication, tablets: bool) -> tuple[Catalog, KeyspaceDef]:
    ks = KeyspaceDef("ks", replication, tablets=KeyspaceTablets(tablets))
    return apply_mutations(Catalog(), [PutKeyspace(ks), PutTable(table_def())], uuid.uuid1()), ks


def test_tablet_replicas_are_distinct_nodes_on_distinct_racks_from_real_members() -> None:
    topo = topology(6)
    cat, ks = catalog(Replication(NTS, (("dc1", "3"),)), tablets=True)
    members = [(r.host_id, r.datacenter, r.rack, r.shard_count) for r in topo.members.values()]
    tablet_map = new_table_map(ks, table_def(), cluster_capacity(members, {}), SizingConfig())
    maps: dict[uuid.UUID, TabletMap] = {table_def().id: tablet_map}
    placement = ReplicaPlacement(host(0), "dc1", lambda: topo, lambda: cat, lambda: maps)
    shard_load: dict[tuple[uuid.UUID, int], int] = {}
    for tablet_id in range(tablet_map.tablet_count):
        replicas = placement.replicas(table_def(), tablet_map.range_of(tablet_id).end)
        assert len({r.host_id for r in replicas}) == 3
        assert len({topo.members[r.host_id].rack for r in replicas}) == 3
        for r in replicas:
            assert r.shard is not None
            shard_load[(r.host_id, r.shard)] = shard_load.get((r.host_id, r.shard), 0) + 1
    assert max(shard_load.values()) - min(shard_load.values()) <= 1  # least-loaded shards first


def test_vnode_replicas_follow_the_ring_strategies() -> None:
    topo = topology(4)
    ring = TokenRing.from_assignments({h: r.tokens for h, r in topo.members.items()})
    simple_cat, _ = catalog(Replication(SIMPLE, (("replication_factor", "2"),)), tablets=False)
    simple = ReplicaPlacement(host(0), "dc1", lambda: topo, lambda: simple_cat, dict)
    nts_cat, _ = catalog(Replication(NTS, (("dc1", "3"),)), tablets=False)
    nts = ReplicaPlacement(host(0), "dc1", lambda: topo, lambda: nts_cat, dict)
    simple_table = ReplicaTable.simple(ring, 2)
    for key in (b"a", b"b", b"zz", b"key-17"):
        token = token_of(key)
        assert [r.host_id for r in simple.replicas(table_def(), token)] == list(simple_table.for_token(token))
        hosts = [r.host_id for r in nts.replicas(table_def(), token)]
        assert len(set(hosts)) == 3 and hosts[0] == ring.primary(token)


def test_ranges_cover_the_ring_in_order_and_merge_equal_replica_sets() -> None:
    topo = topology(3)
    cat, _ = catalog(Replication(NTS, (("dc1", "1"),)), tablets=False)
    placement = ReplicaPlacement(host(0), "dc1", lambda: topo, lambda: cat, dict)
    ranges = placement.ranges(table_def())
    assert ranges[0].token_range.start == MIN_TOKEN and ranges[-1].token_range.end == MAX_TOKEN
    for a, b in itertools.pairwise(ranges):
        assert a.token_range.end == b.token_range.start
        assert a.replicas != b.replicas
    for rr in ranges:
        assert placement.replicas(table_def(), rr.token_range.end) == rr.replicas
    full_cat, _ = catalog(Replication(NTS, (("dc1", "3"),)), tablets=False)
    full = ReplicaPlacement(host(0), "dc1", lambda: topo, lambda: full_cat, dict)
    assert len(full.ranges(table_def())) == 1 and not full.local_only(table_def())


def test_without_topology_everything_is_local() -> None:
    cat, _ = catalog(Replication(NTS, (("dc1", "3"),)), tablets=False)
    placement = ReplicaPlacement(host(5), "dc9", Topology, lambda: cat, dict)
    replicas = placement.replicas(table_def(), 42)
    assert [(r.host_id, r.dc) for r in replicas] == [(host(5), "dc9")]
    assert placement.local_only(table_def())


def test_vnode_replicas_follow_the_topology_states_rings() -> None:
    """A joining node owns nothing until the vnode phase; then writes go to both rings (reads to
    the old, then to the new), and once it is normal only its ring is left."""
    topo = topology(4)
    cat, _ = catalog(Replication(SIMPLE, (("replication_factor", "2"),)), tablets=False)
    joiner = host(3)
    nodes = {h: TopoNode(h, NodeState.NORMAL) for h in topo.members if h != joiner}
    join = Request(uuid.uuid1(), RequestKind.JOIN, joiner)
    states = {
        "queued": TopologyState(nodes={**nodes, joiner: TopoNode(joiner, NodeState.NONE)}),
        "tablets": TopologyState(
            nodes={**nodes, joiner: TopoNode(joiner, NodeState.BOOTSTRAPPING)},
            transition=Transition(join, TransitionState.TABLET_MIGRATION),
        ),
    }
    states["read old"] = replace(
        states["tablets"], transition=Transition(join, TransitionState.WRITE_BOTH_READ_OLD)
    )
    states["read new"] = replace(
        states["tablets"], transition=Transition(join, TransitionState.WRITE_BOTH_READ_NEW)
    )
    states["normal"] = TopologyState(nodes={**nodes, joiner: TopoNode(joiner, NodeState.NORMAL)})
    current = states["queued"]
    placement = ReplicaPlacement(
        host(0), "dc1", lambda: topo, lambda: cat, dict, topology_state=lambda: current
    )
    three = Topology("c", {h: r for h, r in topo.members.items() if h != joiner})
    old = ReplicaTable.simple(TokenRing.from_assignments({h: r.tokens for h, r in three.members.items()}), 2)
    new = ReplicaTable.simple(TokenRing.from_assignments({h: r.tokens for h, r in topo.members.items()}), 2)
    tokens = [token_of(f"k{i}".encode()) for i in range(300)]
    moved = [t for t in tokens if set(old.for_token(t)) != set(new.for_token(t))]
    assert moved
    for name, state in states.items():
        current = state
        for t in tokens:
            reads = {r.host_id for r in placement.replicas(table_def(), t)}
            writes = [{r.host_id for r in s} for s in placement.write_sets(table_def(), t)]
            expect_read = new.for_token(t) if name in ("read new", "normal") else old.for_token(t)
            assert reads == set(expect_read), (name, t)
            if name in ("read old", "read new") and t in moved:
                assert writes == [set(old.for_token(t)), set(new.for_token(t))]
            else:
                assert writes == [reads]
        scanned = {r.host_id for rr in placement.ranges(table_def()) for r in rr.replicas}
        assert (joiner in scanned) == (name in ("read new", "normal"))
