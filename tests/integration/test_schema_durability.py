"""The schema survives a clean restart and kill -9: every acknowledged DDL is there afterwards."""

from __future__ import annotations

import threading

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory

KEYSPACE = "CREATE KEYSPACE dur WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"


def _tables(node: object) -> set[str]:
    with scylla_cluster(node) as cluster:  # type: ignore[arg-type]
        session = cluster.connect()
        rows = session.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'dur'")
        return {r.table_name for r in rows}


def test_schema_survives_clean_restart(node_factory: NodeFactory) -> None:
    node = node_factory.start_node()
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        session.execute(KEYSPACE)
        session.execute("CREATE TYPE dur.u (a int, b text)")
        session.execute(
            "CREATE TABLE dur.t (k int, c int, v frozen<u>, PRIMARY KEY (k, c)) WITH comment = 'x'"
        )
        session.execute("ALTER TABLE dur.t ADD w text")
        session.execute("ALTER TABLE dur.t DROP w")
        before = cluster.metadata.keyspaces["dur"].export_as_string()
        version = session.execute("SELECT schema_version FROM system.local").one().schema_version
    node.stop()
    node.start()
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        assert cluster.metadata.keyspaces["dur"].export_as_string() == before
        assert session.execute("SELECT schema_version FROM system.local").one().schema_version == version
        dropped = session.execute(
            "SELECT column_name FROM system_schema.dropped_columns"
            " WHERE keyspace_name = 'dur' AND table_name = 't'"
        )
        assert [r.column_name for r in dropped] == ["w"]


def test_every_acknowledged_ddl_survives_kill_9(node_factory: NodeFactory) -> None:
    node = node_factory.start_node()
    acknowledged: list[str] = []
    stop = threading.Event()

    def storm() -> None:
        with scylla_cluster(node) as cluster:
            session = cluster.connect()
            i = 0
            while not stop.is_set():
                name = f"t{i}"
                try:
                    session.execute(f"CREATE TABLE dur.{name} (k int PRIMARY KEY, v text)")
                except Exception:
                    return  # the node died under us: this DDL was never acknowledged
                acknowledged.append(name)
                i += 1

    with scylla_cluster(node) as cluster:
        cluster.connect().execute(KEYSPACE)
    worker = threading.Thread(target=storm)
    worker.start()
    while len(acknowledged) < 20 and worker.is_alive():
        threading.Event().wait(0.05)
    node.kill()
    stop.set()
    worker.join(timeout=60)
    assert len(acknowledged) >= 20
    node.start()
    present = _tables(node)
    missing = set(acknowledged) - present
    assert not missing, f"acknowledged tables lost after kill -9: {sorted(missing)[:10]}"
