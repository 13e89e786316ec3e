"""Benchmark: the data path on one node — prepared INSERT and prepared SELECT by key.

Figures (data path issue 3), all in one run:
- `tabletdb insert` / `tabletdb select`: scylla-driver in separate processes, concurrency 64,
  against one fresh node (`--smp` shards, default tablets: the count algorithm's 10 per shard)
  holding `--populate` keys (SELECT reads only those, so every read finds its row; INSERT writes
  random keys of 100,000); ops/s, p50/p99, server CPU µs per op and RSS. The INSERT figure is
  also given with the CPU the node spends afterwards writing out the rows its tablet files had
  deferred (``server_cpu_us_per_op_incl_write_out``, the honest one: storage.node_commit).
- `floor`: the floor server answering the same SELECT with no database (bench/floor_server.py).
- `sqlite upsert` / `sqlite select`: the same rows through raw sqlite3 in this process (WAL,
  synchronous=FULL, one transaction per 64 upserts as group commit would give): the storage
  engine's ceiling without CQL, asyncio or the wire.
- `ratios`: tabletdb's capacity against those baselines.

Reproduce: `.venv/bin/python -m bench.bench_data_path [--duration S] [--concurrency N] [--smp N]`.
`--rounds N` runs the INSERT, SELECT and floor loads in turn N times on the same servers and adds
each round's µs/op and their medians: on a host whose own load drifts, alternating them is the
way to compare.
`--profile DIR` runs the node under cProfile (bench/profiled.py) and writes `DIR/insert.prof` and
`DIR/select.prof` (the event-loop thread during each load) and prints their top entries; the
profiler roughly doubles the CPU per op, so figures from such a run are not comparable.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import random
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    RESULT_PREFIX,
    LoadResult,
    LoadSpec,
    ServerHandle,
    floor_server,
    latency_summary_ms,
    proc_cpu_seconds,
    run_load,
    tabletdb_server,
)
from tabletdb.storage.node_commit import WRITE_OUT_S

KEYS = 100_000
INSERT = "INSERT INTO bench.kv (k, v) VALUES (?, ?)"
SELECT = "SELECT k, v FROM bench.kv WHERE k = ?"
FLOOR_SELECT = "SELECT k, v FROM floor.t WHERE k = ?"


def _create_schema(host: str, port: int, populate: int) -> None:
    """The table, with keys 0..populate-1 written so that the SELECT load finds rows."""
    from cassandra.cluster import Cluster
    from cassandra.concurrent import execute_concurrent_with_args

    cluster = Cluster([host], port=port, protocol_version=4)
    try:
        session = cluster.connect()
        session.execute(
            "CREATE KEYSPACE bench WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
        )
        session.execute("CREATE TABLE bench.kv (k int PRIMARY KEY, v text)")
        insert = session.prepare(INSERT)
        rows = [(k, f"{k:016x}") for k in range(populate)]
        execute_concurrent_with_args(session, insert, rows, concurrency=64, raise_on_first_error=True)
    finally:
        cluster.shutdown()


def _spec(
    host: str, port: int, statement: str, values: tuple[str, ...], args: argparse.Namespace, keys: int = KEYS
) -> LoadSpec:
    return LoadSpec(
        host,
        port,
        statement,
        values=values,
        concurrency=args.concurrency,
        processes=args.processes,
        warmup_s=args.warmup,
        duration_s=args.duration,
        key_space=keys,
    )


def sqlite_baseline(seconds: float, batch: int) -> dict[str, Any]:
    """Upserts in transactions of ``batch`` (synced), then point selects, for ``seconds`` each."""
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as tmp:
        conn = sqlite3.connect(Path(tmp) / "kv.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT, ts INTEGER)")
        upsert = (
            "INSERT INTO kv VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v, ts = excluded.ts"
        )
        latencies: list[int] = []
        ops = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter_ns()
            conn.execute("BEGIN")
            conn.executemany(
                upsert, [(rng.randrange(KEYS), f"{rng.getrandbits(64):016x}", ops) for _ in range(batch)]
            )
            conn.execute("COMMIT")
            latencies.append((time.perf_counter_ns() - started) // 1000)
            ops += batch
        upserts = {"ops_per_s": ops / seconds, "batch": batch, **latency_summary_ms(sorted(latencies))}
        ops = 0
        latencies = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            started = time.perf_counter_ns()
            conn.execute("SELECT k, v FROM kv WHERE k = ?", (rng.randrange(KEYS),)).fetchall()
            latencies.append((time.perf_counter_ns() - started) // 1000)
            ops += 1
        selects = {"ops_per_s": ops / seconds, **latency_summary_ms(sorted(latencies))}
        conn.close()
    return {"sqlite upsert": upserts, "sqlite select": selects}


def _commit_counters(host: str) -> dict[str, float]:
    """The node's commit counters from its /metrics (storage.node_commit.CommitCounters)."""
    from urllib.request import urlopen

    from prometheus_client.parser import text_string_to_metric_families

    with urlopen(f"http://{host}:20999/metrics", timeout=10) as response:
        text = response.read().decode()
    names = {
        "tabletdb_commitlog_records_total": "records",
        "tabletdb_commitlog_writes_total": "writes",
        "tabletdb_deferred_write_outs_total": "write_outs",
    }
    return {
        names[s.name]: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name in names
    }


def _add_write_out(insert: LoadResult, server_pid: int) -> None:
    """Charge the INSERT load with the store writes it left deferred: the node writes them out
    within ``WRITE_OUT_S`` of going quiet, so the server's CPU over that idle time is added
    (``server_cpu_us_per_op_incl_write_out``; an upper bound: the window also wrote some of the
    warm-up's rows, and the idle node's own ticks count too). The SELECT load then starts clean."""
    before = proc_cpu_seconds(server_pid)
    time.sleep(WRITE_OUT_S + 1.5)
    drained = proc_cpu_seconds(server_pid) - before
    insert.extra["write_out_cpu_s"] = round(drained, 3)
    if insert.server_cpu_s is not None and insert.ops:
        per_op = (insert.server_cpu_s + drained) / insert.ops * 1e6
        insert.extra["server_cpu_us_per_op_incl_write_out"] = round(per_op, 1)
        insert.extra["capacity_incl_write_out"] = round(1e6 / per_op)


def _take_profile(server_pid: int, profile: str, target: Path) -> None:
    """Ask the profiled server to write what it gathered since the last request, then move it."""
    before = {p.name for p in Path(profile).parent.iterdir()}
    os.kill(server_pid, signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = [p for p in Path(profile).parent.iterdir() if p.name not in before]
        if new and new[0].stat().st_size > 0:
            time.sleep(0.5)  # the dump is written in one go; let it finish
            new[0].replace(target)
            return
        time.sleep(0.1)
    raise RuntimeError(f"the profiled server (pid {server_pid}) wrote no profile within 30 s")


def _print_profile(path: Path, top: int = 30) -> None:
    print(f"=== {path} (top {top} by own time)")
    pstats.Stats(str(path)).sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--smp", type=int, default=2)
    parser.add_argument(
        "--populate", type=int, default=10_000, help="keys written before the loads; SELECT reads these"
    )
    parser.add_argument(
        "--host-octet", type=int, default=2, help="serve on 127.0.99.N (runs side by side need their own N)"
    )
    parser.add_argument(
        "--commitlog-sync",
        choices=("periodic", "batch"),
        default="periodic",
        help="the node's commitlog_sync (periodic, as in Cassandra, is the default)",
    )
    parser.add_argument("--profile", type=Path, help="directory for cProfile output of the node")
    parser.add_argument("--only-tabletdb", action="store_true", help="skip the floor and sqlite runs")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="INSERT, SELECT and floor loads in turn this many times on the same servers; prints "
        "each round's µs/op and their medians (the host's own load drifts between runs)",
    )
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "data_path", "concurrency": args.concurrency, "smp": args.smp}
    figures["load average before"] = os.getloadavg()
    profile = None
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        profile = str(args.profile.resolve() / "node.prof")
    options = [f"commitlog_sync={args.commitlog_sync}"]
    figures["commitlog_sync"] = args.commitlog_sync
    with contextlib.ExitStack() as servers:
        server = servers.enter_context(
            tabletdb_server(smp=args.smp, host_octet=args.host_octet, options=options, profile=profile)
        )
        floor = None
        if not args.only_tabletdb:  # up beside the node from the start; idle, it costs nothing
            floor = servers.enter_context(floor_server(("int_rand",), host_octet=args.host_octet + 100))
        _create_schema(server.host, server.port, args.populate)
        if profile:
            _take_profile(server.pid, profile, args.profile / "setup.prof")
        rounds = []
        for _ in range(args.rounds):
            insert = _insert_load(server, args)
            if profile:
                _take_profile(server.pid, profile, args.profile / "insert.prof")
            select_spec = _spec(server.host, server.port, SELECT, ("int_rand",), args, keys=args.populate)
            select = run_load(select_spec, server.pid).as_dict()
            if profile:
                _take_profile(server.pid, profile, args.profile / "select.prof")
            round_ = {"tabletdb insert": insert, "tabletdb select": select}
            if floor is not None:
                floor_spec = _spec(floor.host, floor.port, FLOOR_SELECT, ("int_rand",), args)
                round_["floor"] = run_load(floor_spec, floor.pid).as_dict()
            rounds.append(round_)
    figures.update(rounds[0])
    if len(rounds) > 1:
        figures["rounds"] = [_round_summary(r) for r in rounds]
        figures["median"] = {
            k: statistics.median(r[k] for r in figures["rounds"]) for k in figures["rounds"][0]
        }
    if args.profile is not None:
        _print_profile(args.profile / "insert.prof")
        _print_profile(args.profile / "select.prof")
    figures["load average after tabletdb"] = os.getloadavg()
    if args.only_tabletdb:
        print(RESULT_PREFIX + json.dumps(figures), flush=True)
        return
    figures.update(sqlite_baseline(args.duration, args.concurrency))
    figures["ratios"] = _ratios(figures)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


def _insert_load(server: ServerHandle, args: argparse.Namespace) -> dict[str, Any]:
    """The INSERT load, charged with its write-out, with the commit log's batching."""
    commits_before = _commit_counters(server.host)
    insert = run_load(_spec(server.host, server.port, INSERT, ("int_rand", "text16"), args), server.pid)
    _add_write_out(insert, server.pid)
    commits = {k: v - commits_before[k] for k, v in _commit_counters(server.host).items()}
    insert.extra["commit_log"] = commits
    if commits.get("records"):
        insert.extra["writes_per_record"] = round(commits["writes"] / commits["records"], 1)
    return insert.as_dict()


def _round_summary(round_: dict[str, Any]) -> dict[str, float]:
    """Server CPU µs per op of one round (INSERT with its write-out)."""
    insert = round_["tabletdb insert"]
    charged = insert["extra"].get("server_cpu_us_per_op_incl_write_out")
    out = {
        "insert": charged or insert["server_cpu_us_per_op"],
        "select": round_["tabletdb select"]["server_cpu_us_per_op"],
    }
    if "floor" in round_:
        out["floor"] = round_["floor"]["server_cpu_us_per_op"]
    return {k: round(v, 1) for k, v in out.items()}


def _ratios(figures: dict[str, Any]) -> dict[str, float]:
    """tabletdb's server capacity (ops per CPU-second; INSERT with its write-out) against raw
    SQLite's rate in this process, and against the floor server's capacity."""
    insert, select = figures["tabletdb insert"], figures["tabletdb select"]
    insert_capacity = insert["extra"].get("capacity_incl_write_out") or insert["capacity_ops_per_cpu_s"]
    return {
        "insert capacity / sqlite upserts": round(insert_capacity / figures["sqlite upsert"]["ops_per_s"], 3),
        "select capacity / sqlite selects": round(
            select["capacity_ops_per_cpu_s"] / figures["sqlite select"]["ops_per_s"], 3
        ),
        "select capacity / floor capacity": round(
            select["capacity_ops_per_cpu_s"] / figures["floor"]["capacity_ops_per_cpu_s"], 3
        ),
    }


if __name__ == "__main__":
    main()
