"""Acknowledged writes survive kill -9; paging through 100,000 rows returns each exactly once."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.harness.clients import scylla_cluster, scylla_session
from tests.harness.node import NodeFactory, TestNode

KEYSPACE = (
    "CREATE KEYSPACE IF NOT EXISTS dd WITH replication = "
    "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
)


@pytest.mark.parametrize("commitlog_sync", ["periodic", "batch"])
def test_every_acknowledged_write_survives_kill_9(node_factory: NodeFactory, commitlog_sync: str) -> None:
    """Periodic mode (the default, as in Cassandra) writes the commit log before answering and
    syncs it every period: the OS keeps it through a kill -9. Batch mode syncs before answering.
    Rows the stores had deferred die with the process and come back from the log."""
    node = node_factory.start_node(options={"commitlog_sync": commitlog_sync})
    with scylla_session(node) as session:
        session.execute(KEYSPACE)
        session.execute("CREATE TABLE dd.w (p int, c int, v text, PRIMARY KEY (p, c))")
    acknowledged: list[tuple[int, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(worker: int) -> None:
        with scylla_cluster(node) as cluster:
            session = cluster.connect()
            insert = session.prepare("INSERT INTO dd.w (p, c, v) VALUES (?, ?, ?)")
            i = 0
            while not stop.is_set():
                futures = [
                    session.execute_async(insert, (worker, i + j, f"{worker}:{i + j}")) for j in range(16)
                ]
                for j, future in enumerate(futures):
                    try:
                        future.result()
                    except Exception:
                        return  # the node died: this write was never acknowledged
                    with lock:
                        acknowledged.append((worker, i + j))
                i += 16

    workers = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for w in workers:
        w.start()
    while len(acknowledged) < 2000 and any(w.is_alive() for w in workers):
        threading.Event().wait(0.05)
    node.kill()
    stop.set()
    for w in workers:
        w.join(timeout=60)
    assert len(acknowledged) >= 2000
    node.start()
    with scylla_session(node) as session:
        stored = {(r.p, r.c): r.v for r in session.execute("SELECT p, c, v FROM dd.w")}
    missing = [k for k in acknowledged if stored.get(k) != f"{k[0]}:{k[1]}"]
    assert not missing, f"{len(missing)} acknowledged writes lost after kill -9, e.g. {missing[:5]}"


def _load(node: TestNode, rows: int) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    with scylla_session(node) as session:
        # two tablets: one per shard, so each group commit costs two fsyncs, not thirty-two
        session.execute(
            "CREATE KEYSPACE IF NOT EXISTS big WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 2}"
        )
        session.execute("CREATE TABLE IF NOT EXISTS big.t (p int, c int, PRIMARY KEY (p, c))")
        # unlogged batches of one partition's ten rows: a tenth of the requests, the same rows
        inserts = " ".join(f"INSERT INTO big.t (p, c) VALUES (?, {c});" for c in range(10))
        batch = session.prepare(f"BEGIN UNLOGGED BATCH {inserts} APPLY BATCH")
        args = [(p,) * 10 for p in range(rows // 10)]
        results = execute_concurrent_with_args(
            session, batch, args, concurrency=64, raise_on_first_error=True
        )
        assert all(ok for ok, _ in results)


def test_paging_100k_rows_returns_each_once(node: TestNode) -> None:
    from cassandra.query import SimpleStatement

    rows = 100_000
    _load(node, rows)
    with scylla_session(node) as session:
        for fetch_size in (1000, 4999, 20000):
            seen: list[Any] = [
                (r.p, r.c)
                for r in session.execute(SimpleStatement("SELECT p, c FROM big.t", fetch_size=fetch_size))
            ]
            assert len(seen) == rows
            assert len(set(seen)) == rows
