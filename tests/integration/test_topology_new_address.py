"""A node restarted on its data at a different IP address keeps its host id; its peers learn the
new address from group0 (the restarted node asks the leader to record it; until then the
internode handshake lets it send only that request), and it serves replicas again: writes and
reads at ALL go through every node, including through it.
"""

from __future__ import annotations

import json
import urllib.request

from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import OPTIONS, create_schema, host_id, session_on, statement, wait_for


def addresses_of(node: TestNode) -> dict[str, str]:
    """host id -> address, as ``node``'s REST API maps them (ScyllaDB's /storage_service/host_id)."""
    with urllib.request.urlopen(node.api_url + "/storage_service/host_id", timeout=30) as response:
        return {entry["value"]: entry["key"] for entry in json.loads(response.read())}


def live_addresses(node: TestNode) -> set[str]:
    """The members ``node``'s failure detector sees up (/gossiper/endpoint/live)."""
    with urllib.request.urlopen(node.api_url + "/gossiper/endpoint/live", timeout=30) as response:
        return set(json.loads(response.read()))


def test_a_node_restarted_at_a_new_address_keeps_its_identity(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    create_schema(nodes[0])
    old = nodes[2]
    moved_id = str(host_id(old))
    with session_on(nodes[0]) as s:
        for k in range(20):
            s.execute(statement("INSERT INTO tw.kv (k, v) VALUES (%s, %s)", "ALL"), (k, k))
    old.kill()

    moved = TestNode(node_factory.allocator.allocate(), old.workdir, [nodes[0].host], options=OPTIONS)
    node_factory.nodes.append(moved)
    moved.start()
    assert str(host_id(moved)) == moved_id
    for node in nodes[:2]:
        learnt = lambda n=node: addresses_of(n).get(moved_id) == moved.host  # noqa: E731
        wait_for(learnt, f"{node.host} to learn the new address")
        with session_on(node) as s:
            peers = {str(r.host_id): str(r.peer) for r in s.execute("SELECT peer, host_id FROM system.peers")}
        assert peers[moved_id] == moved.host and old.host not in peers.values(), peers

    everyone = {nodes[0].host, nodes[1].host, moved.host}
    for node in (nodes[0], nodes[1], moved):  # ALL needs every replica seen up, not only addressed
        wait_for(lambda n=node: everyone <= live_addresses(n), f"{node.host} to see every node up")

    for coordinator in (nodes[0], moved):
        with session_on(coordinator) as s:
            base = 100 if coordinator is moved else 50
            for k in range(base, base + 10):
                s.execute(statement("INSERT INTO tw.kv (k, v) VALUES (%s, %s)", "ALL"), (k, k))
            rows = {r.k for r in s.execute(statement("SELECT k FROM tw.kv", "ALL"))}
            assert set(range(20)) | set(range(50, 60)) <= rows
    with session_on(nodes[1]) as s:
        rows = {r.k for r in s.execute(statement("SELECT k FROM tw.kv", "ALL"))}
    assert rows == set(range(20)) | set(range(50, 60)) | set(range(100, 110))
