"""A damaged tablet file on real processes: skipped, logged, repaired from the other replicas.

Three nodes, RF=3: rows written at ALL, one node stopped, a b-tree page in the middle of its
largest tablet file overwritten, the node started again. QUORUM reads it coordinates return every
row, and writes go on; it logs one ERROR naming the table and the file; the damaged file is kept
beside a fresh one, which the node fills from the other two replicas and then serves (its log
says so), after which its files hold exactly the rows the others' do. At RF=1 the same damage
answers the client a ReadFailure (not a ServerError), the ERROR naming the file.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import pinned

ROWS = 400
MORE = 40
PAGE = 4096
SETTLE_SECONDS = 120.0
OPTIONS = {
    "write_request_timeout_in_ms": 30000,
    "read_request_timeout_in_ms": 30000,
    "range_request_timeout_in_ms": 30000,
}


def _run(session: Any, cql: str, cl: str, params: tuple[Any, ...] = ()) -> list[Any]:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    stmt = SimpleStatement(cql, consistency_level=getattr(ConsistencyLevel, cl), fetch_size=50)
    return list(session.execute(stmt, params))


def _fill(node: TestNode, rf: int, tablets: bool = True) -> None:
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    with pinned(node) as session:
        session.execute(
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', "
            f"'replication_factor': {rf}}} AND tablets = {{'enabled': {str(tablets).lower()}}}"
        )
        session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        insert = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        insert.consistency_level = ConsistencyLevel.ALL  # every replica holds every row
        results = execute_concurrent_with_args(
            session, insert, [(k, "x" * 300 + str(k)) for k in range(ROWS)], concurrency=16
        )
        assert all(ok for ok, _ in results)


def _tablet_files(node: TestNode) -> list[Path]:
    """Tablet files, or a vnode table's per-shard files."""
    return sorted((node.workdir / "data" / "ks").glob("t-*/shard-*/*.db"))


def _keys(node: TestNode) -> set[int]:
    """The partition keys in the node's ks.t files (read with SQLite; the node is stopped)."""
    keys: set[int] = set()
    for path in _tablet_files(node):
        conn = sqlite3.connect(path)
        try:
            keys |= {
                int.from_bytes(pk, "big", signed=True) for (pk,) in conn.execute("SELECT pk FROM partitions")
            }
        finally:
            conn.close()
    return keys


def _damage_largest_tablet_file(node: TestNode) -> tuple[Path, bytes]:
    path = max(_tablet_files(node), key=lambda p: p.stat().st_size)
    data = bytearray(path.read_bytes())
    middle = len(data) // PAGE // 2 * PAGE
    assert middle > PAGE, f"{path} should span several pages"
    data[middle : middle + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    return path, bytes(data)


def _log(node: TestNode) -> str:
    return node.process.log_path.read_text(errors="replace").rsplit("=== harness: start #", 1)[1]


def _wait_for_log(node: TestNode, text: str) -> str:
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        found = [line for line in _log(node).splitlines() if text in line]
        if found:
            return found[0]
        time.sleep(0.5)
    raise AssertionError(f"no log line with {text!r} from {node}: {_log(node)[-3000:]}")


def _set_aside(path: Path) -> list[Path]:
    return [p for p in path.parent.glob(f"{path.name}.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]


@pytest.mark.parametrize("tablets", [True, False], ids=["tablets", "vnodes"])
def test_rf3_a_damaged_data_file_is_skipped_logged_kept_and_repaired(
    node_factory: NodeFactory, tablets: bool
) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    _fill(nodes[0], rf=3, tablets=tablets)
    damaged_node = nodes[2]
    damaged_node.stop()
    path, damaged = _damage_largest_tablet_file(damaged_node)
    damaged_node.start()

    with pinned(damaged_node) as session:
        rows = _run(session, "SELECT k, v FROM ks.t", "QUORUM")
        assert {(r.k, r.v) for r in rows} == {(k, "x" * 300 + str(k)) for k in range(ROWS)}
        for k in range(ROWS, ROWS + MORE):  # writes go on meanwhile, the fresh file takes its share
            _run(session, "INSERT INTO ks.t (k, v) VALUES (%s, 'later')", "QUORUM", (k,))

    error = _wait_for_log(damaged_node, "tablet file is corrupt, set aside")
    assert "level=ERROR" in error and "table=ks.t" in error and str(path) in error
    _wait_for_log(damaged_node, "tablet file repaired from the other replicas")
    errors = [line for line in _log(damaged_node).splitlines() if "level=ERROR" in line]
    assert len(errors) == 1, errors
    (aside,) = _set_aside(path)
    assert aside.read_bytes() == damaged

    with pinned(damaged_node) as session:  # ONE reads the repaired local replica directly
        assert len(_run(session, "SELECT k FROM ks.t", "ONE")) == ROWS + MORE
    for node in nodes:
        node.stop()
    assert _keys(damaged_node) == _keys(nodes[0]) == _keys(nodes[1]) == set(range(ROWS + MORE))
    assert not path.with_name(path.name + ".unrepaired").exists()


def test_rf1_a_damaged_tablet_file_answers_read_failure_naming_the_file_in_the_log(
    node_factory: NodeFactory,
) -> None:
    from cassandra import ReadFailure

    node = node_factory.start_node()
    _fill(node, rf=1)
    node.stop()
    path, _ = _damage_largest_tablet_file(node)
    node.start()
    with pinned(node) as session:
        try:
            _run(session, "SELECT k FROM ks.t", "ONE")
        except ReadFailure as exc:
            assert "data file was found damaged" in str(exc)
        else:
            raise AssertionError("a read over the damaged tablet should fail")
    error = _wait_for_log(node, "tablet file is corrupt, set aside")
    assert str(path) in error and "restore the table from a backup" in error
    assert "ServerError" not in _log(node)
