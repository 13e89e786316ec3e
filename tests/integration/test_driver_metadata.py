"""Real drivers connect to a real node and load metadata that matches the schema we created.

Covers the Foundation acceptance: scylla-driver (v4 explicit and negotiated from v5) and Apache
cassandra-driver load full metadata; composite keys, clustering order, static columns, nested
UDTs, collections, indexes, views, quoted names and table options all come through; a DDL on
one session reaches another session's metadata through the pushed SCHEMA_CHANGE event.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.harness.clients import cassandra_driver_query, run_cassandra_driver, scylla_cluster
from tests.harness.node import TestNode

SCHEMA = [
    "CREATE KEYSPACE meta WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
    " AND durable_writes = true",
    "CREATE TYPE meta.address (street text, zip int)",
    'CREATE TYPE meta."Person" (name text, home frozen<address>, tags set<text>)',
    "CREATE TABLE meta.events ("
    "  tenant int, day date, at timeuuid, seq bigint, kind text static,"
    '  payload map<text, frozen<list<int>>>, who frozen<"Person">, "Mixed Case" text,'
    "  pos tuple<double, double>, vec vector<float, 3>,"
    "  PRIMARY KEY ((tenant, day), at, seq))"
    " WITH CLUSTERING ORDER BY (at DESC, seq ASC)"
    " AND comment = 'event log' AND gc_grace_seconds = 3600 AND default_time_to_live = 60",
    'CREATE INDEX events_kind_idx ON meta.events ("Mixed Case")',
    "CREATE INDEX ON meta.events (keys(payload))",
    "CREATE MATERIALIZED VIEW meta.events_by_seq AS SELECT tenant, day, at, seq FROM meta.events"
    " WHERE tenant IS NOT NULL AND day IS NOT NULL AND at IS NOT NULL AND seq IS NOT NULL"
    " PRIMARY KEY ((seq), tenant, day, at)",
    "CREATE TABLE meta.counters (id uuid PRIMARY KEY, hits counter)",
]


@pytest.fixture(scope="module")
def schema(node: TestNode) -> TestNode:
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        for statement in SCHEMA:
            session.execute(statement)
    return node


def _check_scylla_metadata(cluster: Any) -> None:
    ks = cluster.metadata.keyspaces["meta"]
    assert ks.replication_strategy.__class__.__name__ == "NetworkTopologyStrategy"
    assert ks.durable_writes is True
    assert set(ks.user_types) == {"address", "Person"}
    person = ks.user_types["Person"]
    assert person.field_names == ["name", "home", "tags"]
    assert person.field_types == ["text", "frozen<address>", "set<text>"]

    events = ks.tables["events"]
    assert [c.name for c in events.partition_key] == ["tenant", "day"]
    assert [c.name for c in events.clustering_key] == ["at", "seq"]
    assert [c.is_reversed for c in events.clustering_key] == [True, False]
    assert events.columns["kind"].is_static
    assert events.columns["payload"].cql_type == "map<text, frozen<list<int>>>"
    assert events.columns["who"].cql_type == 'frozen<"Person">'
    assert events.columns["pos"].cql_type == "tuple<double, double>"
    assert "Mixed Case" in events.columns
    assert events.options["comment"] == "event log"
    assert events.options["gc_grace_seconds"] == 3600
    assert events.options["default_time_to_live"] == 60
    assert set(events.indexes) == {"events_kind_idx", "events_payload_idx"}
    assert events.indexes["events_payload_idx"].index_options["target"] == "keys(payload)"

    view = ks.views["events_by_seq"]
    assert view.base_table_name == "events"
    assert [c.name for c in view.partition_key] == ["seq"]
    assert [c.name for c in view.clustering_key] == ["tenant", "day", "at"]
    assert "events_by_seq" in events.views

    assert ks.tables["counters"].columns["hits"].cql_type == "counter"
    # The generated CQL is what cqlsh prints for client-side DESCRIBE; it must round trip.
    text = events.export_as_string()
    assert "PRIMARY KEY ((tenant, day), at, seq)" in text
    assert "CLUSTERING ORDER BY (at DESC, seq ASC)" in text


@pytest.mark.parametrize("protocol_version", [4, None], ids=["v4", "negotiated"])
def test_scylla_driver_loads_full_metadata(schema: TestNode, protocol_version: int | None) -> None:
    with scylla_cluster(schema, protocol_version=protocol_version) as cluster:
        session = cluster.connect()
        assert cluster.protocol_version == 4
        _check_scylla_metadata(cluster)
        row = session.execute(
            "SELECT release_version, cql_version FROM system.local WHERE key = 'local'"
        ).one()
        assert (row.release_version, row.cql_version) == ("3.0.8", "3.3.1")
        assert cluster.metadata.get_host(schema.host) is not None


@pytest.mark.parametrize("protocol_version", [4, None], ids=["v4", "negotiated"])
def test_cassandra_driver_loads_full_metadata(schema: TestNode, protocol_version: int | None) -> None:
    code = """
cluster, session = connect()
ks = cluster.metadata.keyspaces["meta"]
events = ks.tables["events"]
result = {
    "protocol": cluster.protocol_version,
    "types": sorted(ks.user_types),
    "pk": [c.name for c in events.partition_key],
    "ck": [c.name for c in events.clustering_key],
    "reversed": [c.is_reversed for c in events.clustering_key],
    "static": events.columns["kind"].is_static,
    "payload": events.columns["payload"].cql_type,
    "indexes": sorted(events.indexes),
    "views": sorted(ks.views),
    "comment": events.options["comment"],
}
cluster.shutdown()
"""
    got = run_cassandra_driver(schema, code, protocol_version)
    assert got == {
        "protocol": 4,
        "types": ["Person", "address"],
        "pk": ["tenant", "day"],
        "ck": ["at", "seq"],
        "reversed": [True, False],
        "static": True,
        "payload": "map<text, frozen<list<int>>>",
        "indexes": ["events_kind_idx", "events_payload_idx"],
        "views": ["events_by_seq"],
        "comment": "event log",
    }


def test_cassandra_driver_sees_no_peers_v2(schema: TestNode) -> None:
    local, peers = cassandra_driver_query(
        schema, ["SELECT cluster_name FROM system.local WHERE key='local'", "SELECT * FROM system.peers"]
    )
    assert local == [{"cluster_name": "Test Cluster"}]
    assert peers == []


def test_ddl_on_one_session_refreshes_another_through_events(schema: TestNode) -> None:
    with scylla_cluster(schema) as watcher, scylla_cluster(schema) as writer:
        watcher.connect()
        session = writer.connect()
        session.execute("CREATE TABLE meta.pushed (k int PRIMARY KEY, v text)")
        session.execute("ALTER TABLE meta.pushed ADD extra list<int>")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            table = watcher.metadata.keyspaces["meta"].tables.get("pushed")
            if table is not None and "extra" in table.columns:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the watching session never saw the new table through SCHEMA_CHANGE")
        session.execute("DROP TABLE meta.pushed")
        deadline = time.monotonic() + 30
        while "pushed" in watcher.metadata.keyspaces["meta"].tables:
            assert time.monotonic() < deadline, "the drop never reached the watching session"
            time.sleep(0.1)


def test_schema_versions_agree_after_ddl(schema: TestNode) -> None:
    with scylla_cluster(schema) as cluster:
        session = cluster.connect()
        result = session.execute("CREATE TABLE IF NOT EXISTS meta.agree (k int PRIMARY KEY)")
        # Agreement needs exactly one non-null schema_version across system.local and peers.
        assert result.response_future.is_schema_agreed
