"""Grammar ScyllaDB accepts and published schemas use, through the real driver on one node."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import InvalidRequest

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode


def test_schemas_with_trailing_commas_and_empty_elements_load(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        session.execute(
            "CREATE KEYSPACE gr WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TYPE gr.addr (street text, zip int,)")
        session.execute("CREATE TABLE gr.x (k int PRIMARY KEY, v int,)")
        session.execute("CREATE TABLE gr.y (a int, , b frozen<addr>, PRIMARY KEY (a),) WITH comment = 'c'")
        session.execute("INSERT INTO gr.y (a, b) VALUES (1, {street: 's', zip: 2})")
        row = session.execute("SELECT b FROM gr.y WHERE a = 1").one()
        assert (row.b.street, row.b.zip) == ("s", 2)
        columns = session.execute(
            "SELECT column_name FROM system_schema.columns WHERE keyspace_name = 'gr' AND table_name = 'x'"
        )
        assert sorted(r.column_name for r in columns) == ["k", "v"]


def test_keyspace_and_table_names_up_to_192_characters(node: TestNode) -> None:
    keyspace, table = "k" * 192, "t" * 192
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        replication = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
        session.execute(f"CREATE KEYSPACE {keyspace} WITH replication = {replication}")
        session.execute(f"CREATE TABLE {keyspace}.{table} (k int PRIMARY KEY, v int)")
        session.execute(f"INSERT INTO {keyspace}.{table} (k, v) VALUES (1, 2)")
        assert session.execute(f"SELECT v FROM {keyspace}.{table} WHERE k = 1").one().v == 2
        with pytest.raises(InvalidRequest, match="shouldn't be more than 192 characters"):
            session.execute(f"CREATE TABLE {keyspace}.{table}x (k int PRIMARY KEY)")


CUSTOM_CLASSES = [
    "org.apache.cassandra.index.sasi.SASIIndex",
    "SASIIndex",
    "org.apache.cassandra.index.sai.StorageAttachedIndex",
    "vector_index",
    "org.example.MyIndex",
]


@pytest.mark.parametrize("class_name", CUSTOM_CLASSES)
def test_custom_index_classes_are_refused_as_scylladb_refuses_unknown_ones(
    node: TestNode, class_name: str
) -> None:
    """No custom class is implemented here, so none is taken (ScyllaDB refuses each class it has
    no implementation for); no index is left behind and the column still needs ALLOW FILTERING."""
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        session.execute(f"CREATE KEYSPACE IF NOT EXISTS sasi WITH replication = {replication}")
        session.execute("CREATE TABLE IF NOT EXISTS sasi.t (k int PRIMARY KEY, v text)")
        with pytest.raises(InvalidRequest, match=f"Non-supported custom class '{class_name}' provided"):
            session.execute(f"CREATE CUSTOM INDEX ON sasi.t (v) USING '{class_name}'")
        with pytest.raises(InvalidRequest, match=f"Non-supported custom class '{class_name}' provided"):
            session.execute(f"CREATE CUSTOM INDEX IF NOT EXISTS named ON sasi.t (v) USING '{class_name}'")
        assert (
            session.execute("SELECT index_name FROM system_schema.indexes WHERE keyspace_name = 'sasi'").one()
            is None
        )
        with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
            session.execute("SELECT k FROM sasi.t WHERE v = 'x'")
