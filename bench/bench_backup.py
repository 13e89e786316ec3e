"""Benchmark: `tabletdb backup`/`restore` MB/s against plain Spark writing/reading the rows as Parquet.

One node is filled through the `tabletdb` data source; it is backed up (snapshot + per-tablet
file copies, as Spark tasks), and the backup is restored into a second, empty node (per-file
uploads as Spark tasks). In the same run and the same SparkSession, the table's rows (read once
through the data source and cached) are written as Parquet and read back in full. The ratios
(Parquet seconds / backup or restore seconds, same rows) cancel out the machine's speed; MB/s
are each side's own bytes (SQLite files vs Parquet), rows/s compare like with like. Server CPU
per row is the node's CPU during backup or restore.
Reproduce: `.venv/bin/python -m bench.bench_backup [--rows N] [--payload BYTES]`.
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

API_PORT = 20999  # bench.common.tabletdb_server's REST port
_HASH = "i -> sha2(cast(id * 1000 + i as string), 256)"


def _rows(spark: Any, count: int, payload: int, partitions: int) -> Any:
    from pyspark.sql import functions as F

    return spark.range(count, numPartitions=partitions).select(
        F.col("id"),
        F.concat(F.lit("name-"), F.col("id").cast("string")).alias("name"),
        (F.col("id") / 7).alias("score"),
        # distinct hashes per row: Parquet cannot shrink the payload to nothing by dictionary coding
        F.expr(f"concat_ws('', transform(sequence(1, {max(1, payload // 64)}), {_HASH}))").alias("body"),
    )


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--payload", type=int, default=1024, help="Bytes of text per row.")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()

    from tabletdb.spark.backup import ClusterOptions, QuietReporter, run_backup
    from tabletdb.spark.restore import run_restore
    from tabletdb.spark.session import spark_session

    spark = spark_session(args.master)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-backup-") as tmp_name:
            tmp = Path(tmp_name)
            with tabletdb_server(host_octet=2) as source, tabletdb_server(host_octet=3) as target:
                options = {"hosts": source.host, "port": str(source.port), "table": "bench.rows"}
                _create(source.host)
                _rows(spark, args.rows, args.payload, args.partitions).write.format("tabletdb").options(
                    **options
                ).mode("append").save()
                _log(f"filled {args.rows} rows")

                src = ClusterOptions(hosts=(source.host,), api_port=API_PORT)
                cpu = proc_cpu_seconds(source.pid)
                started = time.monotonic()
                backup = run_backup(spark, src, tmp / "backup", (), QuietReporter())
                backup_s = time.monotonic() - started
                backup_cpu = proc_cpu_seconds(source.pid) - cpu
                _log(f"backup {backup_s:.1f}s")

                dst = ClusterOptions(hosts=(target.host,), api_port=API_PORT)
                cpu = proc_cpu_seconds(target.pid)
                started = time.monotonic()
                restore = run_restore(spark, dst, tmp / "backup", QuietReporter())
                restore_s = time.monotonic() - started
                restore_cpu = proc_cpu_seconds(target.pid) - cpu
                _log(f"restore {restore_s:.1f}s")

                df = spark.read.format("tabletdb").options(**options).load().cache()
                rows = df.count()
            df.write.parquet(str(tmp / "warm-up.parquet"))
            started = time.monotonic()
            df.write.parquet(str(tmp / "rows.parquet"))
            parquet_write_s = time.monotonic() - started
            parquet_bytes = _dir_bytes(tmp / "rows.parquet")
            started = time.monotonic()
            spark.read.parquet(str(tmp / "rows.parquet")).write.format("noop").mode("overwrite").save()
            parquet_read_s = time.monotonic() - started
    finally:
        spark.stop()
    mb = backup.bytes / 1e6
    figures = {
        "benchmark": "backup",
        "workload": (
            f"{rows} rows of ~{args.payload} B, 1 node smp 1, {backup.files} tablet files, "
            f"Spark {args.master}"
        ),
        "backup_mb_per_s": mb / backup_s,
        "restore_mb_per_s": mb / restore_s,
        "backup_rows_per_s": rows / backup_s,
        "restore_rows_per_s": rows / restore_s,
        "parquet_write_mb_per_s": parquet_bytes / 1e6 / parquet_write_s,
        "parquet_read_mb_per_s": parquet_bytes / 1e6 / parquet_read_s,
        "backup_ratio_to_parquet_write": parquet_write_s / backup_s,
        "restore_ratio_to_parquet_read": parquet_read_s / restore_s,
        "backup_server_cpu_us_per_row": backup_cpu / rows * 1e6,
        "restore_server_cpu_us_per_row": restore_cpu / rows * 1e6,
        "backup_mb": mb,
        "parquet_mb": parquet_bytes / 1e6,
        "whole_file_installs": restore.whole_file_installs,
        "errors": len(restore.mismatches) + (rows != args.rows),
    }
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


def _log(text: str) -> None:
    print(f"bench_backup: {text}", file=sys.stderr, flush=True)


def _create(host: str) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], protocol_version=4)
    try:
        session = cluster.connect()
        replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        session.execute(f"CREATE KEYSPACE bench WITH replication = {replication}")
        session.execute("CREATE TABLE bench.rows (id bigint PRIMARY KEY, name text, score double, body text)")
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
