"""Benchmark: Raft commits per second on three real processes over loopback, fsync on; the disk's
raw fsync rate; and simulated operations per wall-clock second.

Figures (Raft issue): commits/s of three members on 127.0.98.1-3, each a `tests.harness.raft_member`
process (group0's Raft shell, `node.group0_shell.raft.RaftDriver`, with a state machine that keeps
the applied entries), with the leader's CPU per commit (utime+stime from /proc/<pid>/stat over the
measurement window). The shell handles each proposal and message on arrival (its own Ready and
fsync). The baseline from the same run is a loop of write+fsync of a small record in the same file
system: no such commit can beat it, since each needs at least one fsync on the leader and one on a
follower. The simulator's rate is `tabletdb sim raft` on one process (the CLI uses every CPU; seeds
are independent, so it scales with cores).

The load client is this process: `--concurrency` coroutines each keep one `raft.propose` RPC in
flight against the leader, with unique 64-byte payloads (the member matches replies by payload).

Reproduce: `.venv/bin/python -m bench.bench_raft [--duration S] [--concurrency N] [--sim-seeds K]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import (
    RESULT_PREFIX,
    latency_summary_ms,
    proc_cpu_seconds,
    proc_rss_bytes,
)
from tabletdb.net.rpc import RemoteError, RpcError, RpcNode
from tests.harness.addresses import port_is_free

REPO = Path(__file__).resolve().parent.parent
RAFT_SUBNET = "127.0.98"  # outside the test harness's per-worker blocks and bench's 127.0.99.x
RAFT_PORT = 7100
NODES = (1, 2, 3)
CLIENT_ID = 99
PAYLOAD_BYTES = 64


# --- the disk's floor ---------------------------------------------------------------------------


def fsync_baseline(
    directory: Path, seconds: float, when: str, record_bytes: int = PAYLOAD_BYTES
) -> dict[str, Any]:
    """Append a small record and fsync it, in a loop, for `seconds`: the disk's commit floor."""
    path = directory / "fsync-baseline.dat"
    record = b"x" * record_bytes
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        count = 0
        cpu_start, started = time.process_time(), time.perf_counter()
        deadline = started + seconds
        while (now := time.perf_counter()) < deadline:
            os.write(fd, record)
            os.fsync(fd)
            count += 1
        cpu = time.process_time() - cpu_start
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    elapsed = now - started
    return {
        "benchmark": "raft",
        "workload": f"fsync baseline ({when}): write+fsync {record_bytes} B",
        "ops": count,
        "seconds": round(elapsed, 3),
        "ops_per_s": count / elapsed,
        "mean_ms": elapsed / count * 1000 if count else None,
        "server_cpu_us_per_op": cpu / count * 1e6 if count else None,
        "errors": 0,
    }


# --- three Raft processes -----------------------------------------------------------------------


@dataclass
class RaftCluster:
    """Three fresh `raft_member` processes; `pids` maps node id to process id."""

    directory: Path
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def addresses(self) -> dict[int, tuple[str, int]]:
        return {n: (f"{RAFT_SUBNET}.{n}", RAFT_PORT) for n in NODES}

    @property
    def pids(self) -> dict[int, int]:
        return {n: p.pid for n, p in self.procs.items()}

    def start(self) -> None:
        for host, port in self.addresses.values():
            if not port_is_free(host, port):
                raise RuntimeError(f"{host}:{port} is taken (a raft member left over from an earlier run?)")
        peers = ",".join(f"{n}={h}:{p}" for n, (h, p) in self.addresses.items())
        for node in NODES:
            argv = [sys.executable, "-m", "tests.harness.raft_member", "--id", str(node)]
            argv += ["--dir", str(self.directory / f"n{node}"), "--peers", peers]
            log = open(self.directory / f"n{node}.log", "wb")  # noqa: SIM115 - the child owns it
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, cwd=REPO)
            log.close()
            self.procs[node] = proc
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if not line.startswith(b"ready"):
                tail = (self.directory / f"n{node}.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"raft member {node} did not start (exit {proc.poll()}):\n{tail}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def raft_cluster(parent: str | None) -> Iterator[RaftCluster]:
    with tempfile.TemporaryDirectory(prefix="bench-raft-", dir=parent) as tmp:
        cluster = RaftCluster(Path(tmp))
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()


# --- the load ----------------------------------------------------------------------------------


async def find_leader(client: RpcNode, timeout: float = 30.0) -> int:
    """Poll `raft.status` until some node says it leads (the first election takes a few ticks)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node in NODES:
            with contextlib.suppress(RpcError, OSError):
                status = await client.call(node, "raft.status", timeout=1.0)
                if status["role"] == "leader":
                    return node
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no Raft leader elected within {timeout}s")


@dataclass
class Window:
    """What the proposers saw inside the measurement window."""

    start: float
    end: float
    latencies_us: list[int] = field(default_factory=list)
    errors: int = 0
    first_error: str | None = None
    leader: int = 0


async def _proposer(client: RpcNode, window: Window, worker: int) -> None:
    seq = 0
    while (started := time.monotonic()) < window.end:
        seq += 1
        payload = f"w{worker}-{seq}".encode().ljust(PAYLOAD_BYTES, b".")
        try:
            await client.call(window.leader, "raft.propose", payload, timeout=10.0)
            ok, error = True, None
        except (RemoteError, RpcError, OSError) as exc:
            ok, error = False, exc
        now = time.monotonic()
        if window.start <= now <= window.end:
            if ok:
                window.latencies_us.append(int((now - started) * 1e6))
            else:
                window.errors += 1
                window.first_error = window.first_error or repr(error)
        if not ok:  # leadership moved (or the leader is gone): find it again
            window.leader = await find_leader(client)


async def _sample(client: RpcNode, cluster: RaftCluster, leader: int) -> dict[str, Any]:
    cpu = {n: proc_cpu_seconds(pid) for n, pid in cluster.pids.items()}
    status = await client.call(leader, "raft.status", timeout=10.0)
    return {"cpu": cpu, "client_cpu": time.process_time(), "status": status}


async def drive(
    cluster: RaftCluster, concurrency: int, warmup: float, duration: float, idle: float
) -> dict[str, Any]:
    """Measure the idle leader for `idle` seconds, then the load's window after `warmup`."""
    client = RpcNode(CLIENT_ID)
    for node, (host, port) in cluster.addresses.items():
        client.add_peer(node, host, port)
    try:
        leader = await find_leader(client)
        idle_start = proc_cpu_seconds(cluster.pids[leader])
        await asyncio.sleep(idle)
        idle_share = (proc_cpu_seconds(cluster.pids[leader]) - idle_start) / idle if idle > 0 else None
        measure_start = time.monotonic() + warmup
        window = Window(measure_start, measure_start + duration, leader=leader)
        workers = [asyncio.create_task(_proposer(client, window, w)) for w in range(concurrency)]
        await asyncio.sleep(max(0.0, measure_start - time.monotonic()))
        before = await _sample(client, cluster, leader)
        await asyncio.sleep(max(0.0, window.end - time.monotonic()))
        after = await _sample(client, cluster, leader)
        rss = proc_rss_bytes(cluster.pids[leader])
        await asyncio.gather(*workers)
    finally:
        await client.stop()
    figures = _figures(cluster, concurrency, duration, window, before, after, rss)
    figures["leader_idle_cpu_share"] = idle_share  # ticks and heartbeats alone, no proposals
    return figures


def _figures(
    cluster: RaftCluster,
    concurrency: int,
    duration: float,
    window: Window,
    before: dict[str, Any],
    after: dict[str, Any],
    rss: int,
) -> dict[str, Any]:
    leader = before["status"]["server_id"]
    s0, s1 = before["status"], after["status"]
    commits = s1["commit_index"] - s0["commit_index"]
    syncs = s1["syncs"] - s0["syncs"]
    persist = s1["persist_seconds"] - s0["persist_seconds"]
    cpu = {n: after["cpu"][n] - before["cpu"][n] for n in NODES}
    leader_cpu = cpu[leader]
    client_cpu = after["client_cpu"] - before["client_cpu"]
    return {
        "benchmark": "raft",
        "workload": f"3 procs, fsync, group0 shell, conc {concurrency}",
        "ops": commits,
        "seconds": duration,
        "ops_per_s": commits / duration,
        "acks_in_window": len(window.latencies_us),
        **latency_summary_ms(window.latencies_us),
        "server_cpu_s": leader_cpu,
        "server_cpu_us_per_op": leader_cpu / commits * 1e6 if commits else None,
        "capacity_ops_per_cpu_s": commits / leader_cpu if leader_cpu > 0 else None,
        "follower_cpu_us_per_op": {n: c / commits * 1e6 for n, c in cpu.items() if n != leader and commits},
        "client_cpu_us_per_op": client_cpu / commits * 1e6 if commits else None,
        "leader_fsyncs": syncs,
        "commits_per_leader_fsync": commits / syncs if syncs else None,
        "leader_persist_mean_ms": persist / syncs * 1000 if syncs else None,
        "leader_persist_share": persist / duration,
        "leader_changed": s1["term"] != s0["term"] or s1["role"] != "leader",
        "server_rss_mb": rss / 2**20,
        "errors": window.errors,
        "first_error": window.first_error,
        "concurrency": concurrency,
    }


# --- the simulator -----------------------------------------------------------------------------


def simulated_rate(seeds: int, ops: int) -> dict[str, Any]:
    """Seeds 0..seeds-1 in this one process: simulated client operations per wall-clock second."""
    from tabletdb.sim.runner import run_seed

    cpu_start, started = time.process_time(), time.perf_counter()
    total = failing = 0
    for seed in range(seeds):
        result = run_seed(seed, ops=ops)
        total += result.completed + result.indeterminate
        failing += not result.ok
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_start
    return {
        "benchmark": "raft",
        "workload": f"sim: {seeds} seeds x {ops} ops, 1 process",
        "ops": total,
        "seconds": round(wall, 3),
        "ops_per_s": total / wall,
        "seeds_per_s": seeds / wall,
        "server_cpu_us_per_op": cpu / total * 1e6 if total else None,
        "errors": failing,
    }


def _baseline(parent: str | None, seconds: float, when: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-fsync-", dir=parent) as tmp:
        return fsync_baseline(Path(tmp), seconds, when)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=10.0, help="measurement seconds")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--idle", type=float, default=3.0, help="seconds to measure the idle leader's CPU")
    parser.add_argument("--concurrency", type=int, default=64, help="proposals in flight")
    parser.add_argument("--fsync-seconds", type=float, default=5.0)
    parser.add_argument("--sim-seeds", type=int, default=20)
    parser.add_argument("--sim-ops", type=int, default=100)
    parser.add_argument("--dir", help="where the logs and the fsync file go (default: the temp dir)")
    args = parser.parse_args()
    # The disk is shared and its fsync rate drifts: measure the floor before and after the runs.
    print(RESULT_PREFIX + json.dumps(_baseline(args.dir, args.fsync_seconds, "before")), flush=True)
    with raft_cluster(args.dir) as cluster:
        figures = asyncio.run(drive(cluster, args.concurrency, args.warmup, args.duration, args.idle))
    print(RESULT_PREFIX + json.dumps(figures), flush=True)
    print(RESULT_PREFIX + json.dumps(_baseline(args.dir, args.fsync_seconds, "after")), flush=True)
    print(RESULT_PREFIX + json.dumps(simulated_rate(args.sim_seeds, args.sim_ops)), flush=True)


if __name__ == "__main__":
    main()
