"""Join admission and feature enabling in group0's topology: deterministic, order-independent."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.group0.topology import (
    JoinCommand,
    JoinRefused,
    NodeRecord,
    Topology,
    apply_join,
    check_join,
    raft_id_of,
    topology_from_plain,
    topology_to_plain,
)

FEATURES = ("A", "B", "C", "D")


def record(n: int, features: frozenset[str] = frozenset(FEATURES)) -> NodeRecord:
    return NodeRecord(
        host_id=uuid.UUID(int=(n + 1) << 80),
        address=f"127.0.0.{n + 1}",
        rpc_address=f"127.0.0.{n + 1}",
        datacenter="dc1",
        rack=f"r{n % 2}",
        tokens=(n, -n),
        supported_features=features,
    )


def join(topology: Topology, r: NodeRecord, cluster: str = "c") -> tuple[Topology, bool]:
    return apply_join(topology, JoinCommand(uuid.uuid4(), cluster, r))


def test_founder_sets_name_group_id_and_enables_its_features() -> None:
    t, ok = join(Topology(), record(0, frozenset({"A", "B"})))
    assert ok
    assert t.cluster_name == "c"
    assert t.group0_id == record(0).host_id
    assert t.enabled_features == {"A", "B"}


def test_feature_enabled_only_when_every_member_supports_it() -> None:
    t, _ = join(Topology(), record(0, frozenset({"A", "B", "C"})))
    t, ok = join(replace_enabled(t, frozenset()), record(1, frozenset({"A", "B"})))
    assert ok
    assert t.enabled_features == {"A", "B"}


def replace_enabled(t: Topology, enabled: frozenset[str]) -> Topology:
    return Topology(t.cluster_name, t.members, enabled, t.group0_id)


def test_node_lacking_an_enabled_feature_is_refused_with_its_name() -> None:
    t, _ = join(Topology(), record(0, frozenset({"A", "B"})))
    with pytest.raises(JoinRefused, match=r"feature\(s\) B;"):
        check_join(t, "c", record(1, frozenset({"A"})))
    after, ok = join(t, record(1, frozenset({"A"})))
    assert not ok and after == t


def test_other_cluster_name_is_refused() -> None:
    t, _ = join(Topology(), record(0))
    with pytest.raises(JoinRefused, match="cluster_name 'other'"):
        check_join(t, "other", record(1))
    assert not join(t, record(1), cluster="other")[1]


def test_address_taken_by_another_host_is_refused() -> None:
    t, _ = join(Topology(), record(0))
    impostor = dataclasses.replace(record(0), host_id=uuid.uuid4())
    with pytest.raises(JoinRefused, match="already belongs"):
        check_join(t, "c", impostor)


def test_rejoin_of_a_member_is_idempotent() -> None:
    t, _ = join(Topology(), record(0))
    t2, ok = join(t, record(0))
    assert ok and t2 == t


@given(st.lists(st.frozensets(st.sampled_from(FEATURES)), min_size=1, max_size=6))
def test_enabled_features_never_shrink_and_are_supported_by_all(feature_sets: list[frozenset[str]]) -> None:
    t = Topology()
    for n, features in enumerate(feature_sets):
        before = t.enabled_features
        t, _ = join(t, record(n, features))
        assert before <= t.enabled_features
        for member in t.members.values():
            assert t.enabled_features <= member.supported_features


def test_plain_round_trip() -> None:
    t, _ = join(Topology(), record(0))
    t, _ = join(t, record(1))
    assert topology_from_plain(topology_to_plain(t)) == t


def test_raft_ids_are_positive_and_fit_63_bits() -> None:
    for _ in range(100):
        rid = raft_id_of(uuid.uuid4())
        assert 0 < rid < 2**63
    assert raft_id_of(uuid.UUID(int=0)) == 1


def test_founder_is_the_only_seed_or_the_lowest_of_a_shared_seed_list() -> None:
    from tabletdb.node.group0_shell.service import founds_cluster

    assert founds_cluster("10.0.0.5", ())
    assert founds_cluster("10.0.0.5", ("10.0.0.5",))
    assert not founds_cluster("10.0.0.6", ("10.0.0.5",))
    shared = ("10.0.0.10", "10.0.0.9", "10.0.0.11")
    assert [a for a in shared if founds_cluster(a, shared)] == ["10.0.0.9"]
    assert not founds_cluster("10.0.0.1", shared)  # not a seed: joins even if its address is lower
