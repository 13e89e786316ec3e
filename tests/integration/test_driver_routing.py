"""scylla-driver routes prepared single-partition requests to replicas, measured on the server.

The driver learns tablets only from `tablets-routing-v1` payloads (spec/clients.md 5) and shards
from SUPPORTED; the nodes count where each routable request landed and serve the counts at
`/metrics` on their REST API, which is what these tests read.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.addresses import AddressAllocator
from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode

SHARD_AWARE_PORT = 19042
ROUTED = "tabletdb_cql_single_partition_requests_total"


def scrape(node: TestNode) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"{node.api_url}/metrics", timeout=30) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def routed_counts(nodes: list[TestNode]) -> dict[str, float]:
    """Routable requests by coordinator kind (replica, other_shard, non_replica), summed over nodes."""
    out: dict[str, float] = {"replica": 0.0, "other_shard": 0.0, "non_replica": 0.0}
    for node in nodes:
        for (name, labels), value in scrape(node).items():
            if name == ROUTED:
                out[dict(labels)["coordinator"]] += value
    return out


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after}


@pytest.fixture
def token_aware() -> dict[str, Any]:
    """The driver's default policy, explicitly (the harness defaults to round-robin)."""
    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy())
    return {"execution_profiles": {EXEC_PROFILE_DEFAULT: ExecutionProfile(load_balancing_policy=policy)}}


@pytest.fixture(scope="module")
def one_node(
    address_allocator: AddressAllocator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TestNode]:
    """One 2-shard node with the shard-aware port, shared by the single-node tests."""
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("routing-node"))
    try:
        yield factory.start_node(smp=2, options={"native_shard_aware_transport_port": SHARD_AWARE_PORT})
    finally:
        problems = factory.cleanup()
        assert not problems, problems


def test_driver_learns_tablets_and_shards_on_one_node(
    one_node: TestNode, token_aware: dict[str, Any]
) -> None:
    with scylla_cluster(one_node, **token_aware) as cluster:
        session = cluster.connect(wait_for_all_pools=True)
        dc = session.execute("SELECT data_center FROM system.local").one().data_center
        session.execute(
            f"CREATE KEYSPACE ks WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 1}}"
        )
        session.execute("CREATE TABLE ks.t (p int PRIMARY KEY, v int) WITH tablets = {'min_tablet_count': 8}")
        insert = session.prepare("INSERT INTO ks.t (p, v) VALUES (?, ?)")
        select = session.prepare("SELECT v FROM ks.t WHERE p = ?")
        for k in range(200):  # warm-up: misrouted requests teach the driver the tablets
            session.execute(insert, (k, k))

        learned = cluster.metadata._tablets._tablets[("ks", "t")]
        expected = {
            row.last_token: [(h, s) for h, s in row.replicas]
            for row in session.execute("SELECT last_token, replicas FROM system.tablets")
        }
        assert len(expected) == 8 and learned
        assert scrape(one_node)[("tabletdb_cql_tablet_routing_payloads_total", ())] >= len(learned)
        for tablet in learned:
            assert [tuple(r) for r in tablet.replicas] == expected[tablet.last_token]

        before = routed_counts([one_node])
        for k in range(200):
            session.execute(insert, (k, k + 1))
            assert session.execute(select, (k,)).one().v == k + 1
        counts = delta(routed_counts([one_node]), before)
        assert counts["non_replica"] == 0  # one node holds every tablet
        assert counts["replica"] >= 0.95 * sum(counts.values()) and sum(counts.values()) == 400

        # The pool has one connection per shard, opened through the shard-aware port.
        (pool,) = session._pools.values()
        assert set(pool._connections) == {0, 1}
        assert all(conn.features.shard_id == shard for shard, conn in pool._connections.items())
        assert any(conn.endpoint.port == SHARD_AWARE_PORT for conn in pool._connections.values())
        assert pool.advanced_shardaware_block_until == 0  # the driver never suspected a NAT


def test_metrics_count_requests_by_opcode(one_node: TestNode) -> None:
    before = scrape(one_node)
    routed_before = routed_counts([one_node])
    with scylla_cluster(one_node) as cluster:
        session = cluster.connect()
        stmt = session.prepare("SELECT key FROM system.local WHERE key = ?")
        for _ in range(3):
            session.execute(stmt, ("local",))
    after = scrape(one_node)

    def grown(opcode: str) -> float:
        key = ("tabletdb_cql_requests_total", (("opcode", opcode),))
        return after[key] - before.get(key, 0.0)

    assert grown("EXECUTE") == 3
    assert grown("PREPARE") >= 1 and grown("STARTUP") >= 1 and grown("OPTIONS") >= 1
    assert grown("REGISTER") == 1  # the control connection only
    assert routed_counts([one_node]) == routed_before  # system tables are not routed by token


def test_supported_advertises_the_sharding_of_the_node(one_node: TestNode) -> None:
    """spec/clients.md 2.1: all sharding keys or none; the values drivers compute shards with."""
    supported = one_node.supported
    assert supported["SCYLLA_NR_SHARDS"] == ["2"]
    assert supported["SCYLLA_SHARD"] in (["0"], ["1"])
    assert supported["SCYLLA_PARTITIONER"] == ["org.apache.cassandra.dht.Murmur3Partitioner"]
    assert supported["SCYLLA_SHARDING_ALGORITHM"] == ["biased-token-round-robin"]
    assert supported["SCYLLA_SHARDING_IGNORE_MSB"] == ["12"]
    assert supported["SCYLLA_SHARD_AWARE_PORT"] == [str(SHARD_AWARE_PORT)]
    assert supported["TABLETS_ROUTING_V1"] == [""]


def _replica_share(
    session: Any, nodes: list[TestNode], insert: Any, select: Any, keys: range
) -> dict[str, float]:
    """Write then read back every key; what the nodes counted for those requests."""
    before = routed_counts(nodes)
    for k in keys:
        session.execute(insert, (k, k * 10))
    for k in keys:
        assert session.execute(select, (k,)).one().v == k * 10
    return delta(routed_counts(nodes), before)


def test_token_aware_driver_reaches_replicas_on_three_nodes(
    node_factory: NodeFactory, token_aware: dict[str, Any]
) -> None:
    """Issue 7 acceptance: RF=1 on 3 nodes, so most keys live away from any one contact point;
    after warm-up >= 95% of prepared single-partition requests are coordinated by a replica, for
    a tablets keyspace (routing learned from the payloads) and a vnode one (the token ring)."""
    nodes = node_factory.start_cluster(
        3, smp=2, options={"native_shard_aware_transport_port": SHARD_AWARE_PORT}
    )
    with scylla_cluster(nodes, **token_aware) as cluster:
        session = cluster.connect(wait_for_all_pools=True)
        dc = session.execute("SELECT data_center FROM system.local").one().data_center
        for ks, tablets in (("tab", True), ("vn", False)):
            replication = f"{{'class': 'NetworkTopologyStrategy', '{dc}': 1}}"
            mode = "" if tablets else " AND tablets = {'enabled': false}"
            session.execute(f"CREATE KEYSPACE {ks} WITH replication = {replication}{mode}")
            session.execute(f"CREATE TABLE {ks}.t (p int PRIMARY KEY, v int)")
            insert = session.prepare(f"INSERT INTO {ks}.t (p, v) VALUES (?, ?)")
            select = session.prepare(f"SELECT v FROM {ks}.t WHERE p = ?")
            assert len(cluster.metadata.all_hosts()) == 3
            warm_up = _replica_share(session, nodes, insert, select, range(300))
            if tablets:  # the driver started with the vnode ring and learned tablets from the payloads
                assert warm_up["non_replica"] > 0 and cluster.metadata._tablets._tablets[(ks, "t")]
            counts = _replica_share(session, nodes, insert, select, range(300, 600))
            total = sum(counts.values())
            assert total == 600
            assert counts["replica"] + counts["other_shard"] >= 0.95 * total, (ks, counts)
