"""Bootstrap through the topology coordinator on real node processes (issue 14, item 3).

A new node's admission queues a `join` request; the coordinator on the group0 leader migrates
its share of tablet replicas to it (writes to both sets, the SQLite file streamed, reads
switched, the old file deleted) and only then makes it `normal`; its start (and its CQL port)
waits for that. Every QUORUM write acknowledged while replicas moved reads back at QUORUM and
at ALL afterwards; several nodes started at once are served one request at a time.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run

ROWS = 60
KEYSPACE = (
    "CREATE KEYSPACE jk WITH replication = {'class': 'NetworkTopologyStrategy', "
    "'replication_factor': 3} AND tablets = {'enabled': true, 'initial': 8}"
)


def host_id(node: TestNode) -> uuid.UUID:
    with pinned(node) as s:
        found: uuid.UUID = run(s, "SELECT host_id FROM system.local", "ONE")[0].host_id
        return found


def replicas_per_host(session: Any) -> dict[uuid.UUID, int]:
    held: dict[uuid.UUID, int] = {}
    for row in run(
        session, "SELECT replicas FROM system.tablets WHERE keyspace_name = 'jk' ALLOW FILTERING", "ONE"
    ):
        for h, _shard in row.replicas:
            held[h] = held.get(h, 0) + 1
    return held


def node_states(session: Any) -> dict[uuid.UUID, str]:
    return {
        r.host_id: r.node_state
        for r in run(session, "SELECT host_id, node_state FROM system.topology", "ONE")
    }


def rows(session: Any, cl: str) -> set[tuple[int, str]]:
    return {(r.k, r.v) for r in run(session, "SELECT k, v FROM jk.t", cl)}


class QuorumWriter:
    """Writes through one node at QUORUM until stopped, recording every acknowledged row."""

    def __init__(self, node: TestNode, first_key: int) -> None:
        self.acked: set[tuple[int, str]] = set()
        self._node, self._key = node, first_key
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> QuorumWriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        with pinned(self._node) as w:
            while not self._done.is_set():
                k = self._key
                try:
                    run(w, "INSERT INTO jk.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"w{k}"))
                    self.acked.add((k, f"w{k}"))
                except Exception:  # a write that failed mid-move need not be there
                    pass
                self._key += 1


def test_new_nodes_bootstrap_tablet_replicas_one_then_three_at_once(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    seed = nodes[0]
    with pinned(nodes[1]) as s:
        run(s, KEYSPACE, "ONE")
        run(s, "CREATE TABLE jk.t (k int PRIMARY KEY, v text)", "ONE")
        expected = set()
        for k in range(ROWS):
            run(s, "INSERT INTO jk.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"v{k}"))
            expected.add((k, f"v{k}"))
        before = replicas_per_host(s)
    assert len(before) == 3

    with QuorumWriter(nodes[1], ROWS) as writer:
        fourth = node_factory.create(seeds=[seed.host], options=OPTIONS)
        fourth.start()  # returns once CQL is served: the node is normal by then
        new_id = host_id(fourth)
        with pinned(nodes[2]) as s:
            assert node_states(s)[new_id] == "normal"
            assert replicas_per_host(s).get(new_id, 0) > 0, "no tablet replica moved to the new node"
        acked_one = len(writer.acked)

        batch = [node_factory.create(seeds=[seed.host], options=OPTIONS) for _ in range(3)]
        for node in batch:
            node.start(wait=False)
        for node in batch:
            node.wait_ready()
    assert len(writer.acked) > acked_one > 0, "no QUORUM write was acknowledged while nodes joined"
    expected |= writer.acked

    joined = [new_id, *(host_id(n) for n in batch)]
    with pinned(nodes[0]) as s:
        states = node_states(s)
        assert [states[h] for h in joined] == ["normal"] * 4, states
        assert set(states.values()) == {"normal"}
        held = replicas_per_host(s)
        assert all(held.get(h, 0) > 0 for h in joined), held
        assert sum(held.values()) == sum(before.values())  # moved, not copied: RF stays 3
        requests = run(s, "SELECT id, request_type, done, error FROM system.topology_requests", "ONE")
        joins = [r for r in requests if r.request_type == "join"]
        # the two nodes start_cluster added joined the same way (the founder was normal at once)
        assert len(joins) == 2 + 4 and all(r.done and not r.error for r in joins), requests
        assert rows(s, "QUORUM") == expected
        assert rows(s, "ALL") == expected
    for node in (fourth, batch[-1]):  # the new nodes coordinate too, and hold what they should
        with pinned(node) as s:
            assert rows(s, "ALL") == expected


@pytest.mark.slow
def test_sixteen_processes_started_at_once_all_reach_normal(node_factory: NodeFactory) -> None:
    nodes = [node_factory.create(options=OPTIONS)]  # the founder: no seeds but itself
    seed = nodes[0].host
    nodes += [node_factory.create(seeds=[seed], options=OPTIONS) for _ in range(15)]
    for node in nodes:
        node.start(wait=False)
    for node in nodes:
        node.wait_ready(timeout=600)
    with pinned(nodes[-1]) as s:
        states = node_states(s)
        assert len(states) == 16 and set(states.values()) == {"normal"}, states
        members = run(s, "SELECT server_id, can_vote FROM system.raft_state", "ONE")
        assert len(members) == 16 and all(r.can_vote for r in members), members


@pytest.mark.slow
def test_a_join_that_needs_a_dead_node_is_rolled_back_and_the_joiner_exits(node_factory: NodeFactory) -> None:
    """A node the join would stream from stays down past the coordinator's rollback delay
    (30 s): every move is reverted, the joiner becomes `left`, and its start ends with one
    line naming the reason and a non-zero exit; the cluster is as before."""
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0]) as s:
        run(s, KEYSPACE, "ONE")
        run(s, "CREATE TABLE jk.t (k int PRIMARY KEY, v text)", "ONE")
        for k in range(ROWS):
            run(s, "INSERT INTO jk.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"v{k}"))
        before = sorted(run(s, "SELECT last_token, replicas, stage FROM system.tablets", "ONE"))
    nodes[2].kill()  # every join here takes replicas from each of the three nodes
    joiner = node_factory.create(seeds=[nodes[0].host], options=OPTIONS)
    joiner.start(wait=False)
    wait_for_exit(joiner, 240)
    tail = joiner.log_tail()
    assert joiner.process.returncode == 1 and "Traceback" not in tail, tail
    assert (
        "cannot join the cluster" in tail and "rolled back" in tail and "wipe its data directory" in tail
    ), tail
    with pinned(nodes[0]) as s:
        states = node_states(s)
        assert sorted(states.values()) == ["left", "normal", "normal", "normal"], states
        assert sorted(run(s, "SELECT last_token, replicas, stage FROM system.tablets", "ONE")) == before
        (request,) = [
            r
            for r in run(s, "SELECT request_type, done, error FROM system.topology_requests", "ONE")
            if r.error
        ]
        assert request.request_type == "join" and "rolled back" in request.error
        assert rows(s, "QUORUM") == {(k, f"v{k}") for k in range(ROWS)}


def wait_for_exit(node: TestNode, seconds: float) -> None:
    import time

    deadline = time.monotonic() + seconds
    while node.running and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not node.running, f"{node!r} still running after {seconds} s:\n{node.log_tail()}"
