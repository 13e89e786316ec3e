"""kill -9 during a merge, and during the co-location that precedes it, on real processes
(issue #15's acceptance: "the operation resumes or rolls back; nothing acknowledged is lost").

Three nodes of two shards, an RF=2 tablets keyspace, a table made with ``min_tablet_count: 16``
(the allocator spreads its tablets, so most sibling pairs sit on different replicas) holding a
few hundred rows. Lowering the floor to 4 makes the coordinator want 8 and then 4 tablets: it
co-locates the siblings in balancer rounds (moves between nodes stream files) and then merges
(prepare, each replica host copies its files into the next generation, cut-over).

The round is held at a chosen step with the test-only fault injector's failed verbs (the group0
leader's requests of that verb fail at once and the coordinator retries them, so the step
repeats; Raft and client traffic flow): ``tablet.stream`` holds a co-location move at
``streaming`` with its target on another node; ``tablet.resize`` holds the merge after its
prepare, the leader's own copy made and the other hosts' not, before its cut-over. Then the node
that matters is killed -9: the leader (its coordinator), or the move's target / a copying
replica host. The faults are healed, the node restarts, and:

* the first merge ends once (resumed or rolled back and begun again): 16 -> 8 happens in one
  cut-over (``resize_seq_number`` counts them), and the second merge (8 -> 4, no faults: the
  "second run") converges to 4 tablets with seq 2, nothing in transition;
* every acknowledged row (the loaded ones, and a QUORUM writer's through it all) reads at QUORUM;
* every node keeps exactly the files its replicas need: only the last generation, only tablets
  and shards the map places on it (a rolled-back target's partial copy, the generations before
  the cut-overs and a source's file after its move are all gone).

``slow``: each case takes one to a few minutes at the load a shared box has.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from tests.harness.clients import scylla_cluster
from tests.harness.nemesis import FAULT_OPTIONS, fault, rest
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import host_id, wait_for
from tests.integration.test_replicated_data import OPTIONS, pinned, run
from tests.integration.test_tablet_resize import Clients, running
from tests.integration.test_topology_leader_kill import leader_of

ROWS = 400
VALUE = "m" * 200


def _tablets(node: TestNode) -> list[Any]:
    with pinned(node) as s:
        rows = run(
            s,
            "SELECT last_token, replicas, new_replicas, stage, resize_seq_number, resize_type "
            "FROM system.tablets WHERE keyspace_name = 'mk' AND table_name = 't'",
            "ONE",
        )
    return sorted(rows, key=lambda r: r.last_token)


def start_mk_cluster(node_factory: NodeFactory) -> tuple[list[TestNode], dict[uuid.UUID, TestNode]]:
    """Three nodes with the fault API, keyspace ``mk`` at RF 2 and table ``mk.t`` made with 16
    tablets; the nodes, and by host id."""
    nodes = node_factory.start_cluster(3, options={**OPTIONS, **FAULT_OPTIONS})
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(f"CREATE KEYSPACE mk WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 2}}")
        s.execute("CREATE TABLE mk.t (k int PRIMARY KEY, v text) WITH tablets = {'min_tablet_count': 16}")
    assert len(_tablets(nodes[0])) == 16
    return nodes, {host_id(n): n for n in nodes}


def merge_held(observer: TestNode, leader: TestNode) -> bool:
    """A merge is under way (as ``observer`` sees it) and the ``leader``'s failed verb failed."""
    merging = any(t.resize_type == "merge" for t in _tablets(observer))
    return merging and rest(leader, "GET", "/faults")["failed"] > 0


def _held_stream_target(node: TestNode, leader: uuid.UUID) -> uuid.UUID | None:
    """A node other than the leader that a co-location move at ``streaming`` streams to."""
    for t in _tablets(node):
        if t.stage == "streaming" and t.new_replicas:
            targets = {h for h, _ in t.new_replicas} - {h for h, _ in t.replicas} - {leader}
            if targets:
                return sorted(targets)[0]
    return None


def _expected_files(node_id: uuid.UUID, tablets: list[Any]) -> set[str]:
    """The files (``shard-S/tablet-I[.gN].db``) the current map places on the node."""
    found = set()
    for i, t in enumerate(tablets):
        seq = t.resize_seq_number
        name = f"tablet-{i}.db" if seq == 0 else f"tablet-{i}.g{seq}.db"
        found |= {f"shard-{shard}/{name}" for h, shard in t.replicas if h == node_id}
    return found


def _files(node: TestNode) -> set[str]:
    return {
        f"{p.parent.name}/{p.name}" for p in Path(node.workdir, "data", "mk").glob("t-*/shard-*/tablet-*.db")
    }


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize(
    ("step", "victim"),
    [("colocation", "leader"), ("colocation", "target"), ("merge", "leader"), ("merge", "replica")],
)
def test_kill_9_during_colocation_or_merge(node_factory: NodeFactory, step: str, victim: str) -> None:
    nodes, ids = start_mk_cluster(node_factory)
    with pinned(nodes[0]) as s:
        insert = s.prepare("INSERT INTO mk.t (k, v) VALUES (?, ?)")
        from cassandra import ConsistencyLevel

        insert.consistency_level = ConsistencyLevel.QUORUM
        results = execute_concurrent_with_args(s, insert, [(k, VALUE) for k in range(ROWS)], concurrency=16)
        assert all(ok for ok, _ in results)

    wait_for(lambda: leader_of(nodes[0]) is not None, "a group0 leader")
    leader_id = leader_of(nodes[0])
    assert leader_id is not None
    leader = ids[leader_id]
    verb = "tablet.stream" if step == "colocation" else "tablet.resize"
    fault(leader, "fail", verb=verb)
    observer = next(n for n in nodes if n is not leader)

    with (
        scylla_cluster(nodes) as cluster,
        running(Clients(cluster.connect(), cluster.connect(), table="mk.t")) as clients,
    ):
        with pinned(observer) as s:
            s.execute("ALTER TABLE mk.t WITH tablets = {'min_tablet_count': 4}")
        if step == "colocation":
            wait_for(
                lambda: _held_stream_target(observer, leader_id) is not None,
                "a co-location move held at streaming with its target on another node",
                seconds=300,
            )
            target = _held_stream_target(observer, leader_id)
            assert target is not None
        else:
            wait_for(
                lambda: merge_held(observer, leader),
                "the merge held with its copies on the other hosts failing",
                seconds=300,
            )
            target = next(h for h in ids if h != leader_id)
        assert len(_tablets(observer)) == 16, "the merge ended before the kill: nothing was tested"
        killed = leader if victim == "leader" else ids[target]
        killed.kill()
        if killed is leader:
            wait_for(lambda: leader_of(observer) not in (None, leader_id), "another group0 leader")
        else:
            time.sleep(3)  # the coordinator meets a dead node at the held step
            fault(leader, "heal")
        killed.start()
        acked_at_restart = len(clients.acked)
        wait_for(lambda: len(clients.acked) > acked_at_restart + 10, "QUORUM writes after the restart")
        for node in nodes:  # a restarted process has no faults; the survivors' are lifted
            fault(node, "heal")
        wait_for(
            lambda: [(t.resize_seq_number, t.stage) for t in _tablets(observer)] == [(2, None)] * 4,
            "the table to merge 16 -> 8 -> 4 and settle",
            seconds=600,
        )
    assert clients.reads > 0 and clients.missing == [], (
        f"reader missed acknowledged keys {clients.missing[:10]}"
    )

    with pinned(observer) as s:
        select = s.prepare("SELECT k FROM mk.t WHERE k = ?")
        from cassandra import ConsistencyLevel

        select.consistency_level = ConsistencyLevel.QUORUM
        keys = [*range(ROWS), *clients.acked]
        found = execute_concurrent_with_args(s, select, [(k,) for k in keys], concurrency=16)
        lost = [k for k, (ok, rows) in zip(keys, found) if not ok or rows.one() is None]
        assert lost == [], f"acknowledged keys lost: {lost[:10]}"
    final = _tablets(observer)
    for node_id, node in ids.items():
        expected = _expected_files(node_id, final)
        wait_for(
            lambda node=node, expected=expected: _files(node) <= expected,
            f"{node.host} to keep only files its replicas need",
        )
        assert any(name.endswith(".g2.db") for name in _files(node)), f"{node.host} holds no replica data"
    logs = b"".join(n.process.log_path.read_bytes() for n in nodes)
    assert b"co-locating sibling tablets for a merge" in logs
