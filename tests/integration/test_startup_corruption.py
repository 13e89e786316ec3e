"""Damaged files a node reads at start refuse the start with one line, not a traceback.

One node, written to and stopped; then, one at a time, its paxos.db, its group0 Raft snapshot
and its identity.json are damaged: each start exits non-zero with one "cannot start" line naming
the file, what was found and what to do, and no traceback. With the bytes put back the node
starts again (so each refusal was the damage's doing). The commit log's own case is
test_commit_log_corruption; tablet files do not stop a start (test_data_file_corruption).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode
from tests.harness.process import wait_for_exit


def _output_of_last_start(node: TestNode) -> str:
    return node.process.log_path.read_text(errors="replace").rsplit("=== harness: start #", 1)[1]


def _refusal(node: TestNode) -> str:
    """The one line a refused start printed (asserting it exited non-zero, without a traceback)."""
    node.start(wait=False)
    assert wait_for_exit(node.process, timeout=120) != 0
    output = _output_of_last_start(node)
    assert "Traceback" not in output, output[-3000:]
    (line,) = [line for line in output.splitlines() if "cannot start" in line]
    return line


def _refused_then_restored(node: TestNode, path: Path, damage: bytes, at: int) -> str:
    whole = path.read_bytes()
    path.write_bytes(whole[:at] + damage + whole[at + len(damage) :])
    try:
        return _refusal(node)
    finally:
        path.write_bytes(whole)


def test_damaged_paxos_db_raft_snapshot_and_identity_each_refuse_the_start(node_factory: NodeFactory) -> None:
    node = node_factory.start_node()
    with scylla_session(node) as session:
        session.execute(
            "CREATE KEYSPACE ks WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        for k in range(20):
            assert session.execute("INSERT INTO ks.t (k, v) VALUES (%s, 1) IF NOT EXISTS", (k,)).one()[0]
    request = urllib.request.Request(node.api_url + "/raft/trigger_snapshot", method="POST")
    with urllib.request.urlopen(request, timeout=60) as response:
        assert json.loads(response.read())["snapshot_index"] > 0
    node.stop()

    paxos = node.workdir / "paxos" / "paxos.db"
    line = _refused_then_restored(node, paxos, b"\xff" * 16, 0)
    assert f"{paxos} is corrupt: SQLite reports file is not a database" in line
    assert "Paxos promises" in line and "stop LWT traffic first" in line

    (snapshot,) = (node.workdir / "raft" / "group0-cluster").glob("snap-*.snap")
    middle = snapshot.stat().st_size // 2
    line = _refused_then_restored(node, snapshot, bytes([snapshot.read_bytes()[middle] ^ 0x41]), middle)
    assert f"Raft snapshot file is corrupt: {snapshot} at byte offset 0: checksum mismatch" in line
    assert "not a torn tail" not in line and "restore the node's raft directory" in line

    identity = node.workdir / "identity.json"
    line = _refused_then_restored(node, identity, b"\x00garbage", 3)
    assert f"{identity} is corrupt: not the JSON host id and tokens" in line and "restore it" in line

    node.start()
    with scylla_session(node) as session:
        assert len(list(session.execute("SELECT k FROM ks.t"))) == 20
