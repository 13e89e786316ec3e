"""Benchmark: a paged full-table scan and ``COUNT(*)`` on one node, beside raw SQLite on the same files.

Figures (issue 19 item 5), all in one run against one fresh node (`--smp 1`, default tablets):
- `scan`: ``SELECT * FROM bench.t`` through scylla-driver with `--page` rows per page, every page
  fetched; rows/s (wall clock) and the node's CPU µs per row (/proc/<pid>/stat around the scan).
  The driver decodes every row in this process, so rows/s is bounded by the client as well:
  CPU per row on the server is the figure to compare.
- `count`: ``SELECT COUNT(*) FROM bench.t``: seconds and server CPU.
- `sqlite scan` / `sqlite count`: the same tablet files read with raw sqlite3 in this process
  (one join of rows and cells per file, every value fetched into Python; one ``count(*)`` of
  the rows table per file): the storage engine's ceiling without liveness rules, CQL or the wire.
- `ratios`: tabletdb's scan and count against those baselines.

The table is ``(id bigint, c int, name text, score double, n int, PRIMARY KEY (id, c))`` with
`--per-partition` rows per partition (default 1), filled with unlogged batches of one partition.

Reproduce: `.venv/bin/python -m bench.bench_scan [--rows N | --small] [--page N] [--profile DIR]`.
`--small` is 200,000 rows instead of the default 1,000,000. Run it on a quiet machine: figures
taken while other processes share the cores are noise. `--profile DIR` runs the node under
cProfile (bench/profiled.py, which roughly doubles CPU per row) and prints the top entries of
the scan's and the count's profiles.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, ServerHandle, proc_cpu_seconds, tabletdb_server

HOST_OCTET = 41
CREATE = "CREATE TABLE bench.t (id bigint, c int, name text, score double, n int, PRIMARY KEY (id, c))"
INSERT = "INSERT INTO bench.t (id, c, name, score, n) VALUES (?, ?, ?, ?, ?)"


def _session(server: ServerHandle) -> tuple[Any, Any]:
    from cassandra.cluster import Cluster

    cluster = Cluster([server.host], port=server.port, protocol_version=4, connect_timeout=60)
    session = cluster.connect()
    session.default_timeout = 600
    return cluster, session


def _fill(session: Any, rows: int, per_partition: int) -> float:
    """Write the rows (one unlogged batch per partition, 64 in flight); seconds taken."""
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute(
        "CREATE KEYSPACE bench WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    session.execute(CREATE)
    per = max(1, per_partition)
    partitions = (rows + per - 1) // per
    body = " ".join(
        f"INSERT INTO bench.t (id, c, name, score, n) VALUES (?, {c}, ?, ?, ?);" for c in range(per)
    )
    batch = session.prepare(f"BEGIN UNLOGGED BATCH {body} APPLY BATCH")
    started = time.monotonic()
    args = []
    for p in range(partitions):
        values: list[Any] = []
        for c in range(per):
            values += [p, f"name-{p}-{c}", p / 7 + c, p * per + c]
        args.append(values)
    chunk = 20_000
    for start in range(0, len(args), chunk):
        execute_concurrent_with_args(session, batch, args[start : start + chunk], concurrency=64)
    return time.monotonic() - started


def _measured(server: ServerHandle, work: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, server CPU seconds) of ``work()``."""
    cpu0 = proc_cpu_seconds(server.pid)
    t0 = time.monotonic()
    result = work()
    return result, time.monotonic() - t0, proc_cpu_seconds(server.pid) - cpu0


def _scan(session: Any, page: int) -> int:
    from cassandra.query import SimpleStatement

    count = 0
    for _ in session.execute(SimpleStatement("SELECT * FROM bench.t", fetch_size=page)):
        count += 1
    return count


def _count(session: Any) -> int:
    return int(session.execute("SELECT COUNT(*) FROM bench.t").one()[0])


def _tablet_files(workdir: Path) -> list[Path]:
    return sorted(p for p in workdir.rglob("*.db") if "bench" in str(p) and p.name.startswith("tablet-"))


def _sqlite_scan(files: list[Path]) -> int:
    rows = 0
    for path in files:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            last = None
            for r in conn.execute(
                "SELECT r.pk, r.ck, c.col, c.value, c.ts FROM rows r JOIN cells c "
                "ON c.pk = r.pk AND c.kind = r.kind AND c.ck = r.ck ORDER BY r.pk, r.ck"
            ):
                key = (r[0], r[1])
                if key != last:
                    rows += 1
                    last = key
        finally:
            conn.close()
    return rows


def _sqlite_count(files: list[Path]) -> int:
    total = 0
    for path in files:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            total += conn.execute("SELECT count(*) FROM rows WHERE kind = 1").fetchone()[0]
        finally:
            conn.close()
    return total


def _profile_top(path: Path, limit: int = 25) -> None:
    if path.exists():
        print(f"--- {path.name}")
        pstats.Stats(str(path)).sort_stats("tottime").print_stats(limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", action="store_true", help="200,000 rows")
    parser.add_argument("--per-partition", type=int, default=1)
    parser.add_argument("--page", type=int, default=5000)
    parser.add_argument("--profile", type=Path, default=None)
    args = parser.parse_args()
    rows = 200_000 if args.small else args.rows
    profile = None
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        profile = str(args.profile / "node.prof")
    figures: dict[str, Any] = {
        "benchmark": "scan",
        "workload": f"{rows} rows, {args.per_partition} per partition, pages of {args.page}, 1 node smp 1",
        "rows": rows,
        "per_partition": args.per_partition,
        "page": args.page,
    }
    with tabletdb_server(host_octet=HOST_OCTET, profile=profile) as server:
        cmdline = Path(f"/proc/{server.pid}/cmdline").read_bytes().split(b"\0")
        workdir = Path(cmdline[cmdline.index(b"--workdir") + 1].decode())
        cluster, session = _session(server)
        try:
            figures["fill_s"] = round(_fill(session, rows, args.per_partition), 1)
            if profile is not None:
                os.kill(server.pid, signal.SIGUSR1)  # drop the fill from the profile
            seen, wall, cpu = _measured(server, lambda: _scan(session, args.page))
            figures["scan"] = {
                "rows_seen": seen,
                "rows_per_s": round(seen / wall),
                "server_cpu_us_per_row": round(cpu / max(1, seen) * 1e6, 2),
                "server_rows_per_cpu_s": round(seen / cpu) if cpu else None,
            }
            if profile is not None:
                os.kill(server.pid, signal.SIGUSR1)
            counted, wall, cpu = _measured(server, lambda: _count(session))
            figures["count"] = {"count": counted, "seconds": round(wall, 3), "server_cpu_s": round(cpu, 3)}
            if profile is not None:
                os.kill(server.pid, signal.SIGUSR1)
        finally:
            cluster.shutdown()
        files = _tablet_files(workdir)
        t0 = time.monotonic()
        raw_rows = _sqlite_scan(files)
        raw_scan_s = time.monotonic() - t0
        t0 = time.monotonic()
        raw_count = _sqlite_count(files)
        raw_count_s = time.monotonic() - t0
    figures["sqlite_scan"] = {"rows_seen": raw_rows, "rows_per_s": round(raw_rows / raw_scan_s)}
    figures["sqlite_count"] = {"count": raw_count, "seconds": round(raw_count_s, 3)}
    figures["ratios"] = {
        "scan_server_rows_per_cpu_s_vs_sqlite": round(
            figures["scan"]["server_rows_per_cpu_s"] / figures["sqlite_scan"]["rows_per_s"], 3
        )
        if figures["scan"]["server_rows_per_cpu_s"]
        else None,
        "count_seconds_vs_sqlite": round(figures["count"]["seconds"] / max(raw_count_s, 1e-6), 1),
    }
    print(RESULT_PREFIX + json.dumps(figures))
    if args.profile is not None:
        _profile_top(args.profile / "node.prof.2")
        _profile_top(args.profile / "node.prof.3")


if __name__ == "__main__":
    main()
