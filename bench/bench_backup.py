"""Benchmark: `tabletdb backup`/`restore` seconds beside Spark writing/reading the same rows as Parquet.

Rows are generated once and cached in Spark; writing them as Parquet (after a warm-up write) is
the backup's baseline, and reading that Parquet back in full (into Spark's `noop` sink) the
restore's. The same Parquet fills a node through `tabletdb load --via files`
(`spark.file_load`); the node is backed up (snapshot + per-tablet file copies as Spark tasks) and
the backup restored into a second, empty node (per-file uploads as Spark tasks, then the
per-tablet count verification). All in one run and one SparkSession, so the ratios (baseline
seconds / ours: 1.0 = as fast as Parquet, the goal is >= 0.5; `*_times_parquet_*` is the same
as a multiple, the goal <= 2) cancel out the machine's speed.
The seconds each backup and restore step took go to stderr (where the time goes). Server CPU
per row is the node's CPU during backup or restore; client CPU per row that of the driver, Spark's
JVM and its Python workers (on a 2-core box the two compete for the same cores). Figures taken
while other work runs on the machine measure that work too: run it on a quiet box.
Reproduce: `.venv/bin/python -m bench.bench_backup [--rows N] [--payload BYTES] [--profile DIR]
[--host-octet N]`.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _client_cpu_seconds(servers: set[int]) -> float:
    """CPU of this process and every descendant but the servers' trees (Spark's JVM and its Python
    workers): user + system, with the children each has waited for (exited task processes)."""
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # exited meanwhile
            continue
        stats[int(stat.parent.name)] = text[text.rindex(")") + 2 :].split()
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        fields = stats.get(pid)
        if fields is None or pid in servers:
            continue
        total += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        todo.extend(children.get(pid, ()))
    return total / os.sysconf("SC_CLK_TCK")


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class StepTimer:
    """A backup/restore reporter that logs how long each step took (to stderr)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.name = ""
        self.started = time.monotonic()

    def step(self, description: str, total: int | None, unit: str = "items") -> None:
        self.done()
        self.name, self.started = description, time.monotonic()

    def advance(self, amount: int) -> None:
        pass

    def done(self) -> None:
        if self.name:
            _log(f"{self.what} step {time.monotonic() - self.started:6.2f}s  {self.name}")
        self.name = ""


def _fill(spark: Any, host: str, port: int, parquet: Path) -> None:
    """The Parquet into bench.rows through per-tablet files (fast, and the rows are the same)."""
    from tabletdb.spark.connection import parse_options
    from tabletdb.spark.file_load import FileTarget, run_file_load

    options = parse_options({"hosts": host, "port": str(port), "table": "bench.rows"})
    summary = run_file_load(
        spark, options, FileTarget(API_PORT), str(parquet), "parquet", str(parquet) + ".rejects"
    )
    if summary.rejected:
        raise SystemExit(f"the fill rejected {summary.rejected} rows")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--payload", type=int, default=512, help="Bytes of text per row.")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument(
        "--host-octet",
        type=int,
        default=2,
        help="Last octet of the source node's 127.0.99.x address (the target takes the next one): "
        "another benchmark running at the same time must use other addresses.",
    )
    parser.add_argument(
        "--profile", metavar="DIR", help="Run both nodes under cProfile (bench.profiled), profiles in DIR."
    )
    args = parser.parse_args()
    profiles = Path(args.profile).resolve() if args.profile else None
    if profiles is not None:
        profiles.mkdir(parents=True, exist_ok=True)

    from tabletdb.spark.backup import ClusterOptions, run_backup
    from tabletdb.spark.restore import run_restore
    from tabletdb.spark.session import spark_session

    spark = spark_session(args.master)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-backup-") as tmp_name:
            tmp = Path(tmp_name)
            rows_df = _rows(spark, args.rows, args.payload, args.partitions).cache()
            rows = rows_df.count()
            rows_df.write.parquet(str(tmp / "warm-up.parquet"))
            started = time.monotonic()
            rows_df.write.parquet(str(tmp / "rows.parquet"))
            parquet_write_s = time.monotonic() - started
            parquet_bytes = _dir_bytes(tmp / "rows.parquet")
            spark.read.parquet(str(tmp / "warm-up.parquet")).write.format("noop").mode("overwrite").save()
            started = time.monotonic()
            spark.read.parquet(str(tmp / "rows.parquet")).write.format("noop").mode("overwrite").save()
            parquet_read_s = time.monotonic() - started
            rows_df.unpersist()
            _log(f"parquet write {parquet_write_s:.2f}s read {parquet_read_s:.2f}s")

            source_profile = str(profiles / "source.prof") if profiles else None
            target_profile = str(profiles / "target.prof") if profiles else None
            with (
                tabletdb_server(host_octet=args.host_octet, profile=source_profile) as source,
                tabletdb_server(host_octet=args.host_octet + 1, profile=target_profile) as target,
            ):
                _create(source.host)
                _fill(spark, source.host, source.port, tmp / "rows.parquet")
                _log(f"filled {rows} rows")

                servers = {source.pid, target.pid}
                src = ClusterOptions(hosts=(source.host,), api_port=API_PORT)
                cpu, client = proc_cpu_seconds(source.pid), _client_cpu_seconds(servers)
                timer = StepTimer("backup")
                started = time.monotonic()
                backup = run_backup(spark, src, tmp / "backup", (), timer)
                backup_s = time.monotonic() - started
                timer.done()
                backup_cpu = proc_cpu_seconds(source.pid) - cpu
                backup_client = _client_cpu_seconds(servers) - client
                _log(f"backup {backup_s:.2f}s")

                dst = ClusterOptions(hosts=(target.host,), api_port=API_PORT)
                cpu, client = proc_cpu_seconds(target.pid), _client_cpu_seconds(servers)
                timer = StepTimer("restore")
                started = time.monotonic()
                restore = run_restore(spark, dst, tmp / "backup", timer)
                restore_s = time.monotonic() - started
                timer.done()
                restore_cpu = proc_cpu_seconds(target.pid) - cpu
                restore_client = _client_cpu_seconds(servers) - client
                _log(f"restore {restore_s:.2f}s")
    finally:
        spark.stop()
    mb = backup.bytes / 1e6
    figures = {
        "benchmark": "backup",
        "workload": (
            f"{rows} rows of ~{args.payload} B, 1 node smp 1, {backup.files} tablet files, "
            f"Spark {args.master}"
        ),
        "backup_s": backup_s,
        "parquet_write_s": parquet_write_s,
        "restore_s": restore_s,
        "parquet_read_s": parquet_read_s,
        "backup_ratio_to_parquet_write": parquet_write_s / backup_s,
        "restore_ratio_to_parquet_read": parquet_read_s / restore_s,
        "backup_times_parquet_write": backup_s / parquet_write_s,
        "restore_times_parquet_read": restore_s / parquet_read_s,
        "backup_rows_per_s": rows / backup_s,
        "restore_rows_per_s": rows / restore_s,
        "backup_mb_per_s": mb / backup_s,
        "restore_mb_per_s": mb / restore_s,
        "parquet_write_mb_per_s": parquet_bytes / 1e6 / parquet_write_s,
        "parquet_read_mb_per_s": parquet_bytes / 1e6 / parquet_read_s,
        "backup_server_cpu_us_per_row": backup_cpu / rows * 1e6,
        "restore_server_cpu_us_per_row": restore_cpu / rows * 1e6,
        "backup_client_cpu_us_per_row": backup_client / rows * 1e6,
        "restore_client_cpu_us_per_row": restore_client / rows * 1e6,
        "backup_mb": mb,
        "parquet_mb": parquet_bytes / 1e6,
        "whole_file_installs": restore.whole_file_installs,
        "errors": len(restore.mismatches) + (restore.rows != args.rows) + (backup.rows != args.rows),
    }
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


def _log(text: str) -> None:
    print(f"bench_backup: {text}", file=sys.stderr, flush=True)


def _create(host: str) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], protocol_version=4, connect_timeout=60)
    try:
        session = cluster.connect()
        replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        session.execute(f"CREATE KEYSPACE bench WITH replication = {replication}")
        session.execute("CREATE TABLE bench.rows (id bigint PRIMARY KEY, name text, score double, body text)")
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
