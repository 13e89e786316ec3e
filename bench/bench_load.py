"""Benchmark: `tabletdb load` of a CSV through files and through CQL, against Spark writing it as Parquet.

Three wall clocks over the same generated CSV in the same run, each a fresh process that starts
its own Spark (as a user's command does), so Spark's start-up is in every figure:

* `parquet`: plain Spark reads the CSV (header, every field a string, as the load reads it) and
  writes it as Parquet — the baseline (issue 19: the file load should reach >= 0.4 x its speed);
* `files`: `tabletdb load --via files` (per-tablet SQLite files merged on the replica);
* `cql`: `tabletdb load --via cql` (INSERTs through the driver).

Beside each load's rows/s: the node processes' CPU per row during it (`*_server_cpu_us_per_row`,
the server side: upload checks and merges, or the INSERTs), and the 1-minute load average at
the end (on this 2-core box a figure taken above ~2 measures the other processes).

Each load goes into its own empty table on one fresh node (`--nodes 3`: a fresh 3-node cluster
from `tabletdb cluster up`, keyspace RF=3, so every file goes to three replicas), and the rows
stored are counted afterwards (`errors` = rows missing). Run it on a quiet machine: on a loaded
one the figures measure the load of the others. Reproduce:
`.venv/bin/python -m bench.bench_load [--rows N] [--master local[2]] [--skip-cql] [--nodes 3]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import REPO_ROOT, RESULT_PREFIX, proc_cpu_seconds, tabletdb_server

COLUMNS = "id,seq,name,score,at,tags"
TABLE = "(id bigint, seq int, name text, score double, at timestamp, tags list<text>, PRIMARY KEY (id, seq))"
API_PORT = 20999  # bench.common.tabletdb_server's
CLUSTER_PREFIX = "127.0.97"
CLUSTER_API_PORT = 10000  # tabletdb cluster up's


@contextlib.contextmanager
def _cluster(nodes: int) -> Iterator[tuple[str, int, int, list[int]]]:
    """(host, CQL port, REST port) of one fresh node, or of the first of a fresh cluster, and the
    node processes' pids (their CPU is the server side of a load)."""
    if nodes == 1:
        with tabletdb_server() as server:
            yield server.host, server.port, API_PORT, [server.pid]
        return
    with tempfile.TemporaryDirectory(prefix="bench-load-cluster-") as work:
        argv = [sys.executable, "-m", "tabletdb.cli.main", "cluster", "up", "--nodes", str(nodes)]
        argv += ["--workdir", work, "--address-prefix", CLUSTER_PREFIX]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                if re.search(r"serving CQL after", line):
                    break
            else:
                raise SystemExit(f"cluster up exited with {proc.wait()} before serving CQL")
            yield f"{CLUSTER_PREFIX}.1", 9042, CLUSTER_API_PORT, _children(proc.pid)
        finally:
            proc.terminate()
            proc.wait(60)


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (`cluster up` runs each node as one)."""
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def write_csv(path: Path, rows: int) -> None:
    with open(path, "w") as out:
        out.write(COLUMNS + "\n")
        for n in range(rows):
            tags = f'"[""a"", ""{n % 10}""]"'
            out.write(f"{n // 4},{n % 4},name {n},{n / 7!r},2024-01-01T00:00:{n % 60:02d}Z,{tags}\n")


def parquet_baseline(source: str, target: str, master: str) -> None:
    """Run in a fresh process: Spark reads the CSV and writes Parquet."""
    from tabletdb.spark.session import spark_session

    spark = spark_session(master)
    try:
        spark.read.option("header", "true").csv(source).write.parquet(target)
    finally:
        spark.stop()


def _timed(command: list[str]) -> float:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])}... failed ({done.returncode}): {done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--skip-cql", action="store_true", help="Leave out the (slow) CQL load.")
    parser.add_argument("--nodes", type=int, default=1, choices=(1, 3), help="1 node, or 3 at RF=3.")
    parser.add_argument("--parquet-baseline", nargs=2, metavar=("CSV", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parquet_baseline:
        parquet_baseline(*args.parquet_baseline, args.master)
        return

    figures: dict[str, object] = {
        "benchmark": "load",
        "workload": f"{args.rows} CSV rows, {args.nodes} node(s) RF={args.nodes}, {args.master}",
    }
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        source = Path(tmp) / "rows.csv"
        write_csv(source, args.rows)
        figures["csv_mb"] = round(source.stat().st_size / 1e6, 1)
        baseline = [sys.executable, "-m", "bench.bench_load", "--master", args.master]
        parquet_s = _timed([*baseline, "--parquet-baseline", str(source), f"{tmp}/rows.parquet"])
        figures["parquet_rows_per_s"] = args.rows / parquet_s
        with _cluster(args.nodes) as (host, port, api_port, pids):
            from cassandra.cluster import Cluster

            cluster = Cluster([host], port=port, protocol_version=4)
            session = cluster.connect()
            replication = f"{{'class': 'NetworkTopologyStrategy', 'replication_factor': {args.nodes}}}"
            session.execute(f"CREATE KEYSPACE bench WITH replication = {replication}")
            load = [sys.executable, "-m", "tabletdb.cli.main", "load", "--hosts", host]
            load += ["--port", str(port), "--from", str(source), "--master", args.master]
            load += ["--api-port", str(api_port)]
            stored = 0
            ways = ["files"] if args.skip_cql else ["files", "cql"]
            for via in ways:
                session.execute(f"CREATE TABLE bench.{via} {TABLE}")
                level = ["--consistency", "ONE"] if via == "cql" else []  # files reach every replica
                cpu = sum(map(proc_cpu_seconds, pids))
                seconds = _timed([*load, "--table", f"bench.{via}", "--via", via, *level])
                cpu = sum(map(proc_cpu_seconds, pids)) - cpu
                figures[f"{via}_rows_per_s"] = args.rows / seconds
                figures[f"{via}_server_cpu_us_per_row"] = cpu / args.rows * 1e6
                figures[f"{via}_to_parquet"] = parquet_s / seconds
                count = session.execute(f"SELECT COUNT(*) FROM bench.{via}", timeout=600).one()[0]
                stored += int(count)
            cluster.shutdown()
    figures["ops_per_s"] = figures["files_rows_per_s"]
    figures["load_average_1m"] = os.getloadavg()[0]  # above ~2 on this box, the figures are noise
    figures["errors"] = args.rows * len(ways) - stored
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
