"""`df.write.format("tabletdb")` through tablet files (`method` files / auto) against a real node.

The same DataFrame written through files and through CQL reads back the same (every CQL type the
data source maps); through files every row carries the one timestamp the write took (CQL rows
each their own), which is how these tests tell the two paths apart from outside; auto sends a
small task's rows through CQL and a large task's as files, both with that timestamp; and what the
file path cannot do is refused with the reason, not ignored.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.harness.node import TestNode
from tests.integration.test_spark_datasource import COLUMNS, INSERT, _row, _spark_rows

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.timeout(900)

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
SCHEMA = [
    f"CREATE KEYSPACE wf WITH replication = {NTS} AND tablets = {{'initial': 4}}",
    "CREATE TYPE wf.address (street text, zip int)",
    "CREATE TYPE wf.person (name text, home frozen<address>, tags set<text>)",
    *(f"CREATE TABLE wf.{name} ({COLUMNS})" for name in ("every", "by_files", "by_cql")),
    "CREATE TABLE wf.kv (k int, c int, v text, PRIMARY KEY (k, c))",
    "CREATE TABLE wf.kv_auto (k int, c int, v text, PRIMARY KEY (k, c))",
    "CREATE TABLE wf.kv_closed (k int, c int, v text, PRIMARY KEY (k, c))",
    "CREATE TABLE wf.hits (k int PRIMARY KEY, n counter)",
]


def fill(session: Any) -> None:
    """The rows of the module's ``db`` (tests/integration/conftest.py), after its SCHEMA."""
    insert = session.prepare(INSERT.replace("sp.every", "wf.every"))
    for n in range(1, 9):
        session.execute(insert, _row(n))
    session.execute("INSERT INTO wf.every (k, c) VALUES (100, 'only the key')")


def _options(node: TestNode, table: str) -> dict[str, str]:
    api_port = str(node.endpoints.api_port)
    return {"hosts": node.host, "port": str(node.port), "table": table, "api_port": api_port}


def _write(df: Any, node: TestNode, table: str, **extra: str) -> None:
    options = {**_options(node, table), **extra}
    if options.get("method") == "cql":
        del options["api_port"]  # refused with method cql: it would not be used
    df.write.format("tabletdb").options(**options).mode("append").save()


def _write_times(db: Any, table: str, column: str = "v") -> set[int]:
    return {r.w for r in db.execute(f"SELECT WRITETIME({column}) AS w FROM {table}") if r.w is not None}


def test_every_type_written_through_files_reads_as_through_cql(spark: Any, node: TestNode, db: Any) -> None:
    df = spark.read.format("tabletdb").options(**_options(node, "wf.every")).load()
    _write(df, node, "wf.by_files", method="files")
    _write(df, node, "wf.by_cql", method="cql")
    read = spark.read.format("tabletdb")
    source = _spark_rows(df)
    assert len(source) == 9
    assert _spark_rows(read.options(**_options(node, "wf.by_files")).load()) == source
    assert _spark_rows(read.options(**_options(node, "wf.by_cql")).load()) == source
    # one timestamp for the whole write through files; CQL statements each carry their own
    assert len(_write_times(db, "wf.by_files", "tx")) == 1
    assert len(_write_times(db, "wf.by_cql", "tx")) > 1


def test_auto_sends_large_tasks_as_files_and_small_ones_through_cql(
    spark: Any, node: TestNode, db: Any
) -> None:
    small = [(1000 + n, n, f"s{n}") for n in range(20)]
    large = [(n // 5, n % 5, f"l{n}") for n in range(600)]
    # two tasks: partition 0 holds the 20 small rows, partition 1 the 600 large ones
    parts = spark.sparkContext.parallelize([0, 1], 2).flatMap(lambda p: small if p == 0 else large)
    df = spark.createDataFrame(parts, "k int, c int, v string")
    assert df.rdd.glom().map(len).collect() == [20, 600]
    _write(df, node, "wf.kv_auto", files_min_rows="100")
    got = sorted((r.k, r.c, r.v) for r in db.execute("SELECT k, c, v FROM wf.kv_auto"))
    expected = small + large
    assert got == sorted(expected)
    # the small task's INSERTs carry the write's timestamp: one write time for every row, either way
    assert len(_write_times(db, "wf.kv_auto")) == 1


def test_auto_without_a_reachable_rest_api_writes_through_cql(spark: Any, node: TestNode, db: Any) -> None:
    with socket.socket() as unused:
        unused.bind((node.host, 0))
        closed = unused.getsockname()[1]  # bound, never listening: connections are refused
        df = spark.createDataFrame([(n, n, f"v{n}") for n in range(50)], "k int, c int, v string")
        _write(df.coalesce(1), node, "wf.kv_closed", api_port=str(closed), files_min_rows="1")
    assert sorted(r.k for r in db.execute("SELECT k FROM wf.kv_closed")) == list(range(50))
    assert len(_write_times(db, "wf.kv_closed")) > 1  # through CQL: each statement its own time


@pytest.mark.parametrize(
    ("table", "extra", "message"),
    [
        ("wf.hits", {"method": "files"}, "counter table"),
        ("wf.kv", {"method": "files", "consistency": "ONE"}, "apply to method cql"),
        ("wf.kv", {"method": "fast"}, "option method must be one of auto, files, cql"),
        ("wf.kv", {"files_min_rows": "0"}, "files_min_rows must be a positive integer"),
    ],
)
def test_what_the_file_path_cannot_do_is_refused(
    spark: Any, node: TestNode, db: Any, table: str, extra: dict[str, str], message: str
) -> None:
    schema = "k int, n long" if table == "wf.hits" else "k int, c int, v string"
    df = spark.createDataFrame([(1, 2)] if table == "wf.hits" else [(1, 2, "x")], schema)
    with pytest.raises(Exception, match=message):
        _write(df, node, table, **extra)
