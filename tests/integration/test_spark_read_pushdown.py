"""The data source answers Spark's key and clustering filters itself (``spark.pushdown``) against a
real node: the same rows as without pushdown, from one input partition of keys instead of one
per tablet, filters it cannot answer left to Spark; pages arrive as Arrow batches."""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.node import TestNode

pyspark = pytest.importorskip("pyspark")

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
ROWS = [(k, b, c, f"v{k}{b}{c}") for k in range(12) for b in ("x", "y") for c in range(8)]


SCHEMA = [
    f"CREATE KEYSPACE pd WITH replication = {NTS} AND tablets = {{'initial': 4}}",
    "CREATE TABLE pd.wide (k int, b text, c int, v text, PRIMARY KEY ((k, b), c))",
]


def fill(session: Any) -> None:
    """The rows of the module's ``db`` (tests/integration/conftest.py), after its SCHEMA."""
    insert = session.prepare("INSERT INTO pd.wide (k, b, c, v) VALUES (?, ?, ?, ?)")
    for row in ROWS:
        session.execute(insert, row)


def _frame(spark: Any, node: TestNode, **extra: str) -> Any:
    options = {"hosts": node.host, "port": str(node.port), "table": "pd.wide", "consistency": "ONE", **extra}
    return spark.read.format("tabletdb").options(**options).load()


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((r.k, r.b, r.c, r.v) for r in df.collect())


def test_key_and_clustering_filters_are_answered_by_the_reader(spark: Any, node: TestNode, db: Any) -> None:
    from pyspark.sql import functions as F

    def query(df: Any) -> Any:
        return df.where(
            F.col("k").isin(1, 2, 40) & (F.col("b") == "x") & (F.col("c") >= 3) & (F.col("c") < 6)
        )

    expected = sorted(r for r in ROWS if r[0] in (1, 2) and r[1] == "x" and 3 <= r[2] < 6)
    pushed = query(_frame(spark, node))
    assert _rows(pushed) == expected
    assert pushed.rdd.getNumPartitions() == 1  # three keys: one group of key reads, no tablet scans
    plain = query(_frame(spark, node, pushdown="false"))
    assert _rows(plain) == expected
    assert plain.rdd.getNumPartitions() >= 4  # every tablet scanned, Spark filtering


def test_filters_the_reader_cannot_answer_stay_with_spark(spark: Any, node: TestNode, db: Any) -> None:
    from pyspark.sql import functions as F

    df = _frame(spark, node)
    # a clustering slice without the key: each tablet's scan reads only the slice
    sliced = df.where((F.col("c") > 5) & F.col("v").endswith("7"))
    assert _rows(sliced) == sorted(r for r in ROWS if r[2] > 5 and r[3].endswith("7"))
    # part of the partition key, and a regular column: Spark filters
    partial = df.where((F.col("k") == 3) & (F.col("v") != "v3x0"))
    assert _rows(partial) == sorted(r for r in ROWS if r[0] == 3 and r[3] != "v3x0")
    # OR is not a conjunction Spark can push
    either = df.where((F.col("k") == 3) | (F.col("c") == 7))
    assert _rows(either) == sorted(r for r in ROWS if r[0] == 3 or r[2] == 7)


def test_pages_arrive_whole_and_typed(spark: Any, node: TestNode, db: Any) -> None:
    df = _frame(spark, node, page_size="5")
    assert [f.dataType.simpleString() for f in df.schema.fields] == ["int", "string", "int", "string"]
    assert _rows(df) == sorted(ROWS)
    assert df.count() == len(ROWS)
