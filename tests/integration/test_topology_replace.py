"""Replacing a dead node (``replace_node_first_boot``) on real node processes: 3 nodes, a tablets
keyspace at RF=3, a QUORUM writer and a compare-and-set counter running throughout.

A node asking to replace a live node is refused and exits. Once a node is killed with -9, a fresh
node (at another address, or at the dead node's own) replaces it: it takes exactly the dead
node's tablet replicas, filled from the other replicas, serves CQL only once they are in place,
and the dead node becomes `left`. Every acknowledged write reads back at QUORUM and at ALL, and
the counter equals the acknowledged rounds.
"""

from __future__ import annotations

import time

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.harness.process import ProcessError, wait_for_exit
from tests.harness.topology_workload import (
    OPTIONS,
    Workload,
    create_schema,
    host_id,
    node_states,
    tablet_hosts,
    verify,
)

REPLACE_TIMEOUT = 600.0


def _replacing_node(factory: NodeFactory, seed: TestNode, replaced: str, at: TestNode | None) -> TestNode:
    """A fresh node (new workdir, new host id) replacing ``replaced``; at ``at``'s address if given."""
    options = {**OPTIONS, "replace_node_first_boot": replaced}
    if at is None:
        return factory.create(seeds=[seed.host], options=options)
    workdir = at.workdir.with_name(at.workdir.name + "-replacement")
    node = TestNode(at.endpoints, workdir, [seed.host], options=options)
    factory.nodes.append(node)
    return node


@pytest.mark.parametrize("same_address", [False, True], ids=["new-address", "same-address"])
def test_replace_a_killed_node(node_factory: NodeFactory, same_address: bool) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    create_schema(nodes[0])
    dead = nodes[2]
    dead_id = host_id(dead)
    owned = [i for i, hosts in enumerate(tablet_hosts(nodes[0])) if dead_id in hosts]
    assert owned

    early = _replacing_node(node_factory, nodes[0], str(dead_id), None)
    early.start(wait=False)  # the node to replace is alive: refused
    assert wait_for_exit(early.process, 120) == 1
    assert f"replace: node {dead_id} is alive; stop it before replacing it" in early.log_tail()

    with Workload(nodes[0]) as work:
        work.wait_progress()
        dead.kill()
        new = _replacing_node(node_factory, nodes[0], str(dead_id), dead if same_address else None)
        for _ in range(30):  # refused while the leader still sees the dead node up
            new.start(wait=False)
            if _admitted(new):
                break
            assert "is alive" in new.log_tail(), new.log_tail()
            time.sleep(1)
        new.wait_ready(REPLACE_TIMEOUT)  # CQL only once the replace ended
        work.wait_progress()
    history = work.history

    new_id = host_id(new)
    states = node_states(nodes[0])
    assert states[dead_id] == "left" and states[new_id] == "normal", states
    hosts = tablet_hosts(nodes[0])
    assert [i for i, h in enumerate(hosts) if new_id in h] == owned
    assert all(dead_id not in h for h in hosts)
    problems = verify([nodes[0], nodes[1], new], history)
    assert not problems, "\n".join(problems) + "\n" + history.summary()


def _admitted(node: TestNode) -> bool:
    """Whether ``node`` got past admission into group0; False once it exited, refused."""
    try:
        node.process.wait_for_output("group0 member host_id", timeout=120)
    except ProcessError:
        return False
    return True
