"""A migration target killed -9 mid-stream keeps a partial tablet file; when it restarts, the
start-up sweep deletes it (issue 14: files no tablet map places on the node).

Three nodes, an RF=2 tablets keyspace, balancing off. One replica of a tablet moves from a
follower (the source) to the third follower (the target) over REST while a QUORUM writer writes
keys of that tablet: during the write-both stages the target's file of the tablet fills with
them. The target is kept from pulling the copy (its frames to the source are dropped through the
test-only fault injector), so the move waits at ``streaming``; the target is then killed -9. The
coordinator rolls the move back once the target has been down long enough, and can't clean the
dead target up, so the partial file stays on its disk. After the restart the file is gone (one
INFO line names it), the target's files of the tablets it does own are all still there, and
every row reads back at ALL.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from tabletdb.dht.murmur3 import token_of
from tests.harness.nemesis import FAULT_OPTIONS
from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for
from tests.integration.test_tablet_move import post
from tests.integration.test_topology_leader_kill import leader_of

ROWS = 60


def _tablets(node: TestNode) -> list[tuple[int, list[tuple[uuid.UUID, int]], str | None]]:
    with pinned(node) as s:
        rows = run(
            s,
            "SELECT last_token, replicas, stage FROM system.tablets WHERE keyspace_name = 'lo'",
            "ONE",
        )
    return sorted((r.last_token, [(h, sh) for h, sh in r.replicas], r.stage) for r in rows)


def _files(node: TestNode) -> set[Path]:
    return set((node.workdir / "data" / "lo").glob("t-*/shard-*/tablet-*.db"))


def _key_token(k: int) -> int:
    return token_of(k.to_bytes(4, "big", signed=True))


@pytest.mark.slow  # the coordinator rolls back only after the target was down 30 s
@pytest.mark.timeout(600)
def test_a_killed_targets_partial_tablet_file_is_swept_at_restart(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options={**OPTIONS, **FAULT_OPTIONS})
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(f"CREATE KEYSPACE lo WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 2}}")
        s.execute("CREATE TABLE lo.t (k int PRIMARY KEY, v int) WITH tablets = {'min_tablet_count': 4}")
        for k in range(ROWS):
            run(s, "INSERT INTO lo.t (k, v) VALUES (%s, %s)", "ALL", (k, k))
    status, body = post(nodes[0].api_url + "/storage_service/tablets/balancing", {"enabled": "false"})
    assert status == 200, body
    wait_for(lambda: all(stage is None for _, _, stage in _tablets(nodes[0])), "no tablet in transition")

    wait_for(lambda: leader_of(nodes[0]) is not None, "a group0 leader")
    by_id: dict[Any, TestNode] = {}
    for node in nodes:
        with pinned(node) as s:
            by_id[run(s, "SELECT host_id FROM system.local", "ONE")[0].host_id] = node
    leader = leader_of(nodes[0])
    # a tablet on the leader and one follower (the source); the other follower is the target
    tablets = _tablets(nodes[0])
    index, (last_token, replicas, _) = next(
        (i, t) for i, t in enumerate(tablets) if leader in {h for h, _ in t[1]}
    )
    (source_id, source_shard) = next(r for r in replicas if r[0] != leader)
    target_id = next(h for h in by_id if h not in {leader, source_id})
    coordinator, source, target = by_id[leader], by_id[source_id], by_id[target_id]
    first = tablets[index - 1][0] if index else None
    keys = [
        k
        for k in range(10_000, 40_000)
        if (first is None or _key_token(k) > first) and _key_token(k) <= last_token
    ]
    owned_before = _files(target)

    status, body = post(target.api_url + "/faults/block", {"address": source.host})
    assert status == 200, body
    stop = threading.Event()

    def write() -> None:
        with pinned(coordinator) as w:
            for k in keys:
                if stop.is_set():
                    return
                with contextlib.suppress(Exception):  # one refused around a stage change need not be there
                    run(w, "INSERT INTO lo.t (k, v) VALUES (%s, %s)", "QUORUM", (k, k))

    answer: list[tuple[int, str]] = []
    params = {
        "ks": "lo",
        "table": "t",
        "token": last_token,
        "src_host": source_id,
        "src_shard": source_shard,
        "dst_host": target_id,
        "dst_shard": 0,
    }
    mover = threading.Thread(
        target=lambda: answer.append(post(coordinator.api_url + "/storage_service/tablets/move", params))
    )
    writer = threading.Thread(target=write)
    writer.start()
    mover.start()
    try:
        wait_for(lambda: _tablets(coordinator)[index][2] == "streaming", "the move to reach streaming")
        partial = target.workdir / "data" / "lo"
        wait_for(
            lambda: any(
                p.name == f"tablet-{index}.db" and p.parent.name == "shard-0" for p in _files(target)
            ),
            "the target's file of the moving tablet",
        )
    finally:
        stop.set()
        writer.join()
    target.kill()
    mover.join(300)
    assert answer and answer[0][0] == 500 and "rolled back" in answer[0][1], answer
    after = _tablets(coordinator)
    assert after[index][1] == replicas and after[index][2] is None  # the move was undone
    (leftover,) = [p for p in _files(target) if p.name == f"tablet-{index}.db" and p.parent.name == "shard-0"]
    assert partial in leftover.parents  # still on the dead target's disk

    target.start()
    assert not leftover.exists()
    log = target.log_tail(4000)
    assert f"removed leftover tablet file no tablet map places here table=lo.t tablet={index} shard=0" in log
    assert owned_before and owned_before <= _files(target)  # the tablets it does own keep their files
    with pinned(coordinator) as s:
        held = {r.k for r in run(s, "SELECT k FROM lo.t", "ALL")}
    assert set(range(ROWS)) <= held
