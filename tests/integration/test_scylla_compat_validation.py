"""Statements ScyllaDB refuses (or turns into no-ops), refused the same way, through the real driver."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import ConfigurationException, SyntaxException

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode

NTS_ONE = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"


def _index_names(session: Any, keyspace: str) -> list[str]:
    rows = session.execute(f"SELECT index_name FROM system_schema.indexes WHERE keyspace_name = '{keyspace}'")
    return sorted(r.index_name for r in rows)


def test_index_statements_scylladb_refuses(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        session.execute(f"CREATE KEYSPACE vix WITH replication = {NTS_ONE}")
        session.execute("CREATE TABLE vix.t (k int, c int, v int, s int static, PRIMARY KEY (k, c))")
        session.execute("CREATE INDEX first ON vix.t (v)")
        # A second index on the same target under another name: IF NOT EXISTS makes it a no-op.
        session.execute("CREATE INDEX IF NOT EXISTS other ON vix.t (v)")
        assert _index_names(session, "vix") == ["first"]
        with pytest.raises(InvalidRequest, match="Index other is a duplicate of existing index first"):
            session.execute("CREATE INDEX other ON vix.t (v)")
        with pytest.raises(InvalidRequest, match="Local indexes containing static columns are not supported"):
            session.execute("CREATE INDEX ON vix.t ((k), s)")
        long_name = "i" * 193
        with pytest.raises(InvalidRequest, match="index names shouldn't be more than 192 characters long"):
            session.execute(f"CREATE INDEX {long_name} ON vix.t (c)")
        session.execute(f"CREATE INDEX {'i' * 192} ON vix.t (c)")
        assert _index_names(session, "vix") == ["first", "i" * 192]


def test_view_statements_scylladb_refuses(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        session.execute(f"CREATE KEYSPACE vmv WITH replication = {NTS_ONE}")
        session.execute("CREATE TABLE vmv.t (k int, c int, v int, w int, PRIMARY KEY (k, c))")
        session.execute(
            "CREATE MATERIALIZED VIEW vmv.mv AS SELECT k, c, v FROM vmv.t "
            "WHERE k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (c, k)"
        )
        session.execute("INSERT INTO vmv.t (k, c, v, w) VALUES (1, 2, 3, 4)")
        did_you_mean = r"Cannot use DESC TABLE on materialized View\. \(Did you mean DESC MATERIALIZED"
        with pytest.raises(InvalidRequest, match=did_you_mean):
            session.execute("DESC TABLE vmv.mv")
        (row,) = session.execute("DESC MATERIALIZED VIEW vmv.mv")
        assert row.type == "view" and row.create_statement.startswith("CREATE MATERIALIZED VIEW vmv.mv AS")
        assert [r.type for r in session.execute("DESC TABLE vmv.t")] == ["table", "view"]
        needed = r"Cannot drop column v from base table vmv\.t: materialized view mv needs this column"
        with pytest.raises(InvalidRequest, match=needed):
            session.execute("ALTER TABLE vmv.t DROP v")
        session.execute("ALTER TABLE vmv.t DROP w")  # the view does not select w
        with pytest.raises(InvalidRequest, match="Cannot TRUNCATE materialized view directly; must truncate"):
            session.execute("TRUNCATE vmv.mv")
        assert session.execute("SELECT v FROM vmv.mv WHERE c = 2 AND k = 1").one().v == 3


def test_timestamps_with_more_than_millisecond_digits_are_refused(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        session.execute(f"CREATE KEYSPACE vts WITH replication = {NTS_ONE}")
        session.execute("CREATE TABLE vts.t (k int PRIMARY KEY, t timestamp)")
        with pytest.raises(InvalidRequest, match=r"Milliseconds length exceeds expected \(7\)"):
            session.execute("INSERT INTO vts.t (k, t) VALUES (1, '2020-01-01 00:00:00.1234567')")
        session.execute("INSERT INTO vts.t (k, t) VALUES (2, '2020-01-01 00:00:00.123')")
        assert session.execute("SELECT k FROM vts.t").all() == [(2,)]
        (value,) = session.execute("SELECT t FROM vts.t WHERE k = 2").one()
        assert value.microsecond == 123000


def test_keyspace_and_tablet_options_scylladb_refuses(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        with pytest.raises(ConfigurationException, match="Missing mandatory replication strategy class"):
            session.execute("CREATE KEYSPACE vks0 WITH replication = {'replication_factor': 1}")
        session.execute(f"CREATE KEYSPACE vks1 WITH replication = {NTS_ONE} AND tablets = {{'initial': 4}}")
        session.execute("ALTER KEYSPACE vks1 WITH tablets = {'initial': 0}")
        (desc,) = session.execute("DESC ONLY KEYSPACE vks1")  # 0 means 'choose for me', not zero tablets
        assert desc.create_statement.rstrip().endswith("AND tablets = {'enabled': true};")
        vnodes = "{'enabled': false}"
        session.execute(f"CREATE KEYSPACE vks2 WITH replication = {NTS_ONE} AND tablets = {vnodes}")
        off = "tablet options cannot be used when tablets are disabled for the keyspace"
        with pytest.raises(ConfigurationException, match=off):
            session.execute("ALTER KEYSPACE vks2 WITH tablets = {'initial': 4}")
        with pytest.raises(ConfigurationException, match=off):
            session.execute("CREATE TABLE vks2.t (k int PRIMARY KEY) WITH tablets = {'min_tablet_count': 4}")
        session.execute("CREATE TABLE vks2.t (k int PRIMARY KEY)")
        with pytest.raises(ConfigurationException, match=off):
            session.execute("ALTER TABLE vks2.t WITH tablets = {'min_tablet_count': 4}")


def test_create_index_with_properties_describes_them_and_keeps_them_over_a_restart(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        session: Any = cluster.connect()
        session.execute(f"CREATE KEYSPACE vip WITH replication = {NTS_ONE}")
        session.execute("CREATE TABLE vip.t (k int PRIMARY KEY, v int, u int)")
        session.execute(
            "CREATE INDEX iv ON vip.t (v) WITH gc_grace_seconds = 3 "
            "AND compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': '6'}"
        )
        with pytest.raises(SyntaxException, match="Unknown property 'replicate_on_write'"):
            session.execute("CREATE INDEX iu ON vip.t (u) WITH replicate_on_write = true")
        with pytest.raises(InvalidRequest, match="Cannot enable CDC for a materialized view"):
            session.execute("CREATE INDEX iu ON vip.t (u) WITH cdc = {'enabled': true}")
        session.execute("INSERT INTO vip.t (k, v, u) VALUES (1, 7, 8)")
        assert [r.k for r in session.execute("SELECT k FROM vip.t WHERE v = 7")] == [1]
        expected = (
            "CREATE INDEX iv ON vip.t(v) WITH compaction = {'class': 'SizeTieredCompactionStrategy', "
            "'min_threshold': '6'}\n    AND gc_grace_seconds = 3;\n"
        )
        assert session.execute("DESC INDEX vip.iv").one().create_statement == expected
    node.restart()
    with scylla_cluster(node) as cluster:
        session = cluster.connect()
        assert session.execute("DESC INDEX vip.iv").one().create_statement == expected
        # The text DESCRIBE gives recreates the index.
        session.execute("DROP INDEX vip.iv")
        session.execute(expected)
        assert session.execute("DESC INDEX vip.iv").one().create_statement == expected
        assert [r.k for r in session.execute("SELECT k FROM vip.t WHERE v = 7")] == [1]
