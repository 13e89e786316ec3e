"""Benchmark plumbing: server CPU/RSS from /proc, latency percentiles, and a driver load generator.

The figure that matters is **server CPU seconds per operation** (and its inverse, capacity: ops
per CPU-second). Throughput on this 2-core box is bounded by the Python driver (one driver
process tops out near 5,000 requests/s) and by client and server sharing cores, so ops/s is
reported but CPU/op is what is compared - always beside the floor server's (bench/floor_server.py).

The load generator runs scylla-driver in separate processes (the GIL of the benchmark script must
not be the bottleneck). Protocol with each worker, over its stdin/stdout:
  worker -> "READY" (connected, statement prepared)
  parent -> "GO <run_start> <measure_start> <measure_end>" (time.monotonic(), system-wide on Linux)
  worker -> "RESULT <json>" (ops and latencies of requests completed inside the measure window)
The parent samples the server's CPU exactly at measure_start and measure_end, so warm-up and
connection set-up never count.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tabletdb.storage.fsync import fsync_path

REPO_ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
RESULT_PREFIX = "RESULT "


# --- /proc ---------------------------------------------------------------------------------------


def cp_baseline(files: Sequence[Path], into: Path) -> tuple[int, float, float]:
    """(bytes, seconds of cp, seconds of cp + fsync) of copying ``files`` into ``into``: the
    same-run baseline for benchmarks that move files (a number prefix keeps equal names apart)."""
    into.mkdir(parents=True, exist_ok=True)
    size = sum(f.stat().st_size for f in files)
    started = time.monotonic()
    copies = []
    for i, f in enumerate(files):
        target = into / f"{i}-{f.name}"
        shutil.copyfile(f, target)
        copies.append(target)
    plain = time.monotonic() - started
    for target in copies:
        fsync_path(target)
    return size, plain, time.monotonic() - started


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds (fields 14 and 15 of /proc/<pid>/stat)."""
    return stat_cpu_seconds(Path(f"/proc/{pid}/stat").read_text())


def stat_cpu_seconds(stat: str) -> float:
    # The command name (field 2) is parenthesised and may contain spaces and ')': split after the
    # last ')'. What follows starts at field 3, so utime (14) and stime (15) are items 11 and 12.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / CLOCK_TICKS


def proc_rss_bytes(pid: int) -> int:
    """Resident set size from /proc/<pid>/status (VmRSS, reported in kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ValueError(f"/proc/{pid}/status has no VmRSS line (a zombie process?)")


# --- latency statistics --------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of already-sorted values; NaN for no values."""
    if not 0 <= p <= 100:
        raise ValueError(f"percentile {p} outside 0..100")
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def latency_summary_ms(latencies_us: Sequence[int]) -> dict[str, float]:
    ordered = sorted(latencies_us)
    return {
        "p50_ms": percentile(ordered, 50) / 1000,
        "p90_ms": percentile(ordered, 90) / 1000,
        "p99_ms": percentile(ordered, 99) / 1000,
        "max_ms": (ordered[-1] / 1000) if ordered else math.nan,
    }


# --- load specification and result ---------------------------------------------------------------

VALUE_KINDS = ("int_seq", "int_rand", "blob64", "text16")


@dataclass(frozen=True)
class LoadSpec:
    """What to run: one prepared statement, with generated bind values, at a concurrency."""

    host: str
    port: int
    statement: str
    values: tuple[str, ...] = ()  # one of VALUE_KINDS per bind marker
    concurrency: int = 32  # in-flight requests per worker process
    processes: int = 1
    warmup_s: float = 2.0
    duration_s: float = 5.0
    key_space: int = 100_000  # int_rand draws from 0..key_space-1
    protocol_version: int = 4
    token_aware: bool = False  # the driver's default TokenAwarePolicy instead of round-robin
    consistency: str | None = None  # a ConsistencyLevel name; None: the driver's default

    def __post_init__(self) -> None:
        unknown = [v for v in self.values if v not in VALUE_KINDS]
        if unknown:
            raise ValueError(f"unknown value kinds {unknown}; allowed: {', '.join(VALUE_KINDS)}")
        if self.concurrency < 1 or self.processes < 1:
            raise ValueError("concurrency and processes must be >= 1")


@dataclass
class LoadResult:
    ops: int
    errors: int
    seconds: float
    ops_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    server_cpu_s: float | None = None
    server_cpu_us_per_op: float | None = None
    capacity_ops_per_cpu_s: float | None = None
    server_rss_mb: float | None = None
    first_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the parent side ------------------------------------------------------------------------------


def _readline(proc: subprocess.Popen[str], expect: str) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(expect):
            return line[len(expect) :].strip()
    proc.wait()
    raise RuntimeError(
        f"load worker exited ({proc.returncode}) before {expect.strip()!r}; see its stderr above"
    )


def _sleep_until(deadline: float) -> None:
    while (remaining := deadline - time.monotonic()) > 0:
        time.sleep(remaining)


def run_load(spec: LoadSpec, server_pid: int | None = None, more_pids: Sequence[int] = ()) -> LoadResult:
    """Run the load in `spec.processes` worker processes; sample `server_pid`'s CPU over the window
    (plus `more_pids`', summed: the other nodes of a cluster)."""
    argv = [sys.executable, "-m", "bench.common", "worker", json.dumps(asdict(spec))]
    workers = [
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
        for _ in range(spec.processes)
    ]
    try:
        for worker in workers:
            _readline(worker, "READY")
        run_start = time.monotonic() + 0.1
        measure_start = run_start + spec.warmup_s
        measure_end = measure_start + spec.duration_s
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write(f"GO {run_start} {measure_start} {measure_end}\n")
            worker.stdin.flush()
        _sleep_until(measure_start)
        pids = [server_pid, *more_pids] if server_pid else []
        cpu_start = sum(proc_cpu_seconds(p) for p in pids) if pids else None
        _sleep_until(measure_end)
        cpu_end = sum(proc_cpu_seconds(p) for p in pids) if pids else None
        rss = proc_rss_bytes(server_pid) if server_pid else None
        reports = [json.loads(_readline(worker, RESULT_PREFIX)) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
    return _merge(reports, spec.duration_s, cpu_start, cpu_end, rss)


def _merge(
    reports: list[dict[str, Any]],
    seconds: float,
    cpu_start: float | None,
    cpu_end: float | None,
    rss: int | None,
) -> LoadResult:
    latencies = [lat for report in reports for lat in report["latencies_us"]]
    ops = len(latencies)
    errors = sum(report["errors"] for report in reports)
    first_error = next((r["first_error"] for r in reports if r["first_error"]), None)
    summary = latency_summary_ms(latencies)
    result = LoadResult(
        ops=ops,
        errors=errors,
        seconds=seconds,
        ops_per_s=ops / seconds,
        p50_ms=summary["p50_ms"],
        p90_ms=summary["p90_ms"],
        p99_ms=summary["p99_ms"],
        max_ms=summary["max_ms"],
        first_error=first_error,
    )
    if cpu_start is not None and cpu_end is not None:
        result.server_cpu_s = cpu_end - cpu_start
        if ops:
            result.server_cpu_us_per_op = result.server_cpu_s / ops * 1e6
        if ops and result.server_cpu_s > 0:
            result.capacity_ops_per_cpu_s = ops / result.server_cpu_s
    if rss is not None:
        result.server_rss_mb = rss / 2**20
    return result


# --- servers under test ---------------------------------------------------------------------------

VALUE_CQL_TYPES = {"int_seq": "int", "int_rand": "int", "blob64": "blob", "text16": "text"}
BENCH_SUBNET = 99  # 127.0.99.x: outside the test harness's per-worker blocks


@dataclass(frozen=True)
class ServerHandle:
    """A running server process a benchmark can load (host/port) and measure (pid)."""

    name: str
    host: str
    port: int
    pid: int


def _started(name: str, argv: list[str], host: str, port: int, log: Path) -> Iterator[ServerHandle]:
    from tests.harness.probe import ProbeError, wait_cql_ready
    from tests.harness.process import ManagedProcess

    process = ManagedProcess(argv, log, name=name, cwd=REPO_ROOT)
    process.start()
    try:
        try:
            wait_cql_ready(host, port, timeout=120, alive=lambda: process.running)
        except (TimeoutError, ProbeError) as exc:
            raise RuntimeError(f"{name} did not start: {exc}\n{process.log_tail()}") from None
        assert process.pid is not None
        yield ServerHandle(name, host, port, process.pid)
    finally:
        if process.running:
            process.stop()


@contextlib.contextmanager
def floor_server(values: Sequence[str] = (), host_octet: int = 1) -> Iterator[ServerHandle]:
    """The floor server, with bind markers typed to match the load's value kinds."""
    host = f"127.0.{BENCH_SUBNET}.{host_octet}"
    bind_types = ",".join(VALUE_CQL_TYPES[v] for v in values)
    argv = [sys.executable, "-m", "bench.floor_server", "--host", host, "--port", "9042"]
    argv += ["--bind-types", bind_types] if bind_types else []
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        yield from _started("floor", argv, host, 9042, Path(tmp) / "floor.log")


@contextlib.contextmanager
def tabletdb_server(
    smp: int = 1, host_octet: int = 2, options: Sequence[str] = (), profile: str | None = None
) -> Iterator[ServerHandle]:
    """One fresh tabletdb node (empty workdir) on its own loopback address; `options` are -o KEY=VALUE.

    With `profile` (a file path) the server runs under cProfile (bench/profiled.py) and writes
    its profile there when it stops.
    """
    host = f"127.0.{BENCH_SUBNET}.{host_octet}"
    with tempfile.TemporaryDirectory(prefix="bench-tabletdb-") as tmp:
        entry = ["bench.profiled", profile, "--"] if profile else ["tabletdb.cli.main"]
        argv = [sys.executable, "-m", *entry, "server", "--workdir", f"{tmp}/node"]
        argv += ["--listen-address", host, "--smp", str(smp), "--api-port", "20999"]
        for option in options:
            argv += ["-o", option]
        yield from _started("tabletdb", argv, host, 9042, Path(tmp) / "node.log")


# --- the worker side ------------------------------------------------------------------------------


class _ValueMaker:
    def __init__(self, kinds: Sequence[str], key_space: int, seed: int) -> None:
        self.kinds = list(kinds)
        self.key_space = key_space
        self.rng = random.Random(seed)
        self.counter = 0

    def next(self) -> list[Any]:
        self.counter += 1
        out: list[Any] = []
        for kind in self.kinds:
            if kind == "int_seq":
                out.append(self.counter % self.key_space)
            elif kind == "int_rand":
                out.append(self.rng.randrange(self.key_space))
            elif kind == "blob64":
                out.append(self.rng.randbytes(64))
            else:
                out.append(f"{self.rng.getrandbits(64):016x}")
        return out


class _Window:
    """`concurrency` chains of execute_async; each completion records and submits the next."""

    def __init__(
        self, session: Any, prepared: Any, values: _ValueMaker, measure: tuple[float, float]
    ) -> None:
        self.session = session
        self.prepared = prepared
        self.values = values
        self.measure_start, self.measure_end = measure
        self.lock = threading.Lock()
        self.active = 0
        self.done = threading.Event()
        self.latencies_us: list[int] = []
        self.errors = 0
        self.first_error: str | None = None

    def start(self, concurrency: int) -> None:
        with self.lock:
            self.active = concurrency
        for _ in range(concurrency):
            self._submit()

    def _submit(self) -> None:
        with self.lock:
            bound = self.values.next()
        started = time.monotonic()
        future = self.session.execute_async(self.prepared, bound)
        future.add_callbacks(self._on_done, self._on_error, callback_args=(started,), errback_args=(started,))

    def _finish(self, started: float, ok: bool, error: BaseException | None = None) -> None:
        now = time.monotonic()
        in_window = self.measure_start <= now <= self.measure_end
        with self.lock:
            if in_window and ok:
                self.latencies_us.append(int((now - started) * 1e6))
            elif in_window:
                self.errors += 1
                self.first_error = self.first_error or repr(error)
            if now >= self.measure_end:
                self.active -= 1
                if self.active == 0:
                    self.done.set()
                return
        self._submit()

    def _on_done(self, _rows: Any, started: float) -> None:
        self._finish(started, True)

    def _on_error(self, error: BaseException, started: float) -> None:
        self._finish(started, False, error)


def worker_main(spec: LoadSpec) -> None:
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, RoundRobinPolicy, TokenAwarePolicy

    policy = TokenAwarePolicy(DCAwareRoundRobinPolicy()) if spec.token_aware else RoundRobinPolicy()
    profile = ExecutionProfile(load_balancing_policy=policy, request_timeout=30)
    cluster = Cluster(
        [spec.host],
        port=spec.port,
        protocol_version=spec.protocol_version,
        compression=False,  # the same wire work for every server under test
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )
    session = cluster.connect()
    prepared = session.prepare(spec.statement)
    if spec.consistency is not None:
        from cassandra import ConsistencyLevel

        prepared.consistency_level = getattr(ConsistencyLevel, spec.consistency)
    print("READY", flush=True)
    _go, run_start, measure_start, measure_end = sys.stdin.readline().split()
    _sleep_until(float(run_start))
    values = _ValueMaker(spec.values, spec.key_space, seed=os.getpid())
    window = _Window(session, prepared, values, (float(measure_start), float(measure_end)))
    window.start(spec.concurrency)
    window.done.wait()
    report = {"latencies_us": window.latencies_us, "errors": window.errors, "first_error": window.first_error}
    print(RESULT_PREFIX + json.dumps(report), flush=True)
    cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description="load-generator worker (started by run_load)")
    parser.add_argument("mode", choices=["worker"])
    parser.add_argument("spec", help="LoadSpec as JSON")
    args = parser.parse_args()
    raw = json.loads(args.spec)
    raw["values"] = tuple(raw["values"])
    worker_main(LoadSpec(**raw))


if __name__ == "__main__":
    main()
