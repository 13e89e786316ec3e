"""removenode and replace with a vnode keyspace, on real node processes.

A vnode keyspace at RF=3 (SimpleStrategy, 16 tokens per node). A node is killed with -9; then

* removenode: its ranges get new owners among the survivors, which pull them from the other
  surviving replicas (never from the dead node) while both rings take writes; or
* replace: a fresh node (its own tokens) takes its place, filled from the survivors the same way.

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


def test_replace_fills_the_new_node_with_vnode_ranges(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    expected = create(nodes[0])
    dead = nodes[2]
    dead_id = host_id(dead)

    with Traffic(nodes[0], {k: v for k, v in expected}, 10 * ROWS) as traffic:
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

    wait_for(lambda: settled(nodes[0], dead_id), "the replaced node left and every cleanup done")
    assert states(nodes[0])[host_id(new)] == ("normal", "clean")
    check_every_node_holds_every_row([new, nodes[0], nodes[1]], expected | traffic.acked, traffic.tried)


@pytest.mark.slow
def test_replace_at_rf2_moves_ranges_by_the_token_difference_and_cleans_up(node_factory: NodeFactory) -> None:
    """The replacing node comes with its own tokens: besides the dead node's ranges, ranges move
    between the survivors and the new node, and the survivors that lost some are cleaned up."""
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
    removed = [
        int(line.rsplit("partitions_removed=", 1)[1].split()[0].strip('"'))
        for n in nodes[:3]
        for line in n.log_tail(2000).splitlines()
        if "vnode cleanup done" in line
    ]
    assert sum(removed) > 0, "no survivor dropped the ranges the new node took from it"
    with pinned(new) as s:
        for cl in ("QUORUM", "ALL"):
            assert expected <= rows(s, "vk.t", cl), cl


def _admitted(node: TestNode) -> bool:
    try:
        node.process.wait_for_output("group0 member host_id", timeout=120)
    except ProcessError:
        return False
    return True
