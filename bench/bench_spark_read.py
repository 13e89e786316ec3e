"""Benchmark: reading a table through the `tabletdb` Spark data source against reading Parquet.

One node is filled through the data source (`--rows`, default 200,000: id bigint key, name text,
score double, n int). In the same run and SparkSession:
- `tabletdb read`: the whole table read through the data source and materialized by Spark (the
  `noop` sink), rows/s and the node's CPU µs per row; one Spark task per tablet, each a paged
  token-range scan (served from SQLite by the node's short scan path, issue 19 item 5) handed to
  Spark as Arrow batches.
- `tabletdb keys`: `--keys` partition keys read with `id IN (...)` (pushed down: key reads, no scan).
- `parquet read`: the same rows (read once through the data source and cached) written as
  Parquet, then read back in full into the `noop` sink.
- `ratio`: Parquet read seconds / tabletdb read seconds (1.0 = as fast as Parquet).

Reproduce: `.venv/bin/python -m bench.bench_spark_read [--rows N] [--keys K] [--master local[2]]`.
Run it on a quiet machine: figures taken while other processes share the cores are noise.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, proc_cpu_seconds, tabletdb_server

HOST_OCTET = 43


def _create(host: str) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], protocol_version=4)
    try:
        session = cluster.connect()
        replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        session.execute(f"CREATE KEYSPACE bench WITH replication = {replication}")
        session.execute("CREATE TABLE bench.rows (id bigint PRIMARY KEY, name text, score double, n int)")
    finally:
        cluster.shutdown()


def _timed(work: Any) -> float:
    started = time.monotonic()
    work()
    return time.monotonic() - started


def _log(text: str) -> None:
    print(f"bench_spark_read: {text}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from tabletdb.spark.session import spark_session

    spark = spark_session(args.master, {"spark.sql.shuffle.partitions": "4"})
    try:
        with tempfile.TemporaryDirectory(prefix="bench-spark-read-") as tmp_name:
            tmp = Path(tmp_name)
            with tabletdb_server(host_octet=HOST_OCTET) as node:
                options = {
                    "hosts": node.host,
                    "port": str(node.port),
                    "table": "bench.rows",
                    "consistency": "ONE",
                }
                _create(node.host)
                rows_df = spark.range(args.rows, numPartitions=4).select(
                    F.col("id"),
                    F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
                    (F.col("id") / 7).alias("score"),
                    (F.col("id") % 1000).cast("int").alias("n"),
                )
                rows_df.write.format("tabletdb").options(**options).mode("append").save()
                _log(f"filled {args.rows} rows")

                def read_all() -> None:
                    spark.read.format("tabletdb").options(**options).load().write.format("noop").mode(
                        "overwrite"
                    ).save()

                read_all()  # warm-up: connections, prepared statements, Python workers
                cpu = proc_cpu_seconds(node.pid)
                read_s = _timed(read_all)
                read_cpu = proc_cpu_seconds(node.pid) - cpu
                keys = list(range(0, args.rows, max(1, args.rows // args.keys)))[: args.keys]

                def read_keys() -> None:
                    df = spark.read.format("tabletdb").options(**options).load()
                    df.where(F.col("id").isin(keys)).write.format("noop").mode("overwrite").save()

                keys_s = _timed(read_keys)
                cached = spark.read.format("tabletdb").options(**options).load().cache()
                count = cached.count()
            cached.write.parquet(str(tmp / "warm-up.parquet"))
            cached.write.parquet(str(tmp / "rows.parquet"))

            def read_parquet() -> None:
                spark.read.parquet(str(tmp / "rows.parquet")).write.format("noop").mode("overwrite").save()

            read_parquet()
            parquet_s = _timed(read_parquet)
    finally:
        spark.stop()
    figures = {
        "benchmark": "spark_read",
        "workload": f"{count} rows (bigint, text, double, int), 1 node smp 1, Spark {args.master}",
        "tabletdb_read_rows_per_s": round(count / read_s),
        "tabletdb_read_s": round(read_s, 2),
        "tabletdb_server_cpu_us_per_row": round(read_cpu / count * 1e6, 2),
        "tabletdb_keys_read_s": round(keys_s, 2),
        "keys": len(keys),
        "parquet_read_rows_per_s": round(count / parquet_s),
        "parquet_read_s": round(parquet_s, 2),
        "ratio_parquet_s_to_tabletdb_s": round(parquet_s / read_s, 3),
        "errors": int(count != args.rows),
    }
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
