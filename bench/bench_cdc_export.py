"""Benchmark: `tabletdb cdc export` rows/s, beside Spark writing the same rows as plain Parquet.

One fresh node; `--rows` inserts into a CDC table (tablets, `--tablets` of them); then one
export pass (``spark.cdc_export.run_pass``) of the whole log is timed, and, as the same-run
baseline, the same rows (read back from the export, cached in Spark) written again with a plain
`df.write.parquet`. The ratio of the two rates is the figure to track: it cancels how fast this
machine runs Spark, leaving what reading the log stream by stream costs. Server CPU per exported
row is reported too. Run on a quiet machine: on a shared box the figures are noise.

Reproduce: `.venv/bin/python -m bench.bench_cdc_export [--rows N] [--master local[2]]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, proc_cpu_seconds, tabletdb_server

KEYSPACE = (
    "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
)


def _fill(host: str, port: int, rows: int, tablets: int) -> None:
    from cassandra.cluster import Cluster
    from cassandra.concurrent import execute_concurrent_with_args

    cluster = Cluster([host], port=port, protocol_version=4)
    try:
        session = cluster.connect()
        session.execute(f"{KEYSPACE} AND tablets = {{'initial': {tablets}}}")
        session.execute(
            "CREATE TABLE bench.t (k int PRIMARY KEY, v text, n bigint) WITH cdc = {'enabled': true}"
        )
        insert = session.prepare("INSERT INTO bench.t (k, v, n) VALUES (?, ?, ?)")
        execute_concurrent_with_args(
            session, insert, [(k, f"value-{k}", k * 7) for k in range(rows)], concurrency=64
        )
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--tablets", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--tasks", type=int, default=4)
    args = parser.parse_args()

    from tabletdb.spark.cdc_export import ExportOptions, run_pass
    from tabletdb.spark.cdc_plan import SAFETY_US
    from tabletdb.spark.connection import ConnectOptions
    from tabletdb.spark.session import spark_session

    figures: dict[str, Any] = {"benchmark": "cdc_export", "rows": args.rows, "master": args.master}
    spark = spark_session(args.master)
    try:
        with tabletdb_server() as server, tempfile.TemporaryDirectory(prefix="bench-cdc-export-") as tmp:
            _fill(server.host, server.port, args.rows, args.tablets)
            connect = ConnectOptions((server.host,), server.port)
            warm = ExportOptions(connect, "bench", "t", Path(tmp) / "warm", tasks=args.tasks)
            run_pass(spark, warm, now=time.time_ns() // 1000 + SAFETY_US + 1_000_000)  # JIT, workers
            opts = ExportOptions(connect, "bench", "t", Path(tmp) / "export", tasks=args.tasks)
            cpu0, started = proc_cpu_seconds(server.pid), time.monotonic()
            done = run_pass(spark, opts, now=time.time_ns() // 1000 + SAFETY_US + 1_000_000)
            export_s, cpu = time.monotonic() - started, proc_cpu_seconds(server.pid) - cpu0
            assert done is not None
            df = spark.read.parquet(str(done.path)).cache()
            df.count()
            df.write.parquet(f"{tmp}/warm-plain")
            started = time.monotonic()
            df.write.parquet(f"{tmp}/plain")
            plain_s = time.monotonic() - started
        figures["export"] = {"rows": done.rows, "seconds": export_s, "rows_per_s": done.rows / export_s}
        figures["export"]["server_cpu_us_per_row"] = cpu * 1e6 / max(done.rows, 1)
        figures["plain_parquet"] = {"rows": done.rows, "seconds": plain_s, "rows_per_s": done.rows / plain_s}
        figures["export_to_plain_ratio"] = (
            figures["export"]["rows_per_s"] / figures["plain_parquet"]["rows_per_s"]
        )
    finally:
        spark.stop()
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
