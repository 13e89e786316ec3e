"""group0 across real processes: concurrent DDL from every node, leader kill -9, feature checks.

Acceptance of the group0 issue: every acknowledged DDL exists on every node and all nodes end
on one schema version; a killed leader loses nothing acknowledged, the majority keeps taking
DDL, the restarted node catches up (from a snapshot: the log is truncated every few entries).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.harness.clients import PATIENT_DRIVER, scylla_cluster
from tests.harness.node import NodeFactory, TestNode

KEYSPACE = (
    "CREATE KEYSPACE g0 WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3} "
    "AND tablets = {'initial': 1}"
)
"""One tablet a table: hundreds of tables of 32 tablets would exceed the per-shard tablet goal, and
the coordinator would co-locate and merge them (as ScyllaDB does) while the DDL storms run; this
module is about group0 DDL, not tablet traffic beside it."""
SETTLE_SECONDS = 60.0
"""Upper bound for followers to apply what the leader committed (a liveness bound, not a speed check)."""


def _pinned(node: TestNode) -> Any:
    """A driver cluster whose requests all go to `node` (so DDL is accepted by that node)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([node.host]), request_timeout=60
    )
    return Cluster(
        [node.host],
        port=node.port,
        protocol_version=4,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        schema_metadata_enabled=False,
        **PATIENT_DRIVER,
    )


def _pinned_rows(node: TestNode, query: str) -> list[Any]:
    cluster = _pinned(node)
    try:
        return list(cluster.connect().execute(query))
    finally:
        cluster.shutdown()


def _api(node: TestNode, path: str) -> Any:
    with urllib.request.urlopen(node.api_url + path, timeout=30) as response:
        return json.loads(response.read())


def _tables_and_version(node: TestNode) -> tuple[set[str], Any]:
    cluster = _pinned(node)
    try:
        session = cluster.connect()
        rows = session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'g0'")
        version = session.execute("SELECT schema_version FROM system.local").one().schema_version
        return {r.table_name for r in rows}, version
    finally:
        cluster.shutdown()


def _storm(nodes: Iterable[TestNode], per_node: int, prefix: str) -> tuple[set[str], list[Exception]]:
    """`per_node` CREATE TABLEs from each node at once; the acknowledged names and the errors."""
    acked: set[str] = set()
    errors: list[Exception] = []
    lock = threading.Lock()

    def run(node: TestNode, index: int) -> None:
        cluster = _pinned(node)
        try:
            session = cluster.connect()
            futures = [
                (
                    f"{prefix}_{index}_{i}",
                    session.execute_async(f"CREATE TABLE g0.{prefix}_{index}_{i} (k int PRIMARY KEY)"),
                )
                for i in range(per_node)
            ]
            for name, future in futures:
                try:
                    future.result()
                    with lock:
                        acked.add(name)
                except Exception as exc:
                    with lock:
                        errors.append(exc)
        except Exception as exc:
            with lock:
                errors.append(exc)
        finally:
            cluster.shutdown()

    threads = [threading.Thread(target=run, args=(n, i)) for i, n in enumerate(nodes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return acked, errors


def _settled(nodes: list[TestNode], expect: set[str]) -> list[tuple[set[str], Any]]:
    """Each node's (tables, schema version), once all agree and hold `expect` (or the bound ends)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        views = [_tables_and_version(n) for n in nodes]
        agree = len({v for _, v in views}) == 1 and all(expect <= tables for tables, _ in views)
        if agree or time.monotonic() > deadline:
            return views
        time.sleep(0.2)


def _leader(nodes: list[TestNode]) -> TestNode:
    host_id = _api(nodes[0], "/raft/leader_host")
    for node in nodes:
        if _api(node, "/storage_service/hostid/local") == host_id:
            return node
    raise AssertionError(f"leader {host_id} is none of {nodes}")


def _wait(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def test_concurrent_ddl_from_every_node(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3)
    with scylla_cluster(nodes[0]) as cluster:
        cluster.connect().execute(KEYSPACE)
        assert len(cluster.metadata.all_hosts()) == 3
    acked, errors = _storm(nodes, 100, "t")
    assert not errors, errors[:3]
    assert len(acked) == 300
    views = _settled(nodes, acked)
    for tables, _ in views:
        assert acked <= tables
    assert len({version for _, version in views}) == 1
    for node in nodes:  # any contact point: all peers and the same metadata
        with scylla_cluster(node) as cluster:
            cluster.connect()
            assert {h.address for h in cluster.metadata.all_hosts()} == {n.host for n in nodes}
            assert set(cluster.metadata.keyspaces["g0"].tables) >= acked
    rows = _pinned_rows(nodes[1], "SELECT * FROM system.raft_state")
    assert len(rows) == 3 and all(r.can_vote for r in rows)
    assert sum(r.is_leader for r in rows) == 1 and sum(r.is_local for r in rows) == 1
    assert len({r.group_id for r in rows}) == 1 and rows[0].term >= 1
    status = _api(nodes[1], "/cluster/status")
    assert sorted(n["address"] for n in status["nodes"]) == sorted(n.host for n in nodes)
    assert all(n["voter"] for n in status["nodes"])
    assert _api(nodes[2], "/storage_service/keyspaces?type=user") == ["g0"]


def test_leader_kill9_during_ddl_storm(node_factory: NodeFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLETDB_GROUP0_SNAPSHOT_EVERY", "16")
    nodes = node_factory.start_cluster(3)
    with scylla_cluster(nodes[0]) as cluster:
        cluster.connect().execute(KEYSPACE)
    leader = _leader(nodes)
    others = [n for n in nodes if n is not leader]
    result: dict[str, Any] = {}
    storm = threading.Thread(
        target=lambda: result.update(zip(("acked", "errors"), _storm(nodes, 40, "a"), strict=True))
    )
    storm.start()
    time.sleep(0.5)
    leader.kill()
    storm.join()
    acked: set[str] = result["acked"]
    # Peers notice (and announce STATUS_CHANGE DOWN to drivers) that the leader is gone.
    _wait(lambda: all("node DOWN host_id" in n.log_tail(400) for n in others), "peers to mark it DOWN")
    # The majority elects a leader and keeps accepting DDL.
    more, errors = _storm(others, 30, "b")
    assert not errors, errors[:3]
    acked |= more
    # One at a time, each its own Raft entry: more than the 16 between snapshots, so the log the
    # restarted node would need is truncated whatever the storm's batches were.
    for i in range(20):
        _pinned_rows(others[0], f"CREATE TABLE g0.c_{i} (k int PRIMARY KEY)")
        acked.add(f"c_{i}")
    for tables, _ in _settled(others, acked):
        assert acked <= tables
    # The restarted node catches up; its peers' logs were truncated, so through a snapshot.
    leader.start()
    _wait(lambda: all("node UP host_id" in n.log_tail(400) for n in others), "peers to mark it UP")
    views = _settled(nodes, acked)
    for tables, _ in views:
        assert acked <= tables
    assert len({version for _, version in views}) == 1
    since_restart = leader.log_tail(1000).rsplit("=== harness: start #", 1)[-1]
    assert "group0 snapshot installed from the leader" in since_restart


def test_node_lacking_an_enabled_feature_is_refused(
    node_factory: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = node_factory.start_node()
    assert "TABLETS" in _api(first, "/cluster/status")["enabled_features"]
    monkeypatch.setenv("TABLETDB_TEST_UNSUPPORTED_FEATURES", "TABLETS")
    old = node_factory.create(seeds=[first.host])
    old.start(wait=False)
    _wait(lambda: not old.running, "the refused node to exit")
    assert old.process.returncode == 1
    assert "TABLETS" in old.log_tail() and "cannot join" in old.log_tail()
    assert [n["address"] for n in _api(first, "/cluster/status")["nodes"]] == [first.host]


def test_maintenance_mode_serves_local_schema_and_refuses_ddl(node_factory: NodeFactory) -> None:
    node = node_factory.start_node()
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        session.execute(KEYSPACE.replace("'replication_factor': 3", "'replication_factor': 1"))
        session.execute("CREATE TABLE g0.kept (k int PRIMARY KEY)")
    node.stop()
    inspected = TestNode(node.endpoints, node.workdir, options={"maintenance_mode": "true"})
    node_factory.nodes.append(inspected)
    inspected.start()
    tables, _ = _tables_and_version(inspected)
    assert tables == {"kept"}
    with scylla_cluster(inspected) as cluster:
        from cassandra import InvalidRequest

        with pytest.raises(InvalidRequest, match="maintenance mode"):
            cluster.connect().execute("CREATE TABLE g0.refused (k int PRIMARY KEY)")


def test_nodes_sharing_one_seed_list_form_one_cluster(node_factory: NodeFactory) -> None:
    endpoints = [node_factory.allocator.allocate() for _ in range(3)]
    seeds = [e.address for e in endpoints]
    nodes = [TestNode(e, node_factory.base_dir / f"node-{e.address}", seeds) for e in endpoints]
    node_factory.nodes.extend(nodes)
    for node in reversed(nodes):  # the founder (lowest seed) starts last: the others wait for it
        node.start(wait=False)
    for node in nodes:
        node.wait_ready()
    # Serving CQL means a node has joined, not that it has applied the joins after its own:
    # nodes[2] may learn of a later joiner a moment after that one starts serving.
    _wait(
        lambda: sorted(n["address"] for n in _api(nodes[2], "/cluster/status")["nodes"]) == sorted(seeds),
        "node 2 to list every member",
    )
    status = _api(nodes[2], "/cluster/status")
    assert status["local"]["group0_id"] == _api(nodes[0], "/storage_service/hostid/local")
    # A driver whose control connection is on node 2 hears of DDL executed on node 0 (the
    # SCHEMA_CHANGE event comes from node 2 applying it; drivers never poll for schema).
    with scylla_cluster(nodes[2]) as watcher:
        watcher.connect()
        _pinned_rows(nodes[0], KEYSPACE)
        _pinned_rows(nodes[0], "CREATE TABLE g0.seen (k int PRIMARY KEY)")
        _wait(
            lambda: "g0" in watcher.metadata.keyspaces and "seen" in watcher.metadata.keyspaces["g0"].tables,
            "the event-driven schema refresh on node 2's driver",
        )


def _versions(node: TestNode) -> tuple[Any, dict[str, Any]]:
    """(system.local schema version, peer address -> system.peers schema version) on `node`."""
    local = _pinned_rows(node, "SELECT schema_version FROM system.local")[0].schema_version
    peers = _pinned_rows(node, "SELECT peer, schema_version FROM system.peers")
    return local, {str(r.peer): r.schema_version for r in peers}


def test_peers_show_the_schema_version_each_peer_applied(node_factory: NodeFactory) -> None:
    """A peer that has not applied a change shows its older version (or, once silent for a few
    seconds, none), never the new one, so a driver waiting for schema agreement does not
    conclude too early; once it catches up every row agrees again."""
    nodes = node_factory.start_cluster(3)
    _pinned_rows(nodes[0], KEYSPACE)
    leader = _leader(nodes)
    lagging = next(n for n in nodes if n is not leader)
    coordinator = next(n for n in nodes if n is not leader and n is not lagging)

    def agreed() -> bool:
        local, peers = _versions(coordinator)
        return len(peers) == 2 and set(peers.values()) == {local}

    _wait(agreed, "every peer to report the keyspace's version")
    _, before = _versions(coordinator)
    pid = lagging.process.pid
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # it keeps its place in the group but applies nothing
    try:
        _pinned_rows(coordinator, "CREATE TABLE g0.while_paused (k int PRIMARY KEY)")
        _wait(
            lambda: _versions(coordinator)[1][leader.host] == _versions(coordinator)[0], "the leader's report"
        )
        local, peers = _versions(coordinator)
        assert peers[lagging.host] != local
        assert peers[lagging.host] in (before[lagging.host], None)  # None: silent too long, unknown
    finally:
        os.kill(pid, signal.SIGCONT)
    _wait(agreed, "the resumed peer to report the new version")


def test_driver_agreement_checks_see_one_version_after_each_ddl_and_during_a_storm(
    node_factory: NodeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The python driver checks schema agreement after every DDL answer and after every
    SCHEMA_CHANGE event (at a random moment, while other changes are in flight), by reading
    system.peers and then system.local on one connection; any difference costs a 200 ms sleep.
    Nodes answer those reads from a moment when every live peer reported the node's version,
    and the pair from one moment, so on a healthy cluster no check ever sees a difference, and
    every acknowledged table exists on every node."""
    from cassandra.cluster import ControlConnection

    checks: list[bool] = []
    original = ControlConnection._get_schema_mismatches

    def counting(self: Any, peers_result: Any, local_result: Any, local_address: Any) -> Any:
        found = original(self, peers_result, local_result, local_address)
        checks.append(found is None)  # list.append is atomic: driver threads share the list
        return found

    nodes = node_factory.start_cluster(3)
    _pinned_rows(nodes[0], KEYSPACE)

    def reported(node: TestNode) -> bool:
        local, peers = _versions(node)
        return len(peers) == 2 and set(peers.values()) == {local}

    _wait(lambda: all(reported(n) for n in nodes), "every peer to report the keyspace's version")
    monkeypatch.setattr(ControlConnection, "_get_schema_mismatches", counting)
    listeners = [_pinned(n) for n in nodes]  # control connections that act on every event
    try:
        for cluster in listeners:
            cluster.connect()
        one = listeners[0].connect()
        for i in range(30):
            one.execute(f"CREATE TABLE g0.one_{i} (k int PRIMARY KEY)")
        acked, errors = _storm(nodes, 20, "s")
    finally:
        for cluster in listeners:
            cluster.shutdown()
    assert not errors, errors[:3]
    acked |= {f"one_{i}" for i in range(30)}
    assert len(checks) >= len(acked)  # at least the check after every DDL answer
    assert all(checks), f"{checks.count(False)} of {len(checks)} agreement checks saw a difference"
    views = _settled(nodes, acked)
    for tables, _ in views:
        assert acked <= tables
    assert len({version for _, version in views}) == 1


def _listens(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_storage_port_moves_group0_traffic(node_factory: NodeFactory) -> None:
    """Every node takes internode traffic on the configured port, found through group0."""
    nodes = node_factory.start_cluster(3, options={"storage_port": 7321})
    for node in nodes:
        assert _listens(node.host, 7321) and not _listens(node.host, 7000)
    _pinned_rows(nodes[2], KEYSPACE)
    _pinned_rows(nodes[1], "CREATE TABLE g0.moved (k int PRIMARY KEY)")
    assert "moved" in _settled(nodes, {"moved"})[0][0]
