"""The ``tabletdb`` data source reads a CDC log table by stream (issue 16 item 7), on a real node.

``=`` and ``IN`` on ``cdc$stream_id`` (the log's whole partition key, a blob) are answered by
the reader: its plan is one group of single-stream reads (``WHERE "cdc$stream_id" = ?``), no
tablet scan, and Spark's rows are those a CQL read of the same streams returns. A slice of
``cdc$batch_seq_no`` with the stream's ``cdc$time`` pinned goes along too. The data is tiny and
the Spark session local and shared: the test is about what is planned, not how fast.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.harness.node import TestNode

pyspark = pytest.importorskip("pyspark")

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
LOG = "cdcs.t_scylla_cdc_log"
Row = tuple[bytes, str, int, int, int]
"""(cdc$stream_id, cdc$time as text, cdc$operation, k, v), as both reads give them."""


SCHEMA = [
    f"CREATE KEYSPACE cdcs WITH replication = {NTS} AND tablets = {{'initial': 4}}",
    "CREATE TABLE cdcs.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}",
]


def fill(session: Any) -> None:
    """The rows of the module's ``db`` (tests/integration/conftest.py), after its SCHEMA."""
    insert = session.prepare("INSERT INTO cdcs.t (k, v) VALUES (?, ?)")
    for k in range(16):
        session.execute(insert, (k, k * 10))
    session.execute(
        "BEGIN UNLOGGED BATCH INSERT INTO cdcs.t (k, v) VALUES (100, 1); "
        "INSERT INTO cdcs.t (k, v) VALUES (100, 2); APPLY BATCH"
    )


def _cql_rows(session: Any, streams: list[bytes]) -> list[Row]:
    query = f'SELECT "cdc$stream_id", "cdc$time", "cdc$operation", k, v FROM {LOG} WHERE "cdc$stream_id" = %s'
    rows = [r for stream in streams for r in session.execute(query, (stream,))]
    return sorted((bytes(r[0]), str(r[1]), r[2], r[3], r[4]) for r in rows)


def _spark_rows(df: Any) -> list[Row]:
    rows = df.select("cdc$stream_id", "cdc$time", "cdc$operation", "k", "v").collect()
    return sorted((bytes(r[0]), r[1], r[2], r[3], r[4]) for r in rows)


def _options(node: TestNode) -> dict[str, str]:
    return {"hosts": node.host, "port": str(node.port), "table": LOG, "consistency": "ONE"}


def _streams(session: Any) -> list[bytes]:
    return sorted({bytes(r[0]) for r in session.execute(f'SELECT "cdc$stream_id" FROM {LOG}')})


def test_the_reader_plans_single_stream_reads_for_equal_and_in(node: TestNode, db: Any) -> None:
    from pyspark.sql.datasource import EqualTo, In

    from tabletdb.spark.datasource import TabletdbDataSource
    from tabletdb.spark.reading import KeyPartition, ScanPartition

    streams = _streams(db)
    assert len(streams) == 4  # one stream per tablet of the base
    source = TabletdbDataSource(_options(node))
    reader = source.reader(source.schema())
    left = reader.pushFilters([EqualTo(("cdc$stream_id",), streams[1])])
    assert list(left) == []
    (only,) = reader.partitions()
    assert isinstance(only, KeyPartition) and only.keys == ((streams[1],),)

    reader = source.reader(source.schema())
    assert list(reader.pushFilters([In(("cdc$stream_id",), (streams[0], streams[2]))])) == []
    (both,) = reader.partitions()
    assert isinstance(both, KeyPartition) and sorted(both.keys) == [(streams[0],), (streams[2],)]

    unpinned = source.reader(source.schema())
    assert all(isinstance(p, ScanPartition) for p in unpinned.partitions())  # control: a scan


def test_spark_reads_a_log_by_stream_as_cql_does(spark: Any, node: TestNode, db: Any) -> None:
    from pyspark.sql import functions as F

    streams = _streams(db)
    df = spark.read.format("tabletdb").options(**_options(node)).load()
    one = df.where(F.col("cdc$stream_id") == streams[3])
    assert one.rdd.getNumPartitions() == 1
    assert _spark_rows(one) == _cql_rows(db, [streams[3]]) != []

    two = df.where(F.col("cdc$stream_id").isin(streams[0], streams[2]))
    assert two.rdd.getNumPartitions() == 1
    expected = _cql_rows(db, [streams[0], streams[2]])
    assert _spark_rows(two) == expected and {r[0] for r in expected} == {streams[0], streams[2]}


def test_a_batch_is_read_by_its_stream_time_and_sequence(spark: Any, node: TestNode, db: Any) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual

    from tabletdb.spark.datasource import TabletdbDataSource

    everything = db.execute(f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", k FROM {LOG}')
    (batch,) = [r for r in everything if r[3] == 100 and r[2] == 1]
    source = TabletdbDataSource(_options(node))
    reader = source.reader(source.schema())
    pinned = [
        EqualTo(("cdc$stream_id",), bytes(batch[0])),
        EqualTo(("cdc$time",), str(batch[1])),
        GreaterThanOrEqual(("cdc$batch_seq_no",), 1),
    ]
    assert list(reader.pushFilters(pinned)) == []  # all three answered by the reader
    assert reader.pushed.keys == ((bytes(batch[0]),),)
    assert reader.pushed.clustering == (("cdc$time", "=", batch[1]), ("cdc$batch_seq_no", ">=", 1))
    df = spark.read.format("tabletdb").options(**_options(node)).load()
    rows = df.where(
        (F.col("cdc$stream_id") == bytes(batch[0]))
        & (F.col("cdc$time") == str(batch[1]))
        & (F.col("cdc$batch_seq_no") >= 1)
    )
    assert [(r["k"], r["v"], r["cdc$batch_seq_no"]) for r in rows.collect()] == [(100, 2, 1)]
