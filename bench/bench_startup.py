"""Benchmark: start-up of one node and of `tabletdb cluster up --nodes 3` (issues #2 and #6).

Figures: one node from process spawn to an answered OPTIONS ("ready", what the test harness
waits for) and to the answer of its first query (`SELECT key FROM system.local` after STARTUP:
what a driver needs), with the node's CPU seconds at that point; the floor server's start to
OPTIONS in the same run; and `cluster up --nodes 3` from spawn until it reports every node
serving CQL, with the CPU of the whole process tree, forking the nodes (default) and with
`--spawn` (a fresh process per node). The variants alternate, medians are reported, and the
load average is recorded because on a shared machine wall time follows it.

Reproduce: `.venv/bin/python -m bench.bench_startup [--runs 5]`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import RESULT_PREFIX, proc_cpu_seconds
from tests.harness.addresses import port_is_free
from tests.harness.probe import wait_cql_ready

REPO = Path(__file__).resolve().parent.parent
# Addresses of this benchmark alone: other benchmarks use BENCH_SUBNET and 127.0.97.
HOST = "127.0.95.3"
CLUSTER_PREFIX = "127.0.94"
_HEADER = struct.Struct(">BBhBi")
_OP_STARTUP, _OP_READY, _OP_QUERY, _OP_RESULT = 0x01, 0x02, 0x07, 0x08


def _frame(opcode: int, body: bytes, stream: int) -> bytes:
    return _HEADER.pack(4, 0, stream, opcode, len(body)) + body


def _read_frame(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while len(data) < _HEADER.size:
        data += sock.recv(_HEADER.size - len(data)) or _closed()
    _, _, _, opcode, length = _HEADER.unpack(data)
    body = b""
    while len(body) < length:
        body += sock.recv(length - len(body)) or _closed()
    return opcode, body


def _closed() -> bytes:
    raise ConnectionError("the server closed the connection")


def _first_query(host: str) -> None:
    """STARTUP, then one QUERY at consistency ONE; raises unless both succeed."""
    option = b"CQL_VERSION"
    version = b"3.0.0"
    startup = struct.pack(">HH", 1, len(option)) + option + struct.pack(">H", len(version)) + version
    query = b"SELECT key FROM system.local"
    with socket.create_connection((host, 9042), timeout=60) as sock:
        sock.sendall(_frame(_OP_STARTUP, startup, 1))
        opcode, body = _read_frame(sock)
        if opcode != _OP_READY:
            raise RuntimeError(f"STARTUP answered with opcode {opcode}: {body[:200]!r}")
        sock.sendall(_frame(_OP_QUERY, struct.pack(">i", len(query)) + query + struct.pack(">HB", 1, 0), 2))
        opcode, body = _read_frame(sock)
        if opcode != _OP_RESULT:
            raise RuntimeError(f"QUERY answered with opcode {opcode}: {body[:200]!r}")


def _stop(proc: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _one_start(argv: list[str], log: Path, query: bool) -> dict[str, float]:
    if not port_is_free(HOST, 9042):
        raise RuntimeError(f"{HOST}:9042 is taken (a server left over from an earlier run?)")
    started = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        wait_cql_ready(HOST, 9042, timeout=120, interval=0.005, alive=lambda: proc.poll() is None)
        figures = {"ready_s": time.perf_counter() - started}
        if query:
            _first_query(HOST)
            figures["first_query_s"] = time.perf_counter() - started
        figures["cpu_s"] = proc_cpu_seconds(proc.pid)
        return figures
    finally:
        _stop(proc)


def _tree_cpu(pid: int) -> float:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return proc_cpu_seconds(pid) + sum(proc_cpu_seconds(int(child)) for child in children)


def _cluster_up(workdir: Path, spawn: bool) -> dict[str, float]:
    argv = [sys.executable, "-m", "tabletdb.cli.main", "cluster", "up", "--nodes", "3"]
    argv += ["--workdir", str(workdir), "--address-prefix", CLUSTER_PREFIX] + (["--spawn"] if spawn else [])
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if re.search(r"serving CQL after", line):
                return {"up_s": time.perf_counter() - started, "cpu_s": _tree_cpu(proc.pid)}
        raise RuntimeError(f"cluster up exited with {proc.wait()} before serving CQL; logs in {workdir}")
    finally:
        _stop(proc)


def _medians(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(s[key] for s in samples), 3) for key in samples[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-cluster", action="store_true", help="only the single-node figures")
    args = parser.parse_args()
    node: list[dict[str, float]] = []
    floor: list[dict[str, float]] = []
    fork: list[dict[str, float]] = []
    spawn: list[dict[str, float]] = []
    loads = []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmpdir:
        tmp = Path(tmpdir)
        for run in range(args.runs):
            loads.append(os.getloadavg()[0])
            floor_argv = [sys.executable, "-m", "bench.floor_server", "--host", HOST, "--port", "9042"]
            floor.append(_one_start(floor_argv, tmp / "floor.log", query=False))
            node_argv = [sys.executable, "-m", "tabletdb.cli.main", "server"]
            node_argv += ["--workdir", str(tmp / f"node{run}"), "--listen-address", HOST]
            node.append(_one_start(node_argv, tmp / f"node{run}.log", query=True))
            if not args.no_cluster:
                fork.append(_cluster_up(tmp / f"fork{run}", spawn=False))
                spawn.append(_cluster_up(tmp / f"spawn{run}", spawn=True))
    figures: dict[str, object] = {
        "benchmark": "startup",
        "runs": args.runs,
        "load_average_1m": [round(load, 1) for load in loads],
        "floor": _medians(floor),
        "node": _medians(node),
    }
    if fork:
        figures["cluster_up_3_fork"] = _medians(fork)
        figures["cluster_up_3_spawn"] = _medians(spawn)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
