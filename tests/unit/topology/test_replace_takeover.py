"""Replace takes the dead node's vnode tokens over: the cluster decides the replacing node's tokens
(``group0.topology.decided_tokens``), and while the replace runs two members hold the same
tokens. Every view built from the members' tokens must stay a ring with each token once: the ring
reads and writes use (``vnode_ranges.rings``), nodetool's ring and ownership
(``node.admin.ring_info``), ``system.token_ring``, and the ring a CDC generation is built for
(``group0.tablet_planning.ring_owners``); the replaced node's ranges, and only they, move to the
new node, and the dead node drops out when the replace ends."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.cdc.generation import build_generation
from tabletdb.cql.types import INT, TEXT
from tabletdb.dht.ring import Location, random_tokens
from tabletdb.group0.cluster_state import ClusterState, _without_left
from tabletdb.group0.state import Group0State
from tabletdb.group0.tablet_planning import ring_owners
from tabletdb.group0.topology import NodeRecord, Topology, decided_tokens
from tabletdb.node.admin import ring_info
from tabletdb.systables.token_ring import token_ring_rows
from tabletdb.systables.topology import ClusterTopology
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.state import Request, TopologyState, TopoNode, Transition
from tabletdb.topology.states import NodeState, RequestKind, TransitionState
from tests.unit.schema.helpers import with_keyspace, with_table

SIMPLE = {"replication": {"class": "SimpleStrategy", "replication_factor": 2}}
NTS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 3}, "tablets": {"enabled": False}}
PHASES = (None, TransitionState.WRITE_BOTH_READ_OLD, TransitionState.WRITE_BOTH_READ_NEW)


def _host(i: int) -> uuid.UUID:
    return uuid.UUID(int=(i + 1) << 96)


def _record(h: uuid.UUID, tokens: tuple[int, ...], address: str, shards: int = 2) -> NodeRecord:
    return NodeRecord(h, address, address, "dc1", f"r{h.int % 2}", tokens, frozenset(), shard_count=shards)


def test_a_replacing_node_gets_the_replaced_nodes_tokens_and_a_member_keeps_its_own() -> None:
    dead, other, new = _host(0), _host(1), _host(9)
    topology = Topology(
        "c", {dead: _record(dead, (5, 50), "10.0.0.1"), other: _record(other, (9,), "10.0.0.2")}
    )
    asked = _record(new, (7, 70, 700), "10.0.0.1")
    assert decided_tokens(topology, asked, dead).tokens == (5, 50)  # taken over, whatever it brought
    assert decided_tokens(topology, asked).tokens == (7, 70, 700)  # a new node brings its own
    moved = _record(other, (1234,), "10.0.0.7")  # a refresh (new address) never moves tokens
    assert decided_tokens(topology, moved) == replace(moved, tokens=(9,))
    assert decided_tokens(topology, asked, uuid.uuid4()).tokens == (7, 70, 700)  # unknown: refused later


def _cluster(rng: random.Random, nodes: int, num_tokens: int, phase: TransitionState | None) -> ClusterState:
    """``nodes`` normal members, the first dead and being replaced by a node holding its tokens,
    the replace at ``phase``; a vnode keyspace of each strategy with one table."""
    hosts = [_host(i) for i in range(nodes)]
    taken: set[int] = set()
    members: dict[uuid.UUID, NodeRecord] = {}
    for i, h in enumerate(hosts):
        tokens = tuple(random_tokens(rng, num_tokens, taken))
        taken.update(tokens)
        members[h] = _record(h, tokens, f"10.0.0.{i + 1}", shards=1 + i % 3)
    dead, new = hosts[0], _host(99)
    members[new] = decided_tokens(Topology("c", members), _record(new, (1,), "10.0.0.1", 4), dead)
    topo_nodes = {h: TopoNode(h, NodeState.NORMAL) for h in hosts}
    request = Request(uuid.uuid1(), RequestKind.REPLACE, new, dead)
    topo_nodes[new] = TopoNode(new, NodeState.REPLACING, request.request_id, dead)
    transition = None if phase is None else Transition(request, phase, tablets_moved=False)
    catalog = None
    for name, options in (("simple", SIMPLE), ("nts", NTS)):
        catalog = with_keyspace(catalog, name, **options)
        catalog = with_table(catalog, "t", [("k", INT, False), ("v", TEXT, False)], ["k"], [], keyspace=name)
    assert catalog is not None
    state = TopologyState(nodes=topo_nodes, transition=transition, ignored=frozenset({dead}))
    return ClusterState(Group0State(catalog), Topology("c", members), topology_state=state)


def _finished(cluster: ClusterState) -> ClusterState:
    """The cluster once the replace ended: the new node normal, the dead one left and dropped."""
    t = cluster.topology_state
    assert t.transition is not None
    request = t.transition.request
    assert request.replaced_id is not None
    nodes = dict(t.nodes)
    nodes[request.host_id] = TopoNode(request.host_id, NodeState.NORMAL)
    nodes[request.replaced_id] = TopoNode(request.replaced_id, NodeState.LEFT)
    after = TopologyState(nodes=nodes)
    return replace(cluster, topology=_without_left(cluster.topology, after), topology_state=after)


def _views(cluster: ClusterState) -> None:
    """Every ring view of ``cluster``: none may fail, each lists a token once."""
    endpoints = ring_info.token_endpoints(cluster)
    every = {t for r in cluster.topology.members.values() for t in r.tokens}
    assert [t for t, _ in endpoints] == sorted(every)
    assert abs(sum(ring_info.token_ownership(cluster).values()) - 1.0) < 1e-9
    for keyspace, rf in (("simple", 2), ("nts", 3)):
        ranges = ring_info.describe_ring(cluster, keyspace, None)
        assert all(len(set(r.replicas)) == len(r.replicas) for r in ranges)
        owns = ring_info.effective_ownership(cluster, keyspace, None)
        assert (
            abs(sum(owns.values()) - min(rf, len(vr.owners(cluster.topology_state, _tokens(cluster))))) < 1e-6
        )
    vnodes = ring_owners(cluster)
    assert sorted(v.end for v in vnodes) == sorted(every)
    build_generation(vnodes, lambda: 7)  # raises on two ranges ending at one token
    shown = ClusterTopology(cluster.topology_state, cluster.topology.members, frozenset(), False)
    assert token_ring_rows(cluster.metadata.catalog, {}, shown)


def _tokens(cluster: ClusterState) -> dict[uuid.UUID, tuple[int, ...]]:
    return {h: r.tokens for h, r in cluster.topology.members.items()}


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), nodes=st.integers(3, 6), num_tokens=st.integers(1, 8))
def test_every_ring_view_names_each_token_once_through_a_replace(
    seed: int, nodes: int, num_tokens: int
) -> None:
    rng = random.Random(seed)
    for phase in PHASES:
        cluster = _cluster(rng, nodes, num_tokens, phase)
        _views(cluster)
        t = cluster.topology_state
        dead, new = _host(0), _host(99)
        named = vr.token_map(t, _tokens(cluster))
        assert {h for h in named.values()} == set(
            vr.owners(t, _tokens(cluster))
        )  # the dead node, not yet the new
        found = vr.rings(t, _tokens(cluster))
        if phase is None:
            assert found.writes == (found.read,) and new not in found.read
            continue
        old, target = found.writes
        assert target == {(new if h == dead else h): ts for h, ts in old.items()}  # same tokens, new owner
        assert found.read == (old if phase is TransitionState.WRITE_BOTH_READ_OLD else target)
        for options in (SIMPLE, NTS):
            ks = cluster.metadata.catalog.keyspace("simple" if options is SIMPLE else "nts")
            assert ks is not None
            locations = {h: Location(r.datacenter, r.rack) for h, r in cluster.topology.members.items()}
            for move in vr.range_moves(old, target, ks.definition.replication, locations):
                assert (move.lost, move.gained) == ((dead,), (new,))  # no range moves between others
                assert dead not in vr.sources(move, t.transition.request, set(old) - {dead})  # type: ignore[union-attr]
    before = _cluster(rng, nodes, num_tokens, TransitionState.WRITE_BOTH_READ_NEW)
    done = _finished(before)
    _views(done)
    assert _host(0) not in done.topology.members
    assert done.topology.members[_host(99)].tokens == before.topology.members[_host(0)].tokens
    assert set(vr.token_map(done.topology_state, _tokens(done)).values()) == set(done.topology.members)
