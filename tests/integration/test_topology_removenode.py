"""removenode through REST on real node processes: 4 nodes, a tablets keyspace at RF=3.

A live node cannot be removed (ScyllaDB's words, HTTP 500); once it is killed with -9 and seen
down, its replicas are rebuilt on the others from every surviving replica while a QUORUM writer
and a compare-and-set counter keep running; every acknowledged write then reads back at QUORUM
and ALL and the counter equals the acknowledged rounds. Restarted on its old data, the removed
node learns from its peers that it was removed and exits before serving anything.
"""

from __future__ import annotations

import json

from tests.harness.node import NodeFactory
from tests.harness.topology_workload import (
    OPTIONS,
    Workload,
    create_schema,
    host_id,
    node_states,
    post,
    tablet_hosts,
    verify,
    wait_for,
)


def test_removenode_of_a_killed_node_rebuilds_its_replicas(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(4, options=OPTIONS)
    create_schema(nodes[0])
    victim = nodes[3]
    gone = host_id(victim)
    remove = f"{nodes[1].api_url}/storage_service/remove_node?host_id={gone}"
    assert any(gone in hosts for hosts in tablet_hosts(nodes[0])), "nothing to rebuild: nothing tested"

    status, body = post(remove)
    assert status == 500, (status, body)
    assert json.loads(body)["message"] == (
        f"removenode: Rejected removenode operation for node {gone}; the node being removed is alive, "
        "maybe you should use decommission instead?"
    )
    status, body = post(f"{nodes[1].api_url}/storage_service/remove_node?host_id=not-a-uuid")
    assert status == 400 and "not a valid host id" in body, (status, body)

    with Workload(nodes[0]) as work:
        work.wait_progress()
        victim.kill()
        answers: list[tuple[int, str]] = []

        def removed() -> bool:
            # Refused as alive until the receiving node's failure detector saw it down, and failed
            # (nothing moved) if the coordinator on the Raft leader still saw it up when it started
            # the request: each detector decides on its own, so an operator asks again, as here.
            answers.append(post(remove))
            status, text = answers[-1]
            return status != 500 or ("is alive" not in text and "alive; stop it first" not in text)

        wait_for(removed, "removenode to be accepted once the node is seen down")
        assert answers[-1][0] == 200, answers[-1]
        work.wait_progress()
    history = work.history

    assert node_states(nodes[0])[gone] == "left"
    assert all(gone not in hosts and len(hosts) == 3 for hosts in tablet_hosts(nodes[0]))
    problems = verify(nodes[:3], history)
    assert not problems, "\n".join(problems) + "\n" + history.summary()

    victim.start(wait=False)  # on its old data: its peers say it left, so it refuses to start
    wait_for(lambda: not victim.running, "the removed node to exit when restarted")
    tail = victim.log_tail()
    assert victim.process.returncode == 1 and "left the cluster" in tail, tail
    restart = tail.rsplit("=== harness: start", 1)[-1]
    assert "serving CQL" not in restart, restart
    with_victim_down = verify(nodes[:3], history)
    assert not with_victim_down, with_victim_down
