"""A balancer round survives kill -9 of the group0 leader (its coordinator), of a move's source and
of a move's target (issue 15's acceptance; `test_topology_leader_kill` covers the same stages
under a decommission).

Four nodes, the topology workload at RF=3 (a QUORUM writer and a compare-and-set counter through
a node that is never killed). With balancing off, three replicas are moved onto one node through
REST ``tablets/move``, so that once balancing is on the coordinator starts a round moving them
away. The leader is killed -9 right after it proposed the round. A move's source or target is
killed while the round is held at its ``streaming`` stage: every node's ``tablet.stream`` requests
fail (the test-only fault injector) until the victim is down, so the first round that moves a replica
between nodes stays at ``streaming`` and the kill lands mid-round whatever the timing (rounds
that only move replicas between the shards of a node rename files and end); the victim restarts
a moment later and the other nodes are released. The round
resumes (a new leader takes over from group0) or rolls back (a node it needs stayed down),
nothing stays in transition, and every acknowledged write reads back at QUORUM and ALL.
"""

from __future__ import annotations

import time
import urllib.parse
import uuid
from typing import Any

import pytest

from tests.harness.nemesis import FAULT_OPTIONS, fault
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import (
    KEYSPACE,
    OPTIONS,
    Workload,
    create_schema,
    host_id,
    post,
    session_on,
    statement,
    verify,
    wait_for,
)
from tests.integration.test_topology_leader_kill import leader_of

ROUND = "topology coordinator proposes: balance:"


def tablets(node: TestNode) -> list[Any]:
    with session_on(node) as s:
        return list(
            s.execute(
                statement(
                    "SELECT last_token, replicas, new_replicas, stage FROM system.tablets "
                    f"WHERE keyspace_name = '{KEYSPACE}' AND table_name = 'kv'",
                    "ONE",
                )
            )
        )


def pile_onto(node: TestNode, heavy: uuid.UUID, light: uuid.UUID, count: int) -> None:
    """Move ``count`` replicas from ``light`` to ``heavy`` (tablets that have one on ``light`` only)."""
    moved = 0
    for t in tablets(node):
        hosts = {h: s for h, s in t.replicas}
        if light in hosts and heavy not in hosts and moved < count:
            query = urllib.parse.urlencode(
                {
                    "ks": KEYSPACE,
                    "table": "kv",
                    "token": t.last_token,
                    "src_host": light,
                    "src_shard": hosts[light],
                    "dst_host": heavy,
                    "dst_shard": 0,
                }
            )
            status, body = post(f"{node.api_url}/storage_service/tablets/move?{query}")
            assert status == 200, body
            moved += 1
    assert moved == count, f"only {moved} tablets could move onto {heavy}"


def rounds_in_log(node: TestNode) -> int:
    return (node.workdir.parent / f"{node.workdir.name}.log").read_text().count(ROUND)


def streaming(node: TestNode) -> bool:
    return any(t.stage == "streaming" for t in tablets(node))


def hold_streams(nodes: list[TestNode]) -> None:
    """Every node's ``tablet.stream`` requests fail, to every other member and to itself (a
    coordinator streaming onto its own node), so whichever node leads, no move between nodes ends."""
    for node in nodes:
        fault(node, "fail", verb="tablet.stream")
        fault(node, "fail", verb="tablet.stream", address=node.host)


def release_streams(nodes: list[TestNode]) -> None:
    for node in nodes:
        fault(node, "heal")


def moving(node: TestNode) -> tuple[set[uuid.UUID], set[uuid.UUID]]:
    """(sources, targets) of the tablets in transition, as ``node`` sees them."""
    sources: set[uuid.UUID] = set()
    targets: set[uuid.UUID] = set()
    for t in tablets(node):
        if t.stage is not None:
            old, new = {h for h, _ in t.replicas}, {h for h, _ in t.new_replicas}
            sources |= old - new
            targets |= new - old
    return sources, targets


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("victim", ["leader", "source", "target"])
def test_a_balancer_round_survives_kill_9(node_factory: NodeFactory, victim: str) -> None:
    nodes = node_factory.start_cluster(4, options={**OPTIONS, **FAULT_OPTIONS})
    create_schema(nodes[0])
    ids = {host_id(n): n for n in nodes}
    wait_for(lambda: leader_of(nodes[0]) is not None, "a group0 leader")
    leader_id = leader_of(nodes[0])
    assert leader_id is not None
    leader = ids[leader_id]
    client = next(n for n in nodes if n is not leader)
    others = [h for h, n in ids.items() if n is not client]
    status, body = post(f"{client.api_url}/storage_service/tablets/balancing?enabled=false")
    assert status == 200, body
    pile_onto(client, others[0], others[1], 3)
    held = victim != "leader"
    if held:
        hold_streams(nodes)

    with Workload(client) as work:
        work.wait_progress()
        marks = {h: n.process.starts for h, n in ids.items()}
        rounds = rounds_in_log(leader)  # rounds before balancing was switched off
        status, body = post(f"{client.api_url}/storage_service/tablets/balancing?enabled=true")
        assert status == 200, body
        leader.process.wait_for_output(ROUND, timeout=600, count=rounds + 1)
        if victim == "leader":
            killed = leader
        else:
            chosen: list[uuid.UUID] = []

            def held() -> bool:
                """A round at streaming with a move between nodes (rounds of moves between the
                shards of a node stream nothing, so they end; the first that crosses nodes stays)."""
                sources, targets = moving(client) if streaming(client) else (set(), set())
                chosen[:] = sorted((sources if victim == "source" else targets) - {host_id(client)})
                return bool(chosen)

            wait_for(held, f"a round held at streaming with a {victim} other than the client", 600)
            killed = ids[chosen[0]]
        killed.kill()
        if killed is leader:
            wait_for(lambda: leader_of(client) not in (None, leader_id), "another group0 leader")
        else:
            time.sleep(5)
        if held:
            assert streaming(client), "the round left streaming while every node's streams failed"
        killed.start()
        assert killed.process.starts == marks[host_id(killed)] + 1
        if held:
            release_streams([n for n in nodes if n is not killed])  # the restarted one holds nothing
        wait_for(lambda: moving(client) == (set(), set()), "the round to end", 600)
        work.wait_progress()

    problems = verify([n for n in nodes if n.running], work.history)
    assert not problems, "\n".join(problems) + "\n" + work.history.summary()
