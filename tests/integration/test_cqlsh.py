"""scylla-cqlsh and Apache cqlsh run CREATE, USE and DESC against the node."""

from __future__ import annotations

from pathlib import Path

from tests.harness.clients import run_cqlsh
from tests.harness.node import TestNode


def test_scylla_cqlsh_create_use_describe(node: TestNode, cqlsh_home: Path) -> None:
    script = (
        "CREATE KEYSPACE shell WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1};"
        "USE shell;"
        "CREATE TABLE readings (sensor text, at timestamp, value double, PRIMARY KEY (sensor, at))"
        " WITH CLUSTERING ORDER BY (at DESC);"
        "DESC KEYSPACE shell;"
    )
    result = run_cqlsh(node, script, home=cqlsh_home).check()
    out = result.stdout
    assert "CREATE KEYSPACE shell" in out
    assert "CREATE TABLE shell.readings" in out
    assert "PRIMARY KEY (sensor, at)" in out
    assert "CLUSTERING ORDER BY (at DESC)" in out


def test_scylla_cqlsh_banner_queries_and_select(node: TestNode, cqlsh_home: Path) -> None:
    result = run_cqlsh(node, "SELECT key, version FROM system.versions;", home=cqlsh_home).check()
    assert "local" in result.stdout


def test_apache_cqlsh_connects_and_runs_ddl(node: TestNode, cqlsh_home: Path) -> None:
    script = (
        "CREATE KEYSPACE IF NOT EXISTS shell2 WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1};"
        "USE shell2;"
        "CREATE TABLE IF NOT EXISTS kv (k text PRIMARY KEY, v blob);"
        "SELECT keyspace_name, table_name FROM system_schema.tables WHERE keyspace_name = 'shell2';"
    )
    result = run_cqlsh(node, script, apache=True, home=cqlsh_home).check()
    assert "kv" in result.stdout


def test_scylla_cqlsh_describe_is_answered_by_the_server(node: TestNode, cqlsh_home: Path) -> None:
    setup = (
        "CREATE KEYSPACE IF NOT EXISTS srv WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1};"
        "CREATE TABLE IF NOT EXISTS srv.t (k int PRIMARY KEY, v text);"
    )
    run_cqlsh(node, setup, home=cqlsh_home).check()
    # One statement per run: cqlsh sends a multi-statement -e string as one query, which the
    # server (like ScyllaDB) rejects as a syntax error, and then it describes client-side.
    out = run_cqlsh(node, "DESC TABLE srv.t", home=cqlsh_home).check().stdout
    # Only the server's text has the full class name of the strategy and tombstone_gc.
    assert "tombstone_gc = {'mode': 'repair', 'propagation_delay_in_seconds': '3600'}" in out
    assert "crc_check_chance = 1\n" in out
    ks = run_cqlsh(node, "DESC KEYSPACE srv", home=cqlsh_home).check().stdout
    assert "'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy'" in ks
