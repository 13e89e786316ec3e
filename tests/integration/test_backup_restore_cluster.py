"""Backup and restore on three nodes: RF=3 and RF=1 tablets keyspaces and an RF=3 vnode keyspace.

The client walks the tablet map and talks to every replica's REST API; the restored cluster
answers reads at ALL (every replica has the data) with the source's rows and describes the same
schema. Needs the replicated data path (coordinators forward to replicas); skipped without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest

from tabletdb.storage.snapshot_files import live_row_count
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode

pytest.importorskip("tabletdb.coordinator.writes", reason="needs the replicated data path (branch repl)")

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': %d}"


def _args(nodes: list[TestNode]) -> list[str]:
    out = ["--hosts", nodes[0].host]
    for n in nodes:
        out += ["--api-endpoint", f"{n.host}:{n.endpoints.api_port}"]
    return out


def _state(nodes: list[TestNode]) -> Any:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    with scylla_session(nodes[0]) as s:
        desc = [r.create_statement for r in s.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")]
        rows = {}
        for t in ("r3.t", "r1.t", "v3.t", "v1.t"):
            st = SimpleStatement(f"SELECT * FROM {t}", consistency_level=ConsistencyLevel.ALL)
            rows[t] = sorted(tuple(r) for r in s.execute(st))
    return desc, rows


@pytest.mark.parametrize(
    "replicas",
    [
        pytest.param([], id="one-replica"),
        pytest.param(["--all-replicas"], id="all-replicas", marks=pytest.mark.slow),
    ],
)
def test_backup_and_restore_three_node_clusters(
    node_factory: NodeFactory, tmp_path: Any, replicas: list[str]
) -> None:
    src = node_factory.start_cluster(3, options={"num_tokens": 16})
    with scylla_session(src[0]) as s:
        s.execute(f"CREATE KEYSPACE r3 WITH replication = {NTS % 3}")
        s.execute(f"CREATE KEYSPACE r1 WITH replication = {NTS % 1}")
        s.execute(f"CREATE KEYSPACE v3 WITH replication = {NTS % 3} AND tablets = {{'enabled': false}}")
        s.execute(f"CREATE KEYSPACE v1 WITH replication = {NTS % 1} AND tablets = {{'enabled': false}}")
        for ks in ("r3", "r1", "v3", "v1"):
            s.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
            p = s.prepare(f"INSERT INTO {ks}.t (k, v) VALUES (?, ?)")
            for n in range(200):
                s.execute(p, (n, f"v{n}"))
    before = _state(src)
    out = tmp_path / "b"
    cli = [sys.executable, "-m", "tabletdb.cli.main"]
    done = subprocess.run(
        [*cli, "backup", *_args(src), "--to", str(out), *replicas], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    dst = node_factory.start_cluster(3, options={"num_tokens": 16})
    done = subprocess.run([*cli, "restore", *_args(dst), "--from", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "whole-file installs" in done.stdout
    manifest = json.loads((out / "manifest.json").read_text())
    r3 = next(t for t in manifest["tables"] if t["keyspace"] == "r3")
    per_tablet = 3 if replicas else 1
    assert len(r3["files"]) == per_tablet * r3["tablet_count"] and r3["row_count"] == 200
    assert manifest["replicas"] == ("all" if replicas else "one")
    after = _state(dst)
    assert after[1] == before[1]
    assert after[0] == before[0]
    # every vnode file went to every node, but each kept only the ranges it replicates
    files = [f for node in dst for f in (node.workdir / "data" / "v1").glob("t-*/shard-*/vnode.db")]
    assert sum(live_row_count(f, int(time.time())) for f in files) == 200
