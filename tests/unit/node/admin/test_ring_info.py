"""The ring as nodetool shows it, from group0's state: ownership, ranges, replicas of a key."""

from __future__ import annotations

import re
import uuid
from dataclasses import replace

import pytest

from tabletdb.cql.types import INT, TEXT
from tabletdb.dht.murmur3 import token_of
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import Group0State
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.node.admin import ring_info
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tests.unit.schema.helpers import with_keyspace, with_table

A, B, C = (uuid.UUID(int=i << 96) for i in (1, 2, 3))
QUARTER = 1 << 62


def _node(host: uuid.UUID, address: str, tokens: tuple[int, ...], dc: str = "dc1") -> NodeRecord:
    return NodeRecord(host, address, address, dc, "rack1", tokens, frozenset())


def _state(**keyspaces: dict[str, object]) -> ClusterState:
    # Tokens at the quarter points: A owns (-2^63, -2^62] and (0, 2^62], B and C a quarter each.
    members = {
        A: _node(A, "10.0.0.1", (-QUARTER, QUARTER)),
        B: _node(B, "10.0.0.2", (0,)),
        C: _node(C, "10.0.0.3", (MAX_TOKEN,)),
    }
    catalog = None
    for name, options in keyspaces.items():
        catalog = with_keyspace(catalog, name, **options)
        catalog = with_table(catalog, "t", [("k", INT, False), ("v", TEXT, False)], ["k"], [], keyspace=name)
    state = ClusterState(Group0State(catalog) if catalog else Group0State(), Topology("c", members))
    return state


def _with_tablets(state: ClusterState, keyspace: str, replicas: list[list[uuid.UUID]]) -> ClusterState:
    table = state.metadata.catalog.table(keyspace, "t")
    assert table is not None
    tablet_map = TabletMap.even(table.id, [[TabletReplica(h, 0) for h in rs] for rs in replicas])
    return replace(state, metadata=replace(state.metadata, tablets=FrozenMap({table.id: tablet_map})))


VNODES_RF1 = {"replication": {"class": "SimpleStrategy", "replication_factor": 1}}
VNODES_RF2 = {"replication": {"class": "SimpleStrategy", "replication_factor": 2}}
TABLETS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 2}, "tablets": {"enabled": True}}


def test_token_ownership_is_each_nodes_primary_ranges() -> None:
    owns = ring_info.token_ownership(_state())
    assert owns == pytest.approx({"10.0.0.1": 0.5, "10.0.0.2": 0.25, "10.0.0.3": 0.25}, abs=1e-9)


def test_token_endpoints_are_in_token_order() -> None:
    assert ring_info.token_endpoints(_state()) == [
        (-QUARTER, "10.0.0.1"),
        (0, "10.0.0.2"),
        (QUARTER, "10.0.0.1"),
        (MAX_TOKEN, "10.0.0.3"),
    ]


def test_effective_ownership_counts_every_replica() -> None:
    state = _state(v1=VNODES_RF1, v2=VNODES_RF2)
    assert ring_info.effective_ownership(state, "v1", None) == pytest.approx(
        ring_info.token_ownership(state), abs=1e-9
    )
    # RF=2: each range is also held by the next node clockwise; the shares sum to 2.
    owns = ring_info.effective_ownership(state, "v2", None)
    assert sum(owns.values()) == pytest.approx(2.0)
    assert owns == pytest.approx({"10.0.0.1": 1.0, "10.0.0.2": 0.5, "10.0.0.3": 0.5}, abs=1e-9)


def test_describe_ring_lists_every_vnode_range_with_its_replicas() -> None:
    ranges = ring_info.describe_ring(_state(v2=VNODES_RF2), "v2", None)
    assert [(r.token_range.start, r.token_range.end) for r in ranges] == [
        (MAX_TOKEN, -QUARTER),
        (-QUARTER, 0),
        (0, QUARTER),
        (QUARTER, MAX_TOKEN),
    ]
    assert [r.replicas for r in ranges] == [(A, B), (B, A), (A, C), (C, A)]


def test_a_tablets_keyspace_needs_a_table_and_then_shows_its_tablets() -> None:
    state = _with_tablets(_state(tk=TABLETS), "tk", [[A, B], [B, C], [C, A], [A, B]])
    with pytest.raises(ring_info.RingQueryError, match=r"uses tablets.*name a table"):
        ring_info.describe_ring(state, "tk", None)
    ranges = ring_info.describe_ring(state, "tk", "t")
    assert [r.replicas for r in ranges] == [(A, B), (B, C), (C, A), (A, B)]
    assert ranges[0].token_range.start == MIN_TOKEN and ranges[-1].token_range.end == MAX_TOKEN
    owns = ring_info.effective_ownership(state, "tk", "t")
    assert owns == pytest.approx({"10.0.0.1": 0.75, "10.0.0.2": 0.75, "10.0.0.3": 0.5}, abs=1e-9)


def test_natural_endpoints_are_the_replicas_of_the_keys_token() -> None:
    state = _with_tablets(_state(tk=TABLETS), "tk", [[A, B], [B, C], [C, A], [A, B]])
    for key in range(20):
        token = token_of(key.to_bytes(4, "big", signed=True))
        expected = next(r for r in ring_info.describe_ring(state, "tk", "t") if r.token_range.contains(token))
        addresses = [state.topology.members[h].address for h in expected.replicas]
        assert ring_info.natural_endpoints(state, "tk", "t", str(key)) == addresses


@pytest.mark.parametrize(
    ("keyspace", "table", "key", "message"),
    [
        ("nope", "t", "1", "keyspace nope does not exist"),
        ("v1", "nope", "1", "table v1.nope does not exist"),
        ("v1", "t", "one", "key component 'one' of column k"),
        ("v1", "t", "1:2", "key component '1:2' of column k"),
    ],
)
def test_bad_names_and_keys_are_refused_with_the_reason(
    keyspace: str, table: str, key: str, message: str
) -> None:
    with pytest.raises(ring_info.RingQueryError, match=re.escape(message)):
        ring_info.natural_endpoints(_state(v1=VNODES_RF1), keyspace, table, key)


def test_member_by_address_names_the_unknown_address() -> None:
    with pytest.raises(ring_info.RingQueryError, match=r"no member of the cluster has address 10\.9\.9\.9"):
        ring_info.member_by_address(_state().topology, "10.9.9.9")
