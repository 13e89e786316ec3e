"""kill -9 of a node in the middle of a move of one of its tablets between its own shards (issue
#15: intranode moves that roll back).

Three nodes of two shards, an RF=1 tablets keyspace, so the node moving the tablet holds its only
copy. A REST ``tablets/move`` to the node's other shard starts; the moment the tablet's file has
been renamed into the new shard's directory the node is killed. The topology coordinator, on
another node, then either rolls the move back (the node stayed down past ``rollback_after_ms``
while reads had not switched: the map names the old shard again although the file sits in the
new one) or finishes it once the node is back (reads had switched already). Either way, once the
node is back every row acknowledged before reads back, writes after it read back, and the
tablet's data is one file, in the shard directory the node uses.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import OPTIONS, pinned, run
from tests.integration.test_tablet_move import post

ROWS = 60


def tablet_rows(session: Any) -> list[Any]:
    rows = run(
        session, "SELECT last_token, replicas, stage FROM system.tablets WHERE keyspace_name = 'im'", "ONE"
    )
    return sorted(rows, key=lambda r: r.last_token)


def tablet_file(node: TestNode, tablet_id: int, shard: int) -> Path | None:
    found = list(node.workdir.glob(f"data/im/t-*/shard-{shard}/tablet-{tablet_id}.db"))
    return found[0] if found else None


@pytest.mark.slow
def test_kill_9_mid_intranode_move_rolls_back_or_resumes_without_loss(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, smp=2, options=OPTIONS)
    status, body = post(nodes[0].api_url + "/storage_service/tablets/balancing", {"enabled": "false"})
    assert status == 200, body
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(f"CREATE KEYSPACE im WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 1}}")
        s.execute("CREATE TABLE im.t (k int PRIMARY KEY, v int) WITH tablets = {'min_tablet_count': 4}")
        for k in range(ROWS):
            run(s, "INSERT INTO im.t (k, v) VALUES (%s, %s)", "ONE", (k, k))
    host_ids = {}
    for node in nodes:
        with pinned(node) as p:
            host_ids[str(run(p, "SELECT host_id FROM system.local", "ONE")[0].host_id)] = node
    with pinned(nodes[0]) as s:
        wait_for(lambda: all(r.stage is None for r in tablet_rows(s)), "no move in progress")
        rows = tablet_rows(s)
    with urllib.request.urlopen(nodes[0].api_url + "/raft/leader_host", timeout=30) as response:
        leader = json.loads(response.read())
    # a written tablet on a node that does not run the topology coordinator (the group0 leader):
    # the coordinator must outlive the node to roll the move back
    tablet_id, row = next(
        (i, r)
        for i, r in enumerate(rows)
        if str(r.replicas[0][0]) != leader
        and tablet_file(host_ids[str(r.replicas[0][0])], i, r.replicas[0][1]) is not None
    )
    victim_host, old_shard = str(row.replicas[0][0]), row.replicas[0][1]
    victim, new_shard = host_ids[victim_host], 1 - row.replicas[0][1]
    answer: list[tuple[int, str]] = []
    mover = threading.Thread(
        target=lambda: answer.append(
            post(
                nodes[0].api_url + "/storage_service/tablets/move",
                {
                    "ks": "im",
                    "table": "t",
                    "token": row.last_token,
                    "src_host": victim_host,
                    "src_shard": old_shard,
                    "dst_host": victim_host,
                    "dst_shard": new_shard,
                },
            )
        )
    )
    mover.start()
    deadline = time.monotonic() + 120
    while (
        tablet_file(victim, tablet_id, old_shard) is not None
        or tablet_file(victim, tablet_id, new_shard) is None
    ):
        assert time.monotonic() < deadline, "the tablet's file never moved"
        time.sleep(0.002)
    victim.kill()  # the file sits in the new shard; reads may or may not have switched yet
    mover.join(300)

    with pinned(nodes[0]) as s:
        wait_for(lambda: tablet_rows(s)[tablet_id].stage is None, "the move to end or roll back", seconds=120)
        rolled_back = tablet_rows(s)[tablet_id].replicas[0][1] == old_shard
    victim.start()
    with pinned(victim) as p:
        assert {(r.k, r.v) for r in run(p, "SELECT k, v FROM im.t", "ONE")} == {(k, k) for k in range(ROWS)}
        for k in range(ROWS, ROWS + 20):
            run(p, "INSERT INTO im.t (k, v) VALUES (%s, %s)", "ONE", (k, k))
    with pinned(nodes[0]) as s:
        assert {(r.k, r.v) for r in run(s, "SELECT k, v FROM im.t", "ONE")} == {
            (k, k) for k in range(ROWS + 20)
        }
    # one file holds the tablet: in the new shard's directory (moved before the kill) whatever the map says
    assert tablet_file(victim, tablet_id, old_shard) is None
    assert tablet_file(victim, tablet_id, new_shard) is not None
    print(f"intranode move {'rolled back' if rolled_back else 'finished'} after kill -9")
