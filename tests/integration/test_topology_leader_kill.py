"""A decommission completes when the Raft leader, which runs the topology coordinator, is killed
with -9 at any step of it: the next leader resumes from what group0 holds.

4 nodes, a tablets keyspace at RF=3, a QUORUM writer and a compare-and-set counter coordinated by
a node that is neither leaving nor leading. The leader is killed right after it proposed the
step named by the test (its log says so), a new leader is awaited, and the killed node is
restarted (it may be a migration's target). The decommission answers 200, and every acknowledged
write reads back at QUORUM and ALL, the counter equals the acknowledged rounds.
"""

from __future__ import annotations

import json
import threading
import urllib.request
import uuid

import pytest

from tests.harness.node import NodeFactory, TestNode
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

STEPS = [
    "proposes: start leave of",
    "tablet(s) to write_both_read_old",
    "tablet(s) to streaming",
    "tablet(s) to write_both_read_new",
    "tablet(s) to use_new",
    "tablet(s) to cleanup",
    "tablet(s) to end_migration",
    "tablet(s) to done",
    "proposes: finish leave of",
]
"""What the coordinator's log line (``topology coordinator proposes: ...``) says right after it
proposed each step of a decommission."""
FAST = "tablet(s) to streaming"
"""The step `make test` kills the leader at; the others run under `make soak`."""


def leader_of(node: TestNode) -> uuid.UUID | None:
    with urllib.request.urlopen(node.api_url + "/raft/leader_host", timeout=30) as response:
        answer = json.loads(response.read())
    return uuid.UUID(answer) if answer else None


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "step", [pytest.param(s, marks=() if s == FAST else pytest.mark.slow) for s in STEPS]
)
def test_decommission_survives_the_leader_killed_at_each_step(node_factory: NodeFactory, step: str) -> None:
    nodes = node_factory.start_cluster(4, options=OPTIONS)
    create_schema(nodes[0])
    ids = {host_id(n): n for n in nodes}
    wait_for(lambda: leader_of(nodes[0]) is not None, "a group0 leader")
    leader_id = leader_of(nodes[0])
    assert leader_id is not None
    leader = ids[leader_id]
    leaving, client = [n for n in nodes if n is not leader][:2]
    leaving_id = host_id(leaving)
    survivors = [n for n in nodes if n is not leaving]

    answer: list[tuple[int, str]] = []
    with Workload(client) as work:
        work.wait_progress()
        marks = leader.process.starts
        decommission = threading.Thread(
            target=lambda: answer.append(post(leaving.api_url + "/storage_service/decommission"))
        )
        decommission.start()
        try:
            leader.process.wait_for_output(step, timeout=600)
            leader.kill()
            wait_for(lambda: leader_of(client) not in (None, leader_id), "another group0 leader")
            leader.start()
            assert leader.process.starts == marks + 1
        finally:
            decommission.join(900)
        work.wait_progress()
    history = work.history

    assert answer and answer[0][0] == 200, answer
    wait_for(lambda: not leaving.running, "the decommissioned node to stop")
    assert node_states(client)[leaving_id] == "left"
    assert all(leaving_id not in hosts and len(hosts) == 3 for hosts in tablet_hosts(client))
    problems = verify(survivors, history)
    assert not problems, "\n".join(problems) + "\n" + history.summary()
