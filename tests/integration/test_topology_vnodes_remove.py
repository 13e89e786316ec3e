"""removenode and replace with a vnode keyspace, on real node processes.

A vnode keyspace at RF=3 (SimpleStrategy, 16 tokens per node). A node is killed with -9; then

* removenode: its ranges get new owners among the survivors, which pull them from the other
  surviving replicas (never from the dead node) while both rings take writes; or
* replace: a fresh node takes its place and the dead node's tokens over (as ScyllaDB's replace:
  no range moves between the other nodes), filled from the survivors the same way; it keeps
  those tokens across a restart, and a CDC table written meanwhile keeps one log row per write
  (the ring did not change: no new CDC generation either).

Meanwhile a QUORUM writer records what was acknowledged and a reader at ONE looks up known rows.
Afterwards every remaining node holds every row itself (RF=3 on three nodes: a scan at ONE
through a node reads only its own files), and every row reads back at QUORUM and ALL. Without
streaming the new owners would hold none of the dead node's ranges and the scans would fail.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.harness.process import ProcessError
from tests.integration.test_cdc_colocation import Writer, _check_log
from tests.integration.test_nodetool import nodetool, ok
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for
from tests.integration.test_topology_decommission import post
from tests.integration.test_topology_replace import _replacing_node
from tests.integration.test_topology_vnodes import (
    ROWS,
    Traffic,
    every_node_holds_its_rows,
    host_id,
    load,
    rows,
    states,
)

RF = 3


def create(node: TestNode) -> set[tuple[int, str]]:
    with pinned(node) as s:
        run(
            s,
            "CREATE KEYSPACE vk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
            "ONE",
        )
        run(s, "CREATE TABLE vk.t (k int PRIMARY KEY, v text)", "ONE")
        return load(s, "vk.t", range(ROWS))


def check_every_node_holds_every_row(
    nodes: list[TestNode], expected: set[tuple[int, str]], tried: set[tuple[int, str]]
) -> None:
    for node in nodes:
        with pinned(node) as s:
            held = rows(s, "vk.t", "ONE")
            assert expected <= held <= expected | tried, (node, len(expected - held))
    with pinned(nodes[0]) as s:
        for cl in ("QUORUM", "ALL"):
            assert expected <= rows(s, "vk.t", cl), cl


def settled(node: TestNode, gone: Any) -> bool:
    found = states(node)
    return found.get(gone, ("",))[0] == "left" and all(
        s == ("normal", "clean") for h, s in found.items() if h != gone
    )


def test_removenode_rebuilds_vnode_ranges_from_the_survivors(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(4, options=OPTIONS)
    expected = create(nodes[0])
    victim, stays = nodes[3], nodes[:3]
    gone = host_id(victim)
    remove = f"{nodes[1].api_url}/storage_service/remove_node?host_id={gone}"

    with Traffic(stays[0], {k: v for k, v in expected}, 10 * ROWS) as traffic:
        victim.kill()
        answers: list[tuple[int, str]] = []

        def removed() -> bool:
            # refused as alive until the failure detectors saw it down (see test_topology_removenode)
            answers.append(post(remove, timeout=600))
            status, text = answers[-1]
            return status != 500 or ("is alive" not in text and "alive; stop it first" not in text)

        wait_for(removed, "removenode to be accepted once the node is seen down")
        assert answers[-1][0] == 200, answers[-1]
    assert traffic.reads and not traffic.wrong, traffic.wrong[:5]
    assert not traffic.read_errors, traffic.read_errors[:5]
    assert traffic.acked, "no write was acknowledged around the removenode"

    wait_for(lambda: settled(stays[0], gone), "the removed node left and every cleanup done")
    check_every_node_holds_every_row(stays, expected | traffic.acked, traffic.tried)
    streamed = [n for n in stays if "vnode ranges streamed" in n.log_tail(2000)]
    assert streamed, "no survivor logged pulling the removed node's ranges"


def test_replace_takes_over_the_dead_nodes_tokens_and_fills_its_ranges(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    expected = create(nodes[0])
    with pinned(nodes[0]) as s:
        run(s, "CREATE TABLE vk.c (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}", "ONE")
    dead = nodes[2]
    dead_id = host_id(dead)
    dead_tokens = peer_tokens(nodes[0])[dead_id]
    assert len(dead_tokens) == 16
    generations = cdc_generations(nodes[0])

    with (
        Traffic(nodes[0], {k: v for k, v in expected}, 10 * ROWS) as traffic,
        Writer(nodes[1], "vk.c") as cdc,
    ):
        dead.kill()
        new = _replacing_node(node_factory, nodes[0], str(dead_id), None)
        for _ in range(60):  # refused while the leader still sees the dead node up
            new.start(wait=False)
            if _admitted(new):
                break
            assert "is alive" in new.log_tail(), new.log_tail()
            time.sleep(1)
        new.wait_ready(600)  # CQL only once the replace ended
    assert traffic.reads and not traffic.wrong, traffic.wrong[:5]
    assert not traffic.read_errors, traffic.read_errors[:5]
    assert cdc.acked, "no CDC table write was acknowledged around the replace"

    wait_for(lambda: settled(nodes[0], dead_id), "the replaced node left and every cleanup done")
    new_id = host_id(new)
    assert states(nodes[0])[new_id] == ("normal", "clean")
    check_every_node_holds_every_row([new, nodes[0], nodes[1]], expected | traffic.acked, traffic.tried)
    # the new node owns exactly the dead node's tokens: system.peers, system.local, nodetool ring
    peers = peer_tokens(nodes[0])
    assert set(peers) == {host_id(nodes[1]), new_id} and peers[new_id] == dead_tokens
    assert local_tokens(new) == dead_tokens
    assert ring_tokens(nodes[1]).get(new.host) == dead_tokens and dead.host not in ring_tokens(nodes[1])
    assert cdc_generations(nodes[0]) == generations  # the ring is the same: no new generation
    _check_log(nodes[0], cdc.acked, "vk.c")
    assert not [n for n in (nodes[0], nodes[1]) if "vnode cleanup done" in n.log_tail(2000)]

    new.restart()  # the tokens it took over are its own now
    assert local_tokens(new) == dead_tokens
    assert peer_tokens(nodes[0])[new_id] == dead_tokens


@pytest.mark.slow
def test_replace_at_rf2_moves_only_the_dead_nodes_ranges(node_factory: NodeFactory) -> None:
    """At RF=2 on four nodes a replace with the dead node's tokens moves nothing between the
    survivors: the new node gains exactly the dead node's ranges, no survivor loses a range, so
    none needs a cleanup (with a ring difference, some would)."""
    nodes = node_factory.start_cluster(4, options=OPTIONS)
    with pinned(nodes[0]) as s:
        run(
            s,
            "CREATE KEYSPACE vk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
            "ONE",
        )
        run(s, "CREATE TABLE vk.t (k int PRIMARY KEY, v text)", "ONE")
        expected = load(s, "vk.t", range(ROWS))
    dead = nodes[3]
    dead_id = host_id(dead)
    dead_tokens = peer_tokens(nodes[0])[dead_id]
    dead.kill()
    new = _replacing_node(node_factory, nodes[0], str(dead_id), None)
    for _ in range(60):
        new.start(wait=False)
        if _admitted(new):
            break
        time.sleep(1)
    new.wait_ready(600)
    wait_for(lambda: settled(nodes[0], dead_id), "the replaced node left and every cleanup done")
    survivors = [*nodes[:3], new]
    every_node_holds_its_rows(survivors, expected, set())
    assert local_tokens(new) == dead_tokens
    assert not [n for n in nodes[:3] if "vnode cleanup done" in n.log_tail(2000)]
    with pinned(new) as s:
        for cl in ("QUORUM", "ALL"):
            assert expected <= rows(s, "vk.t", cl), cl


def peer_tokens(node: TestNode) -> dict[Any, frozenset[str]]:
    """Host id -> tokens of every peer in ``node``'s ``system.peers``."""
    with pinned(node) as s:
        return {
            r.host_id: frozenset(r.tokens) for r in run(s, "SELECT host_id, tokens FROM system.peers", "ONE")
        }


def local_tokens(node: TestNode) -> frozenset[str]:
    with pinned(node) as s:
        return frozenset(run(s, "SELECT tokens FROM system.local", "ONE")[0].tokens)


def ring_tokens(node: TestNode) -> dict[str, frozenset[str]]:
    """Address -> tokens as ``nodetool ring`` prints them (address first, token last)."""
    out: dict[str, set[str]] = {}
    for line in ok(nodetool(node, "ring")):
        fields = line.split()
        if len(fields) > 2 and fields[0].count(".") == 3:
            out.setdefault(fields[0], set()).add(fields[-1])
    return {address: frozenset(tokens) for address, tokens in out.items()}


def cdc_generations(node: TestNode) -> list[Any]:
    with pinned(node) as s:
        return sorted(
            r.time for r in run(s, "SELECT time FROM system_distributed.cdc_generation_timestamps", "ONE")
        )


def _admitted(node: TestNode) -> bool:
    try:
        node.process.wait_for_output("group0 member host_id", timeout=120)
    except ProcessError:
        return False
    return True
