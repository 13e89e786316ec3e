"""Replica allocation for new tablets: distinct hosts, racks spread, least-loaded shards."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql.errors import ConfigurationError
from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas, new_tablet_map


def node(i: int, rack: str, shards: int = 2, dc: str = "dc1", load: tuple[int, ...] = ()) -> NodeCapacity:
    return NodeCapacity(uuid.UUID(int=i), dc, rack, shards, load)


def test_rf3_on_three_racks_uses_every_rack_and_balances_shards() -> None:
    nodes = [node(1, "r1"), node(2, "r2"), node(3, "r3")]
    replicas, loads = allocate_replicas(8, {"dc1": 3}, nodes)
    for tablet in replicas:
        assert len({r.host for r in tablet}) == 3
    assert all(shards == (4, 4) for shards in loads.values())


def test_racks_preferred_over_hosts_in_the_same_rack() -> None:
    nodes = [node(1, "r1"), node(2, "r1"), node(3, "r2")]
    replicas, _ = allocate_replicas(16, {"dc1": 2}, nodes)
    by_rack = {uuid.UUID(int=1): "r1", uuid.UUID(int=2): "r1", uuid.UUID(int=3): "r2"}
    for tablet in replicas:
        assert {by_rack[r.host] for r in tablet} == {"r1", "r2"}


def test_existing_load_is_filled_first() -> None:
    nodes = [node(1, "r1", load=(5, 0)), node(2, "r1", load=(5, 5))]
    replicas, loads = allocate_replicas(5, {"dc1": 1}, nodes)
    assert [t[0] for t in replicas] == [(uuid.UUID(int=1), 1)] * 5
    assert loads[uuid.UUID(int=1)] == (5, 5)


def test_rack_list_pins_one_replica_per_listed_rack() -> None:
    nodes = [node(1, "r1"), node(2, "r2"), node(3, "r3")]
    replicas, _ = allocate_replicas(4, {"dc1": ("r1", "r3")}, nodes)
    assert all({r.host for r in t} == {uuid.UUID(int=1), uuid.UUID(int=3)} for t in replicas)


def test_multi_dc() -> None:
    nodes = [node(1, "r1"), node(2, "r1", dc="dc2"), node(3, "r2", dc="dc2")]
    replicas, _ = allocate_replicas(2, {"dc1": 1, "dc2": 2, "dc3": 0}, nodes)
    assert all(len(t) == 3 for t in replicas)


def test_not_enough_nodes() -> None:
    with pytest.raises(
        ConfigurationError, match="doesn't have enough token-owning nodes for replication_factor="
    ):
        allocate_replicas(1, {"dc1": 2}, [node(1, "r1")])
    with pytest.raises(ConfigurationError, match="no nodes in rack r9"):
        allocate_replicas(1, {"dc1": ("r9",)}, [node(1, "r1")])
    with pytest.raises(ConfigurationError, match="more than once"):
        allocate_replicas(1, {"dc1": ("r1", "r1")}, [node(1, "r1"), node(2, "r1")])


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        allocate_replicas(1, {"dc1": 1}, [node(1, "r1"), node(1, "r2")])
    with pytest.raises(ValueError, match="load values"):
        node(1, "r1", shards=2, load=(1,))
    with pytest.raises(ValueError, match="at least one tablet"):
        allocate_replicas(0, {"dc1": 1}, [node(1, "r1")])


def test_new_tablet_map() -> None:
    tm = new_tablet_map(uuid.UUID(int=9), 4, {"dc1": 2}, [node(1, "r1"), node(2, "r2")])
    assert tm.tablet_count == 4
    assert all(len(t.replicas) == 2 for t in tm)


@given(
    st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3"]), st.integers(1, 4)), min_size=3, max_size=7),
    st.integers(1, 3),
    st.integers(1, 32),
)
def test_allocation_properties(shape: list[tuple[str, int]], rf: int, count: int) -> None:
    nodes = [node(i + 1, rack, shards) for i, (rack, shards) in enumerate(shape)]
    racks = {n.rack for n in nodes}
    replicas, loads = allocate_replicas(count, {"dc1": rf}, nodes)
    rack_of = {n.host_id: n.rack for n in nodes}
    for tablet in replicas:
        assert len(tablet) == rf
        assert len({r.host for r in tablet}) == rf
        assert len({rack_of[r.host] for r in tablet}) == min(rf, len(racks))
    # shards within one node never differ by more than one replica (least-loaded shard first)
    for shards in loads.values():
        assert max(shards) - min(shards) <= 1
    assert sum(sum(s) for s in loads.values()) == rf * count
    assert Counter(r for t in replicas for r in t).total() == rf * count
