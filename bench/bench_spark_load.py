"""Benchmark: bulk load through the `tabletdb` data source, against Spark writing the same rows as Parquet.

The ratio (load rows/s / Parquet rows/s, same rows, same SparkSession, same run) is the figure to
track: it cancels out how fast this machine runs Spark, leaving what the data source and the node
cost. Server CPU per row is reported as for the other server benchmarks. Reproduce: `make bench`
or `.venv/bin/python -m bench.bench_spark_load [--rows N] [--master local[2]]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

from bench.common import RESULT_PREFIX, proc_cpu_seconds, tabletdb_server

SCHEMA = "id bigint, name string, score double, tags array<string>"


def _rows(spark: Any, count: int, partitions: int) -> Any:
    """Generated in the JVM so that neither side pays Python row generation."""
    from pyspark.sql import functions as F

    return (
        spark.range(count, numPartitions=partitions)
        .select(
            F.col("id"),
            F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
            (F.col("id") / 7).alias("score"),
            F.array(F.lit("a"), (F.col("id") % 10).cast("string")).alias("tags"),
        )
        .cache()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=None, help="Writes in flight per task.")
    args = parser.parse_args()

    from tabletdb.spark.connection import DEFAULT_CONCURRENCY
    from tabletdb.spark.session import spark_session

    in_flight = args.concurrency or DEFAULT_CONCURRENCY

    spark = spark_session(args.master)
    try:
        df = _rows(spark, args.rows, args.partitions)
        df.count()  # materialise the cache outside both timings
        with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
            df.write.parquet(f"{tmp}/warm-up.parquet")  # JIT and Python workers warm, as for the load
            started = time.monotonic()
            df.write.parquet(f"{tmp}/rows.parquet")
            parquet_s = time.monotonic() - started
        with tabletdb_server() as server:
            from cassandra.cluster import Cluster

            cluster = Cluster([server.host], port=server.port, protocol_version=4)
            session = cluster.connect()
            replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
            session.execute(f"CREATE KEYSPACE bench WITH replication = {replication}")
            session.execute(
                "CREATE TABLE bench.rows (id bigint PRIMARY KEY, name text, score double, tags list<text>)"
            )
            options = {
                "hosts": server.host,
                "port": str(server.port),
                "table": "bench.rows",
                "consistency": "ONE",
                "concurrency": str(in_flight),
            }
            cpu_before = proc_cpu_seconds(server.pid)
            started = time.monotonic()
            df.write.format("tabletdb").options(**options).mode("append").save()
            load_s = time.monotonic() - started
            cpu = proc_cpu_seconds(server.pid) - cpu_before
            stored = next(iter(session.execute("SELECT count(*) FROM bench.rows"))).count
            cluster.shutdown()
    finally:
        spark.stop()
    figures = {
        "benchmark": "spark_load",
        "workload": f"{args.rows} rows, {args.partitions} tasks, {args.master}, {in_flight} in flight/task",
        "ops_per_s": args.rows / load_s,
        "parquet_rows_per_s": args.rows / parquet_s,
        "ratio_to_parquet": parquet_s / load_s,
        "server_cpu_us_per_op": cpu / args.rows * 1e6,
        "capacity_ops_per_cpu_s": args.rows / cpu if cpu > 0 else None,
        "errors": args.rows - stored,
    }
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
