"""Benchmark: node start-up, driver connect + metadata load, and memory, idle and with 1,000 tables.

Figures (Foundation issue): start to CQL-ready (goal < 1 s), scylla-driver connect + full
metadata load with 1,000 tables, resident memory idle and with 1,000 tables (goals 150 MB and
300 MB). Baselines measured in the same run: the floor server's start to ready (a minimal
asyncio server: the cost of Python + asyncio + a listening socket) and a driver connect to it.

Reproduce: `.venv/bin/python -m bench.bench_node_footprint [--tables 1000] [--starts 5]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import BENCH_SUBNET, RESULT_PREFIX, proc_cpu_seconds, proc_rss_bytes
from tests.harness.addresses import port_is_free
from tests.harness.probe import wait_cql_ready

REPO = Path(__file__).resolve().parent.parent


def _start(argv: list[str], host: str, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start a server and return it with the seconds until it answered OPTIONS."""
    if not port_is_free(host, 9042):
        raise RuntimeError(f"{host}:9042 is taken (a server left over from an earlier run?)")
    started = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        wait_cql_ready(host, 9042, timeout=60, interval=0.005, alive=lambda: proc.poll() is None)
    except BaseException:
        _stop(proc)
        raise
    return proc, time.perf_counter() - started


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tabletdb_argv(workdir: str, host: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tabletdb.cli.main",
        "server",
        "--workdir",
        workdir,
        "--listen-address",
        host,
    ]


def _floor_argv(host: str) -> list[str]:
    return [sys.executable, "-m", "bench.floor_server", "--host", host, "--port", "9042"]


def _median_start(argv_for: Callable[[str, str], list[str]], host: str, starts: int, tmp: Path) -> float:
    """Median start-to-ready over fresh workdirs."""
    times = []
    for i in range(starts):
        argv = argv_for(str(tmp / f"w{i}"), host)
        proc, seconds = _start(argv, host, tmp / f"start{i}.log")
        _stop(proc)
        times.append(seconds)
    return statistics.median(times)


def _connect_seconds(host: str) -> tuple[float, int]:
    """Seconds for Cluster.connect() (control connection + full schema load); tables seen."""
    from cassandra.cluster import Cluster

    started = time.perf_counter()
    cluster = Cluster([host], port=9042, protocol_version=4)
    cluster.connect()
    elapsed = time.perf_counter() - started
    tables = sum(len(ks.tables) for ks in cluster.metadata.keyspaces.values())
    cluster.shutdown()
    return elapsed, tables


def _create_tables(host: str, count: int) -> float:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=9042, protocol_version=4)
    session = cluster.connect()
    session.execute(
        "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
    )
    started = time.perf_counter()
    for i in range(count):
        session.execute(
            f"CREATE TABLE bench.t{i} (pk int, ck text, a bigint, b map<text, int>, c set<uuid>, "
            f"PRIMARY KEY (pk, ck)) WITH comment = 'table {i}'"
        )
    elapsed = time.perf_counter() - started
    cluster.shutdown()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    host = f"127.0.{BENCH_SUBNET}.3"
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as tmpdir:
        tmp = Path(tmpdir)
        floor_start = _median_start(lambda _w, h: _floor_argv(h), host, args.starts, tmp)
        node_start = _median_start(_tabletdb_argv, host, args.starts, tmp)

        floor, _ = _start(_floor_argv(host), host, tmp / "floor.log")
        try:
            floor_connect, _ = _connect_seconds(host)
        finally:
            _stop(floor)

        node, _ = _start(_tabletdb_argv(str(tmp / "node"), host), host, tmp / "node.log")
        try:
            empty_connect, _ = _connect_seconds(host)
            rss_idle = proc_rss_bytes(node.pid)
            ddl_seconds = _create_tables(host, args.tables)
            cpu_before = proc_cpu_seconds(node.pid)
            full_connect, seen = _connect_seconds(host)
            connect_cpu = proc_cpu_seconds(node.pid) - cpu_before
            if node.poll() is not None:
                raise RuntimeError(
                    f"the node exited ({node.returncode}):\n{(tmp / 'node.log').read_text()[-3000:]}"
                )
            rss_full = proc_rss_bytes(node.pid)
        finally:
            _stop(node)
        restarted, restart_seconds = _start(_tabletdb_argv(str(tmp / "node"), host), host, tmp / "node2.log")
        _stop(restarted)
    figures = {
        "benchmark": "node_footprint",
        "workload": f"start, connect, {args.tables} tables",
        "start_to_ready_s": round(node_start, 3),
        "floor_start_to_ready_s": round(floor_start, 3),
        "restart_with_tables_to_ready_s": round(restart_seconds, 3),
        "connect_empty_s": round(empty_connect, 3),
        "connect_floor_s": round(floor_connect, 3),
        "connect_with_tables_s": round(full_connect, 3),
        "connect_with_tables_server_cpu_s": round(connect_cpu, 3),
        "tables_seen_by_driver": seen,
        "create_table_per_s": round(args.tables / ddl_seconds, 1),
        "server_rss_idle_mb": round(rss_idle / 2**20, 1),
        "server_rss_with_tables_mb": round(rss_full / 2**20, 1),
    }
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
