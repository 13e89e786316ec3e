"""Which vnode ranges change hands, checked against a naive model of ring ownership: a range is
moved exactly where the replica sets of the two rings differ, streaming from the chosen sources
keeps every quorum write on a quorum of the new set, and cleanup keeps exactly what is owned."""

from __future__ import annotations

import itertools
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.dht.ring import Location
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.schema.model import SIMPLE, Replication
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.state import Request, TopologyState, TopoNode, Transition
from tabletdb.topology.states import NodeState, RequestKind, TransitionState

NTS = "org.apache.cassandra.locator.NetworkTopologyStrategy"


def h(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


def simple(rf: int) -> Replication:
    return Replication(SIMPLE, (("replication_factor", str(rf)),))


def naive_replicas(ring: vr.Ring, token: int, rf: int) -> list[uuid.UUID]:
    """SimpleStrategy the slow way: sort every (token, host), start at the first >= token."""
    entries = sorted((t, host) for host, ts in ring.items() for t in ts)
    start = next((i for i, (t, _) in enumerate(entries) if t >= token), 0)
    out: list[uuid.UUID] = []
    for i in range(len(entries)):
        host = entries[(start + i) % len(entries)][1]
        if host not in out:
            out.append(host)
        if len(out) == rf:
            break
    return out


def probes(*rings: vr.Ring) -> list[int]:
    """Tokens that fall in every elementary range of the rings, and their edges."""
    points = {MIN_TOKEN + 1, MAX_TOKEN}
    for ring in rings:
        for ts in ring.values():
            for t in ts:
                points.update({t, t - 1, t + 1})
    return sorted(p for p in points if MIN_TOKEN < p <= MAX_TOKEN)


tokens_st = st.integers(min_value=-1000, max_value=1000) | st.sampled_from([MIN_TOKEN + 1, MAX_TOKEN])


@st.composite
def ring_pair(draw: st.DrawFn) -> tuple[vr.Ring, vr.Ring, int]:
    """An old ring and a new one that differs by one node joining or leaving (or any other change)."""
    n = draw(st.integers(min_value=2, max_value=5))
    pool = draw(st.lists(tokens_st, min_size=n * 3, max_size=n * 3, unique=True))
    all_hosts = {h(i): tuple(sorted(pool[i * 3 : i * 3 + draw(st.integers(1, 3))])) for i in range(n)}
    hosts = sorted(all_hosts)
    old = {x: all_hosts[x] for x in hosts[:-1]}
    kind = draw(st.sampled_from(["join", "leave", "any"]))
    if kind == "join":
        new = dict(all_hosts)
    elif kind == "leave" and len(old) > 1:
        leaving = draw(st.sampled_from(sorted(old)))
        new = {x: t for x, t in old.items() if x != leaving}
    else:
        new = {x: all_hosts[x] for x in draw(st.sets(st.sampled_from(hosts), min_size=1))}
    rf = draw(st.integers(min_value=1, max_value=4))
    return old, new, rf


@settings(max_examples=100, deadline=None)
@given(ring_pair())
def test_moved_ranges_are_exactly_the_ownership_delta(case: tuple[vr.Ring, vr.Ring, int]) -> None:
    old, new, rf = case
    moves = vr.range_moves(old, new, simple(rf), {})
    for a, b in itertools.pairwise(moves):
        assert a.token_range.end <= b.token_range.start
    for m in moves:
        assert not m.token_range.wraps
    for token in probes(old, new):
        before, after = naive_replicas(old, token, rf), naive_replicas(new, token, rf)
        found = [m for m in moves if m.token_range.contains(token)]
        if set(before) == set(after):
            assert not found, (token, before, after, found)
        else:
            assert len(found) == 1, (token, before, after, moves)
            assert (set(found[0].old), set(found[0].new)) == (set(before), set(after))


def _quorum_holders_after(move: vr.RangeMove, quorum: set[uuid.UUID], sources: tuple[uuid.UUID, ...]) -> int:
    holders = {x for x in quorum if x in move.new}
    if quorum & set(sources):
        holders |= set(vr.receivers(move))
    return len(holders)


@settings(max_examples=100, deadline=None)
@given(ring_pair())
def test_streaming_from_the_sources_keeps_every_quorum_write_on_a_quorum(
    case: tuple[vr.Ring, vr.Ring, int],
) -> None:
    old, new, rf = case
    gone = set(old) - set(new)
    joined = set(new) - set(old)
    if len(gone) + len(joined) != 1:
        return  # one node at a time, as requests are
    if joined:
        request = Request(h(99), RequestKind.JOIN, next(iter(joined)))
    else:
        request = Request(h(99), RequestKind.LEAVE, next(iter(gone)))
    for m in vr.range_moves(old, new, simple(rf), {}):
        src = vr.sources(m, request, set(old))
        assert set(src) <= set(m.old)
        majority = len(m.old) // 2 + 1
        for quorum in itertools.combinations(m.old, majority):
            assert _quorum_holders_after(m, set(quorum), src) >= len(m.new) // 2 + 1, (m, quorum, src)


def test_a_removed_node_is_never_a_source_and_every_survivor_is() -> None:
    old = {h(0): (-500,), h(1): (0,), h(2): (500,)}
    new = {h(1): (0,), h(2): (500,)}
    request = Request(h(9), RequestKind.REMOVE, h(0))
    for m in vr.range_moves(old, new, simple(2), {}):
        assert vr.sources(m, request, {h(1), h(2)}) == tuple(x for x in m.old if x != h(0))
    assert vr.losers(vr.range_moves(old, new, simple(2), {}), request) == frozenset()


def test_a_dead_loser_is_replaced_by_the_staying_replicas() -> None:
    old = {h(0): (-500,), h(1): (0,), h(2): (500,)}
    new = {**old, h(3): (250,)}
    request = Request(h(9), RequestKind.JOIN, h(3))
    (m,) = [m for m in vr.range_moves(old, new, simple(2), {}) if m.token_range.contains(250)]
    assert vr.sources(m, request, set(old)) == m.lost
    assert vr.sources(m, request, set(old) - set(m.lost)) == tuple(x for x in m.old if x not in m.lost)
    assert vr.losers([m], request) == frozenset(m.lost)


@settings(max_examples=60, deadline=None)
@given(ring_pair())
def test_owned_ranges_and_their_complement_split_the_ring(case: tuple[vr.Ring, vr.Ring, int]) -> None:
    ring, _, rf = case
    for host in ring:
        owned = vr.owned_ranges(ring, host, simple(rf), {})
        rest = vr.complement(owned)
        for token in probes(ring):
            inside = any(r.contains(token) for r in owned)
            assert inside == (host in naive_replicas(ring, token, rf)), token
            assert inside != any(r.contains(token) for r in rest)


def test_network_topology_moves_stay_in_their_datacenter() -> None:
    loc = {
        h(0): Location("dc1", "r1"),
        h(1): Location("dc1", "r1"),
        h(2): Location("dc2", "r1"),
        h(3): Location("dc2", "r1"),
        h(4): Location("dc1", "r1"),
    }
    old = {h(0): (-600,), h(1): (-100,), h(2): (300,), h(3): (700,)}
    new = {**old, h(4): (100,)}
    repl = Replication(NTS, (("dc1", "2"), ("dc2", "1")))
    moves = vr.range_moves(old, new, repl, loc)
    assert moves
    for m in moves:
        assert m.gained == (h(4),)
        assert all(loc[x].dc == "dc1" for x in m.lost)


def test_rings_follow_the_transition_state() -> None:
    tokens: vr.Ring = {h(0): (-500,), h(1): (0,), h(2): (500,)}
    nodes = {x: TopoNode(x, NodeState.NORMAL) for x in tokens}
    nodes[h(2)] = TopoNode(h(2), NodeState.BOOTSTRAPPING)
    join = Request(h(9), RequestKind.JOIN, h(2))
    base = TopologyState(nodes=nodes)
    old: vr.Ring = {h(0): (-500,), h(1): (0,)}
    assert vr.rings(base, tokens) == vr.Rings(old, (old,))
    migrating = TopologyState(nodes=nodes, transition=Transition(join, TransitionState.TABLET_MIGRATION))
    assert vr.rings(migrating, tokens).read == old
    read_old = TopologyState(nodes=nodes, transition=Transition(join, TransitionState.WRITE_BOTH_READ_OLD))
    assert vr.rings(read_old, tokens) == vr.Rings(old, (old, tokens))
    read_new = TopologyState(nodes=nodes, transition=Transition(join, TransitionState.WRITE_BOTH_READ_NEW))
    assert vr.rings(read_new, tokens) == vr.Rings(tokens, (old, tokens))
    rollback = TopologyState(nodes=nodes, transition=Transition(join, TransitionState.ROLLBACK_TO_NORMAL))
    assert vr.rings(rollback, tokens).writes == (old,)


def test_a_replacement_moves_ranges_by_its_own_record_tokens() -> None:
    tokens: vr.Ring = {h(0): (-500,), h(1): (0,), h(2): (500,), h(3): (0,)}
    nodes = {x: TopoNode(x, NodeState.NORMAL) for x in (h(0), h(1), h(2))}
    nodes[h(3)] = TopoNode(h(3), NodeState.REPLACING)
    request = Request(h(9), RequestKind.REPLACE, h(3), h(1))
    old = vr.owners(TopologyState(nodes=nodes), tokens)
    assert h(3) not in old  # a replacing node owns nothing yet
    # it took the replaced node's tokens over: the same ring, the replaced node's ranges rebuilt
    assert vr.target_ring(request, old, tokens) == {h(0): (-500,), h(3): (0,), h(2): (500,)}
    moves = vr.range_moves(old, vr.target_ring(request, old, tokens), simple(2), {})
    assert moves and all(m.lost == (h(1),) and m.gained == (h(3),) for m in moves)
    assert all(vr.sources(m, request, {h(0), h(2)}) == tuple(x for x in m.old if x != h(1)) for m in moves)
    # it came with tokens of its own: the ring is what its record says, ranges move accordingly
    other = {**tokens, h(3): (250,)}
    assert vr.target_ring(request, old, other) == {h(0): (-500,), h(3): (250,), h(2): (500,)}


def test_complement_of_nothing_is_the_ring() -> None:
    assert vr.complement([]) == [TokenRange(MIN_TOKEN, MAX_TOKEN)]
    assert vr.complement([TokenRange(MIN_TOKEN, MAX_TOKEN)]) == []


def test_a_node_keeps_what_it_replicates_in_either_ring_while_both_are_written() -> None:
    old: vr.Ring = {h(0): (-500,), h(1): (0,), h(2): (500,)}
    new: vr.Ring = {**old, h(3): (250,)}
    for host in (h(0), h(1), h(2)):
        kept = vr.kept_ranges(vr.Rings(new, (old, new)), host, simple(2), {})
        for token in probes(old, new):
            either = host in naive_replicas(old, token, 2) or host in naive_replicas(new, token, 2)
            assert any(r.contains(token) for r in kept) == either, (host, token)


def test_nodes_the_operator_ignores_are_no_sources() -> None:
    old = {h(0): (-500,), h(1): (0,), h(2): (500,), h(3): (900,)}
    new = {x: t for x, t in old.items() if x != h(0)}
    request = Request(h(9), RequestKind.REMOVE, h(0), ignore_nodes=frozenset({h(1)}))
    for m in vr.range_moves(old, new, simple(3), {}):
        src = vr.sources(m, request, {h(2), h(3)})
        assert src and h(0) not in src and h(1) not in src
