"""A table merges back after its data is deleted and compacted away (issue #15 acceptance).

Three nodes of one shard each, an RF=3 tablets keyspace (every replica of every tablet on every
node's only shard, so merge siblings are always co-located), a 64 KiB
``target_tablet_size_in_bytes``: loading ~1.5 MB splits the table from 8 to 16 tablets. Then
every row is deleted (``gc_grace_seconds = 0`` with ``tombstone_gc`` mode ``timeout``) and a few
rows are written after the delete; ``nodetool compact`` on each node drops the deleted rows and
their tombstones, the tablets' measured sizes fall, and the coordinator merges the table back to
8. Every write acknowledged before stays as it was: the deleted rows stay deleted, the later
rows are all there.
"""

from __future__ import annotations

from cassandra.concurrent import execute_concurrent_with_args
from click.testing import CliRunner

from tabletdb.cli.main import cli
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import pinned, run
from tests.integration.test_tablet_resize import RESIZE_OPTIONS, ROWS, VALUE, tablet_count

KEPT = range(100_000, 100_020)
"""Rows written after the delete."""


def nodetool(node: TestNode, *args: str, fails_with: str | None = None) -> None:
    argv = ["nodetool", "-h", node.host, "-p", str(node.endpoints.api_port), *args]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    if fails_with is None:
        assert result.exit_code == 0, result.output
    else:
        assert result.exit_code == 1 and fails_with in result.output, result.output


def test_deleted_and_compacted_table_merges_back(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, smp=1, options=RESIZE_OPTIONS)
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE rz WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 3}} "
            "AND tablets = {'initial': 8}"
        )
        s.execute(
            "CREATE TABLE rz.t (k int PRIMARY KEY, v text) WITH tablets = {'max_tablet_count': 16} "
            "AND gc_grace_seconds = 0 AND tombstone_gc = {'mode': 'timeout'}"
        )
        from cassandra import ConsistencyLevel

        insert = s.prepare("INSERT INTO rz.t (k, v) VALUES (?, ?)")
        insert.consistency_level = ConsistencyLevel.QUORUM
        results = execute_concurrent_with_args(s, insert, [(k, VALUE) for k in range(ROWS)], concurrency=16)
        assert all(ok for ok, _ in results)
        wait_for(lambda: tablet_count(s) == 16, "the table to split", seconds=300)

        delete = s.prepare("DELETE FROM rz.t WHERE k = ?")
        delete.consistency_level = ConsistencyLevel.QUORUM
        results = execute_concurrent_with_args(s, delete, [(k,) for k in range(ROWS)], concurrency=16)
        assert all(ok for ok, _ in results)
        for k in KEPT:
            run(s, "INSERT INTO rz.t (k, v) VALUES (%s, 'kept')", "QUORUM", (k,))

        nodetool(nodes[0], "flush", "rz", "t")
        nodetool(nodes[0], "compact", "nope", fails_with="keyspace nope does not exist")
        nodetool(nodes[0], "compact", "rz", "nope", fails_with="table rz.nope does not exist")
        nodetool(nodes[0], "compact", "rz", "--flush-memtables", "false", fails_with="not supported")

        def compacted_and_merged() -> bool:
            for node in nodes:  # a tablet moving at the time is left alone: asked again next turn
                nodetool(node, "compact", "rz", "t")
            return tablet_count(s) == 8

        wait_for(compacted_and_merged, "the compacted table to merge back to 8 tablets", seconds=300)
        assert sorted(r.k for r in run(s, "SELECT k FROM rz.t", "ALL")) == list(KEPT)
        assert {r.v for r in run(s, "SELECT v FROM rz.t", "ALL")} == {"kept"}
