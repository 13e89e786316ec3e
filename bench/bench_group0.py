"""Benchmark: group0 schema changes on a 3-node cluster, and how long `cluster up` takes.

Figures (group0 issue): CREATE TABLE rate with one client and with 8 clients (goal 100 DDL/s),
flatness = mean CREATE TABLE latency with 5,000 existing tables / with 10 (goal <= 1.25), and
the seconds `tabletdb cluster up --nodes 3` needs until every node serves CQL. Each figure carries
the CPU the three node processes spent per DDL. The 8-client rate is measured twice: with the
driver's default wait for schema agreement after each DDL (what applications see) and without it
(what the cluster can commit; the agreement check sleeps 200 ms whenever a peer lags). Figures
with the wait carry how many of the drivers' agreement checks (after each answer and each
SCHEMA_CHANGE event, on every session's control connection) saw a difference. The large-schema
figure uses fresh sessions, as the small one did: after the fill, each driver still has one
check queued per event it received. The 1-client figures run with that client's session alone
(`--idle-sessions 7` adds the other sessions, as before 2026-11-26: every connected driver checks
agreement after every event, so each one adds two system-table reads per DDL to the cluster's
work and its own CPU to the benchmark process).

Reproduce: `.venv/bin/python -m bench.bench_group0 [--tables 5000] [--samples 100]`. Nodes run on
127.0.97.1-3 (outside the test harness's address blocks); logs stay in a temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, latency_summary_ms, proc_cpu_seconds

REPO = Path(__file__).resolve().parent.parent
PREFIX = "127.0.97"
NODES = [f"{PREFIX}.{i}" for i in (1, 2, 3)]
_names = itertools.count()


def _start_cluster(workdir: Path) -> tuple[subprocess.Popen[str], float]:
    argv = [sys.executable, "-m", "tabletdb.cli.main", "cluster", "up", "--nodes", "3"]
    argv += ["--workdir", str(workdir), "--address-prefix", PREFIX]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"serving CQL after ([0-9.]+)s", line)
        if found:
            return proc, float(found.group(1))
    raise RuntimeError(f"cluster up exited with {proc.wait()} before serving CQL; logs in {workdir}")


def _node_pids(cluster_up: subprocess.Popen[str]) -> list[int]:
    children = Path(f"/proc/{cluster_up.pid}/task/{cluster_up.pid}/children").read_text().split()
    return [int(pid) for pid in children]


class _Cpu:
    """CPU seconds the node processes spent since the last reading."""

    def __init__(self, pids: list[int]) -> None:
        self._pids = pids
        self._last = self._total()

    def _total(self) -> float:
        return sum(proc_cpu_seconds(pid) for pid in self._pids)

    def settle(self, quiet_share: float = 0.05, window: float = 1.0, limit: float = 300.0) -> float:
        """Wait until the nodes together use under ``quiet_share`` of a core for ``window`` seconds
        (bounded by ``limit``): the fill's tail (nodes still applying and reporting its batched
        entries) must not land in the next measurement. Returns seconds waited."""
        started = time.monotonic()
        before = self._total()
        while time.monotonic() - started < limit:
            time.sleep(window)
            now = self._total()
            busy, before = now - before, now
            if busy < quiet_share * window:
                break
        self._last = self._total()
        return time.monotonic() - started

    def us_per_op(self, ops: int) -> float:
        now = self._total()
        spent, self._last = now - self._last, now
        return spent / max(ops, 1) * 1e6


class _Mismatches:
    """How many of the driver's schema-agreement checks saw a difference (each one costs the
    checking driver a 200 ms sleep under its agreement lock)."""

    def __init__(self) -> None:
        from cassandra.cluster import ControlConnection

        self._agreed: list[bool] = []  # list.append is atomic: the drivers' threads share it
        original = ControlConnection._get_schema_mismatches

        def counting(cc: Any, peers_result: Any, local_result: Any, local_address: Any) -> Any:
            found = original(cc, peers_result, local_result, local_address)
            self._agreed.append(found is None)
            return found

        ControlConnection._get_schema_mismatches = counting

    def take(self) -> dict[str, int]:
        """Checks and mismatches since the last call."""
        agreed, self._agreed = self._agreed, []
        return {"agreement_checks": len(agreed), "agreement_mismatches": agreed.count(False)}


def _session(host: str) -> Any:
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]), request_timeout=60)
    cluster = Cluster(
        [host],
        port=9042,
        protocol_version=4,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        schema_metadata_enabled=False,
        token_metadata_enabled=False,
    )
    return cluster.connect()


def _create_tables(session: Any, count: int) -> list[int]:
    """`count` sequential CREATE TABLEs; their latencies in microseconds."""
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        session.execute(f"CREATE TABLE bench.t{next(_names)} (k int PRIMARY KEY, v text)")
        latencies.append(int((time.perf_counter() - started) * 1e6))
    return latencies


def _parallel(sessions: list[Any], per_client: int) -> tuple[float, list[int]]:
    """Every session creates `per_client` tables at once; (DDL/s, all latencies)."""
    results: list[list[int]] = [[] for _ in sessions]

    def run(i: int) -> None:
        results[i] = _create_tables(sessions[i], per_client)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(sessions))]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    latencies = [x for r in results for x in r]
    return len(latencies) / elapsed, latencies


def _result(workload: str, ops: float | None, latencies: list[int], **extra: Any) -> None:
    record: dict[str, Any] = {"benchmark": "group0", "workload": workload, "errors": 0, **extra}
    if ops is not None:
        record["ops_per_s"] = ops
    if latencies:
        record.update(latency_summary_ms(sorted(latencies)))
        record["mean_ms"] = statistics.fmean(latencies) / 1000
    print(RESULT_PREFIX + json.dumps(record), flush=True)


@contextlib.contextmanager
def _cluster(workdir: Path) -> Iterator[tuple[float, _Cpu]]:
    """A running 3-node cluster; yields the seconds `cluster up` took to serve CQL and a CPU meter."""
    proc, seconds = _start_cluster(workdir)
    try:
        yield seconds, _Cpu(_node_pids(proc))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=5000, help="existing tables for the flatness figure")
    parser.add_argument("--samples", type=int, default=100, help="CREATE TABLEs per measurement")
    parser.add_argument(
        "--vnodes",
        action="store_true",
        help="keyspace without tablets: group0's own cost, without tablet planning per CREATE TABLE",
    )
    parser.add_argument(
        "--idle-sessions",
        type=int,
        default=0,
        help="other driver sessions connected during the 1-client figures (each checks agreement per event)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-group0-") as tmp, _cluster(Path(tmp)) as (up_seconds, cpu):
        _result("cluster up --nodes 3 to CQL", None, [], seconds=up_seconds)
        mismatches = _Mismatches()
        one, idle = _session(NODES[0]), [_session(NODES[(i + 1) % 3]) for i in range(args.idle_sessions)]
        one.execute(
            "CREATE KEYSPACE bench WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
            + (" AND tablets = {'enabled': false}" if args.vnodes else "")
        )
        _create_tables(one, 10)
        cpu.us_per_op(1)
        mismatches.take()
        small = _create_tables(one, args.samples)
        us = cpu.us_per_op(len(small))
        label = f"CREATE TABLE, 1 client (+{len(idle)} idle), ~10 tables"
        _result(label, 1e6 * len(small) / sum(small), small, cpu_us_per_op=us, **mismatches.take())
        sessions = [one, *idle, *(_session(NODES[i % 3]) for i in range(1 + len(idle), 8))]
        rate, latencies = _parallel(sessions, max(1, args.samples // 8))
        us = cpu.us_per_op(len(latencies))
        _result(
            "CREATE TABLE, 8 clients over 3 nodes", rate, latencies, cpu_us_per_op=us, **mismatches.take()
        )
        for session in sessions:
            session.cluster.max_schema_agreement_wait = 0
        rate, latencies = _parallel(sessions, max(1, args.samples // 8))
        us = cpu.us_per_op(len(latencies))
        _result("CREATE TABLE, 8 clients, no agreement wait", rate, latencies, cpu_us_per_op=us)
        for session in sessions:
            session.cluster.max_schema_agreement_wait = 10
        existing = 10 + args.samples + 2 * len(latencies)
        fill = max(0, args.tables - existing)
        rate, _ = _parallel(sessions, fill // 8 + 1)
        print(f"filled to ~{args.tables} tables at {rate:.0f} DDL/s", flush=True)
        # Each driver still has one agreement check queued per event it saw (10 ms apart): fresh
        # sessions measure the large schema as the small one was measured, not that backlog.
        for session in sessions:
            session.cluster.shutdown()
        print(f"nodes quiet {cpu.settle():.1f} s after the fill", flush=True)
        one, idle = _session(NODES[0]), [_session(NODES[(i + 1) % 3]) for i in range(args.idle_sessions)]
        cpu.us_per_op(1)
        mismatches.take()
        large = _create_tables(one, args.samples)
        us = cpu.us_per_op(len(large))
        ratio = statistics.fmean(large) / statistics.fmean(small)
        label = f"CREATE TABLE, 1 client (+{len(idle)} idle), ~{args.tables} tables"
        _result(label, 1e6 * len(large) / sum(large), large, cpu_us_per_op=us, **mismatches.take())
        _result("flatness: mean latency large/small schema", None, [], ratio=ratio)
        for session in (one, *idle):
            session.cluster.shutdown()


if __name__ == "__main__":
    main()
