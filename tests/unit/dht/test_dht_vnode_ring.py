"""Vnode ring: token choice, SimpleStrategy and NetworkTopologyStrategy replica walks."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.dht import MIN_TOKEN, TokenRange
from tabletdb.dht.ring import (
    Location,
    ReplicaTable,
    TokenRing,
    network_topology_replicas,
    random_tokens,
    simple_strategy_replicas,
)


def test_random_tokens_deterministic_distinct_and_avoid_taken() -> None:
    first = random_tokens(random.Random(7), 64)
    assert first == random_tokens(random.Random(7), 64)
    assert first == sorted(set(first)) and len(first) == 64
    assert MIN_TOKEN not in first
    again = random_tokens(random.Random(7), 64, taken=set(first[:10]))
    assert not set(again) & set(first[:10])


def test_random_tokens_rejects_zero() -> None:
    with pytest.raises(ValueError, match="num_tokens"):
        random_tokens(random.Random(1), 0)


def small_ring() -> TokenRing[str]:
    return TokenRing.from_assignments({"a": [-100, 50], "b": [0, 200], "c": [100]})


def test_ring_lookup_and_ranges() -> None:
    ring = small_ring()
    assert ring.tokens == (-100, 0, 50, 100, 200)
    assert ring.owners == ("a", "b", "a", "c", "b")
    assert ring.primary(-100) == "a"
    assert ring.primary(1) == "a"
    assert ring.primary(201) == "a"  # wraps to the first token
    assert ring.ranges_of("a") == [TokenRange(200, -100), TokenRange(0, 50)]


def test_duplicate_token_rejected() -> None:
    with pytest.raises(ValueError, match="claimed by both"):
        TokenRing.from_assignments({"a": [1], "b": [1]})


def test_simple_strategy_next_distinct_hosts() -> None:
    ring = small_ring()
    assert simple_strategy_replicas(ring, ring.index_of(1), 2) == ["a", "c"]
    assert simple_strategy_replicas(ring, ring.index_of(150), 3) == ["b", "a", "c"]
    assert simple_strategy_replicas(ring, 0, 9) == ["a", "b", "c"]


def test_nts_prefers_distinct_racks_then_fills_in_ring_order() -> None:
    # ring order: h1(r1) h2(r1) h3(r2) h4(r1) ; one DC with racks r1, r2
    ring = TokenRing.from_assignments({"h1": [10], "h2": [20], "h3": [30], "h4": [40]})
    loc = {h: Location("dc1", r) for h, r in {"h1": "r1", "h2": "r1", "h3": "r2", "h4": "r1"}.items()}
    # rf 2: h1 (r1), h2 skipped (r1 seen), h3 (r2)
    assert network_topology_replicas(ring, 0, {"dc1": 2}, loc) == ["h1", "h3"]
    # rf 3: after both racks are seen, the skipped h2 fills before h4
    assert network_topology_replicas(ring, 0, {"dc1": 3}, loc) == ["h1", "h3", "h2"]
    # rf larger than the DC is capped
    assert sorted(network_topology_replicas(ring, 0, {"dc1": 9}, loc)) == ["h1", "h2", "h3", "h4"]


def test_nts_per_dc_and_unknown_dc() -> None:
    ring = TokenRing.from_assignments({"a": [1], "b": [2], "c": [3], "d": [4]})
    loc = {
        "a": Location("dc1", "r1"),
        "b": Location("dc2", "r1"),
        "c": Location("dc1", "r2"),
        "d": Location("dc2", "r2"),
    }
    assert network_topology_replicas(ring, 1, {"dc1": 1, "dc2": 2}, loc) == ["b", "c", "d"]
    assert network_topology_replicas(ring, 0, {"dc3": 3}, loc) == []


def test_nts_requires_locations() -> None:
    ring = TokenRing.from_assignments({"a": [1], "b": [2]})
    with pytest.raises(ValueError, match="no known dc/rack"):
        network_topology_replicas(ring, 0, {"dc1": 1}, {"a": Location("dc1", "r1")})


hosts = st.sampled_from([f"h{i}" for i in range(8)])


@st.composite
def rings(draw: st.DrawFn) -> tuple[TokenRing[str], dict[str, Location]]:
    assignment = draw(st.dictionaries(st.integers(-1000, 1000), hosts, min_size=1, max_size=30))
    by_host: dict[str, list[int]] = {}
    for token, host in assignment.items():
        by_host.setdefault(host, []).append(token)
    locations = {
        h: Location(draw(st.sampled_from(["dc1", "dc2"])), draw(st.sampled_from(["r1", "r2", "r3"])))
        for h in by_host
    }
    return TokenRing.from_assignments(by_host), locations


@given(rings(), st.integers(0, 4), st.integers(0, 4), st.integers(-1100, 1100))
def test_nts_properties(
    ring_loc: tuple[TokenRing[str], dict[str, Location]], rf1: int, rf2: int, token: int
) -> None:
    ring, loc = ring_loc
    replicas = network_topology_replicas(ring, ring.index_of(token), {"dc1": rf1, "dc2": rf2}, loc)
    assert len(replicas) == len(set(replicas))
    for dc, rf in (("dc1", rf1), ("dc2", rf2)):
        in_dc = [h for h in replicas if loc[h].dc == dc]
        dc_hosts = {h for h in ring.hosts() if loc[h].dc == dc}
        assert len(in_dc) == min(rf, len(dc_hosts))
        dc_racks = {loc[h].rack for h in dc_hosts}
        # as many distinct racks as possible
        assert len({loc[h].rack for h in in_dc}) == min(len(in_dc), len(dc_racks))


@given(rings(), st.integers(1, 5))
def test_replica_table_matches_walks(ring_loc: tuple[TokenRing[str], dict[str, Location]], rf: int) -> None:
    ring, loc = ring_loc
    table = ReplicaTable.simple(ring, rf)
    nts = ReplicaTable.network_topology(ring, {"dc1": rf}, loc)
    for token in (-1001, *ring.tokens, 1001):
        assert table.for_token(token) == tuple(simple_strategy_replicas(ring, ring.index_of(token), rf))
        assert nts.for_token(token) == tuple(
            network_topology_replicas(ring, ring.index_of(token), {"dc1": rf}, loc)
        )
    host = ring.owners[0]
    for r in table.ranges_replicated_by(host):
        assert host in table.for_token(r.end)


def _driver_hosts(locations: dict[str, Location]) -> dict[str, object]:
    from cassandra.policies import SimpleConvictionPolicy
    from cassandra.pool import Host

    return {
        name: Host(f"127.0.0.{i + 1}", SimpleConvictionPolicy, loc.dc, loc.rack, host_id=name)
        for i, (name, loc) in enumerate(sorted(locations.items()))
    }


@given(rings(), st.integers(0, 4), st.integers(0, 4), st.integers(1, 4))
def test_replicas_match_the_driver(
    ring_loc: tuple[TokenRing[str], dict[str, Location]], rf1: int, rf2: int, simple_rf: int
) -> None:
    """Token-aware drivers compute vnode replicas themselves; agree with them on the sets."""
    from cassandra.metadata import Murmur3Token, NetworkTopologyStrategy, SimpleStrategy

    ring, loc = ring_loc
    hosts = _driver_hosts(loc)
    tokens = [Murmur3Token(t) for t in ring.tokens]
    owner = {Murmur3Token(t): hosts[h] for t, h in zip(ring.tokens, ring.owners)}
    nts = NetworkTopologyStrategy({"dc1": str(rf1), "dc2": str(rf2)}).make_token_replica_map(owner, tokens)
    simple = SimpleStrategy({"replication_factor": str(simple_rf)}).make_token_replica_map(owner, tokens)
    for index, token in enumerate(tokens):
        ours = network_topology_replicas(ring, index, {"dc1": rf1, "dc2": rf2}, loc)
        assert len(set(ours)) == len(ours)
        if len(set(nts[token])) == len(nts[token]):
            # (the driver can list a skipped host twice when it owns consecutive tokens; there it
            # is the driver that is wrong, so only duplicate-free driver answers are compared)
            assert {hosts[h] for h in ours} == set(nts[token])
        assert [hosts[h] for h in simple_strategy_replicas(ring, index, simple_rf)] == simple[token]
