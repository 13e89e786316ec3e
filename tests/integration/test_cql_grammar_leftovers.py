"""Grammar ScyllaDB accepts that we refused or ignored: CREATE KEYSPACE without WITH (and with no
replication factor: ScyllaDB's default, one replica per rack of each datacenter), ALTER TABLE
... DROP ... USING TIMESTAMP ? bound at execution, SELECT ... USING SERVICE LEVEL and USING
TIMEOUT limiting the statement."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from cassandra import InvalidRequest, ReadTimeout, WriteTimeout
from cassandra.protocol import ConfigurationException
from cassandra.util import Duration

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        yield cluster.connect()


def _replication(session: Any, keyspace: str) -> dict[str, str]:
    row = session.execute(
        "SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = %s", [keyspace]
    ).one()
    return dict(row.replication)


@pytest.mark.parametrize(
    ("name", "with_clause"),
    [
        ("gl_none", ""),
        ("gl_empty", " WITH replication = {}"),
        ("gl_nts", " WITH replication = {'class': 'NetworkTopologyStrategy'}"),
    ],
)
def test_keyspace_without_a_replication_factor_gets_one_replica_per_rack(
    session: Any, name: str, with_clause: str
) -> None:
    session.execute(f"CREATE KEYSPACE {name}{with_clause}")
    assert _replication(session, name) == {
        "class": "org.apache.cassandra.locator.NetworkTopologyStrategy",
        "datacenter1": "1",
    }
    session.execute(f"CREATE TABLE {name}.t (k int PRIMARY KEY, v int)")
    session.execute(f"INSERT INTO {name}.t (k, v) VALUES (1, 2)")
    assert session.execute(f"SELECT v FROM {name}.t WHERE k = 1").one().v == 2


def test_simple_strategy_still_needs_a_factor(session: Any) -> None:
    with pytest.raises(ConfigurationException, match="SimpleStrategy requires a replication_factor"):
        session.execute("CREATE KEYSPACE gl_simple WITH replication = {'class': 'SimpleStrategy'}")


def test_drop_using_timestamp_bind_marker_is_bound_when_executed(session: Any) -> None:
    session.execute("CREATE KEYSPACE IF NOT EXISTS gl_drop")
    session.execute("CREATE TABLE gl_drop.t (k int PRIMARY KEY, a int, b int)")
    session.execute("INSERT INTO gl_drop.t (k, a, b) VALUES (1, 10, 20) USING TIMESTAMP 1000")
    drop = session.prepare("ALTER TABLE gl_drop.t DROP a USING TIMESTAMP ?")
    assert [c.name for c in drop.column_metadata] == ["[timestamp]"]
    session.execute(drop, [500])
    rows = session.execute(
        "SELECT column_name, dropped_time FROM system_schema.dropped_columns "
        "WHERE keyspace_name = 'gl_drop' AND table_name = 't'"
    )
    assert [r.column_name for r in rows] == ["a"]
    # dropped at 500, before the write at 1000: re-adding the column shows the old value again
    session.execute("ALTER TABLE gl_drop.t ADD a int")
    assert session.execute("SELECT a FROM gl_drop.t WHERE k = 1").one().a == 10
    with pytest.raises(InvalidRequest, match="Invalid null value of timestamp"):
        session.execute(session.prepare("ALTER TABLE gl_drop.t DROP b USING TIMESTAMP ?"), [None])


def test_using_timeout_and_service_level_limit_the_statement(node_factory: NodeFactory) -> None:
    """Every statement of this node waits 300 ms first (a test-only setting), so a 1 ms limit
    always expires and a 60 s one never does: USING TIMEOUT wins over USING SERVICE LEVEL, which
    wins over the session's level."""
    node = node_factory.start_node(options={"test_statement_delay_ms": 300})
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute("CREATE KEYSPACE tl")
        s.execute("CREATE TABLE tl.t (k int PRIMARY KEY, v int)")
        s.execute("CREATE SERVICE LEVEL quick WITH TIMEOUT = 1ms")
        s.execute("CREATE SERVICE LEVEL patient WITH TIMEOUT = 60s")
        with pytest.raises(ReadTimeout):
            s.execute("SELECT * FROM tl.t USING TIMEOUT 1ms")
        with pytest.raises(ReadTimeout):
            s.execute("SELECT * FROM tl.t USING SERVICE LEVEL quick")
        with pytest.raises(ReadTimeout):
            s.execute("SELECT * FROM tl.t USING SERVICE LEVEL patient AND TIMEOUT 1ms")
        s.execute("SELECT * FROM tl.t USING SERVICE LEVEL quick AND TIMEOUT 60s")
        s.execute("SELECT * FROM tl.t USING SERVICE_LEVEL patient")
        prepared = s.prepare("SELECT * FROM tl.t WHERE k = ? USING TIMEOUT ?")
        assert [c.type.typename for c in prepared.column_metadata] == ["int", "duration"]
        with pytest.raises(ReadTimeout):
            s.execute(prepared, [1, Duration(0, 0, 1_000_000)])
        with pytest.raises(WriteTimeout):
            s.execute("INSERT INTO tl.t (k, v) VALUES (1, 1) USING TIMEOUT 1ms")
        with pytest.raises(InvalidRequest, match="Service Level nosuch doesn't exist"):
            s.execute("SELECT * FROM tl.t USING SERVICE LEVEL nosuch")
        with pytest.raises(InvalidRequest, match="finer than milliseconds"):
            s.execute("SELECT * FROM tl.t USING TIMEOUT 1us")
        with pytest.raises(WriteTimeout):
            s.execute("BEGIN BATCH USING TIMEOUT 1ms INSERT INTO tl.t (k, v) VALUES (2, 2) APPLY BATCH")
        batch = s.prepare("BEGIN BATCH USING TIMEOUT ? INSERT INTO tl.t (k, v) VALUES (?, ?) APPLY BATCH")
        assert [c.type.typename for c in batch.column_metadata] == ["duration", "int", "int"]
        s.execute(batch, [Duration(0, 0, 60_000_000_000), 3, 3])
        with pytest.raises(InvalidRequest, match="must be positive"):
            s.execute(batch, [Duration(0, 0, 0), 4, 4])
        with pytest.raises(InvalidRequest, match="finer than milliseconds"):
            s.execute("TRUNCATE tl.t USING TIMEOUT 1us")
        s.execute("TRUNCATE tl.t USING TIMEOUT 60s")
        assert list(s.execute("SELECT * FROM tl.t")) == []


def test_collection_literals_in_the_select_list_take_their_elements_type(session: Any) -> None:
    session.execute("CREATE KEYSPACE IF NOT EXISTS gl_sel")
    session.execute("CREATE TABLE IF NOT EXISTS gl_sel.t (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO gl_sel.t (k, v) VALUES (1, 5)")
    result = session.execute("SELECT v, [1, 2], {1: 'a'}, {'x', 'y'}, [[1], [2, 3]] AS nested FROM gl_sel.t")
    row = result.one()
    assert tuple(row) == (5, [1, 2], {1: "a"}, {"x", "y"}, [[1], [2, 3]])
    assert result.column_names == ["v", "[1, 2]", "{1: 'a'}", "{'x', 'y'}", "nested"]
    with pytest.raises(InvalidRequest, match=r"Cannot infer the type of \[\]"):
        session.execute("SELECT [] FROM gl_sel.t")
    with pytest.raises(InvalidRequest, match="elements have different types"):
        session.execute("SELECT [1, 'a'] FROM gl_sel.t")
    assert session.execute("SELECT [1, 2] FROM system.local").one()[0] == [1, 2]


def test_decimal_clustering_keys_compare_by_value_as_in_scylladb(session: Any) -> None:
    """1.0 and 1.00 are one clustering key (ScyllaDB's decimal comparison is numeric), found by
    any spelling and ordered by value. The key comes back without trailing zeros: the stored,
    byte-comparable form keeps the value, not the scale (docs/architecture.md, Deviations)."""
    session.execute("CREATE KEYSPACE IF NOT EXISTS gl_dec")
    session.execute("CREATE TABLE IF NOT EXISTS gl_dec.t (k int, c decimal, v int, PRIMARY KEY (k, c))")
    session.execute("INSERT INTO gl_dec.t (k, c, v) VALUES (1, 1.0, 1)")
    session.execute("INSERT INTO gl_dec.t (k, c, v) VALUES (1, 1.00, 2)")
    session.execute("INSERT INTO gl_dec.t (k, c, v) VALUES (1, 10, 3)")
    session.execute("INSERT INTO gl_dec.t (k, c, v) VALUES (1, 0.50, 4)")
    rows = list(session.execute("SELECT c, v FROM gl_dec.t WHERE k = 1"))
    assert [(r.c, r.v) for r in rows] == [(Decimal("0.5"), 4), (Decimal("1"), 2), (Decimal("10"), 3)]
    assert session.execute("SELECT v FROM gl_dec.t WHERE k = 1 AND c = 1.000").one().v == 2
    assert [r.v for r in session.execute("SELECT v FROM gl_dec.t WHERE k = 1 AND c > 0.5 AND c <= 1e1")] == [
        2,
        3,
    ]


def test_function_selector_columns_are_named_as_scylladb_names_them(session: Any) -> None:
    """Native functions print with their keyspace (``system.tojson(v)``, as applications that
    read ``row['system.tojson(v)']`` rely on), writetime/ttl and casts without one, COUNT(*) as
    ``count``; an alias replaces the name."""
    session.execute("CREATE KEYSPACE IF NOT EXISTS gl_names")
    session.execute("CREATE TABLE IF NOT EXISTS gl_names.t (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO gl_names.t (k, v) VALUES (1, 2)")
    names = session.execute(
        "SELECT toJson(v), cast(v AS bigint), writetime(v), ttl(v), token(k), blobAsInt(intAsBlob(v)) "
        "FROM gl_names.t"
    ).column_names
    assert names == [
        "system.tojson(v)",
        "cast(v as bigint)",
        "writetime(v)",
        "ttl(v)",
        "system.token(k)",
        "system.blobasint(system.intasblob(v))",
    ]
    aggregates = session.execute("SELECT count(*), min(v), max(v) AS top FROM gl_names.t").column_names
    assert aggregates == ["count", "system.min(v)", "top"]
