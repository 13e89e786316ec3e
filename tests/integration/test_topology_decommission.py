"""Decommission through REST on real node processes: 3 nodes + 1, a tablets keyspace at RF=3.

The fourth node's tablet replicas migrate to the others (writes to both sets, file streaming,
reads switched, old files deleted), the node leaves and stops itself, and every row written
before reads back at QUORUM from the nodes that stay, and so does every write acknowledged at QUORUM while the
replicas moved.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for

ROWS = 60


def post(url: str, timeout: float) -> tuple[int, str]:
    request = urllib.request.Request(url, method="POST", data=b"")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def rows(session: Any, cl: str) -> set[tuple[int, str]]:
    return {(r.k, r.v) for r in run(session, "SELECT k, v FROM dk.t", cl)}


@pytest.mark.parametrize("which", [3, 0], ids=["a-follower", "the-founder"])
def test_decommission_moves_every_tablet_replica_off_the_node(node_factory: NodeFactory, which: int) -> None:
    """The founder usually leads group0, so it runs the coordinator that decommissions it."""
    nodes = node_factory.start_cluster(4, options=OPTIONS)
    leaving = nodes[which]
    with pinned(nodes[1]) as s:
        run(
            s,
            "CREATE KEYSPACE dk WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 3} AND tablets = {'enabled': true}",
            "ONE",
        )
        run(s, "CREATE TABLE dk.t (k int PRIMARY KEY, v text)", "ONE")
        expected = set()
        for k in range(ROWS):
            run(s, "INSERT INTO dk.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"v{k}"))
            expected.add((k, f"v{k}"))
    with pinned(leaving) as s:
        gone = run(s, "SELECT host_id FROM system.local", "ONE")[0].host_id
    with pinned(nodes[1]) as s:
        tablets = run(s, "SELECT replicas FROM system.tablets", "ONE")
        held = [r for r in tablets if gone in {h for h, _ in r.replicas}]
    assert held, "the node to decommission holds no tablet replica: nothing would be tested"

    acked: set[tuple[int, str]] = set()
    done = threading.Event()

    def writer() -> None:  # QUORUM writes through a node that stays, during the whole move
        with pinned(nodes[1]) as w:
            k = ROWS
            while not done.is_set():
                try:
                    run(w, "INSERT INTO dk.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"w{k}"))
                    acked.add((k, f"w{k}"))
                except Exception:  # a write refused or timed out mid-move need not be there
                    pass
                k += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        status, body = post(leaving.api_url + "/storage_service/decommission", timeout=600)
    finally:
        done.set()
        thread.join()
    assert status == 200, body
    assert acked, "no write was acknowledged while the node was decommissioned"
    expected |= acked
    wait_for(lambda: not leaving.running, "the decommissioned node to stop")

    with pinned(nodes[1]) as s:
        replicas = [r.replicas for r in run(s, "SELECT replicas FROM system.tablets", "ONE")]
        assert replicas and all(gone not in {h for h, _ in rs} for rs in replicas)
        topology = run(s, "SELECT host_id, node_state FROM system.topology", "ONE")
        states = {r.host_id: r.node_state for r in topology}
        assert states[gone] == "left"
        assert rows(s, "QUORUM") == expected
        # the node is no member any more: not a peer, and new tables place no replica on it
        assert gone not in {r.host_id for r in run(s, "SELECT host_id FROM system.peers", "ONE")}
        run(s, "CREATE TABLE dk.after (k int PRIMARY KEY, v text)", "ONE")
        run(s, "INSERT INTO dk.after (k, v) VALUES (1, 'x')", "ALL")
        placed = run(
            s, "SELECT replicas FROM system.tablets WHERE keyspace_name = 'dk' ALLOW FILTERING", "ONE"
        )
        assert all(gone not in {h for h, _ in r.replicas} for r in placed)
    with pinned(nodes[2]) as s:
        assert rows(s, "QUORUM") == expected

    leaving.start(wait=False)  # restarted on its old data: refused, and it exits
    wait_for(lambda: not leaving.running, "the node that left to exit when restarted")
    assert leaving.process.returncode == 1 and "left the cluster" in leaving.log_tail(), leaving.log_tail()
    with pinned(nodes[2]) as s:
        assert gone not in {r.host_id for r in run(s, "SELECT host_id FROM system.peers", "ONE")}


def test_decommission_is_refused_for_the_last_node(node_factory: NodeFactory) -> None:
    (node,) = node_factory.start_cluster(1)
    status, body = post(node.api_url + "/storage_service/decommission", timeout=60)
    assert status == 400 and "last token owner" in body, (status, body)
    assert node.running
