"""Benchmark: lightweight transactions (Paxos) beside plain writes, one node and three (RF=3).

Figures, all in one run, scylla-driver in separate processes at `--concurrency`, random keys
(little contention: the cost of a round, not of retries):
- `1 node insert` / `1 node lwt`: prepared INSERT, then INSERT ... IF NOT EXISTS, on one node
  (RF=1: Paxos with a single acceptor — three fsynced acceptor-state writes and one data write).
- `3 nodes insert` / `3 nodes lwt`: the same against the first node of a 3-node cluster, RF=3
  (the coordinator is always a replica). CPU µs/op is summed over the three server processes.
- `3 nodes lwt one key`: every request on one partition (after the first, none applies: each is a
  full prepare round that reads and proposes nothing) — contention, backoff and retries.

Reproduce: `.venv/bin/python -m bench.bench_lwt [--duration S] [--concurrency N]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import (
    BENCH_SUBNET,
    RESULT_PREFIX,
    LoadSpec,
    ServerHandle,
    _started,
    proc_cpu_seconds,
    run_load,
)

INSERT = "INSERT INTO bench.kv (k, v) VALUES (?, ?)"
LWT = "INSERT INTO bench.kv (k, v) VALUES (?, ?) IF NOT EXISTS"
KEYS = 10_000_000


@contextlib.contextmanager
def cluster(size: int) -> Iterator[list[ServerHandle]]:
    """``size`` fresh nodes; the first founds the cluster, the others join it one at a time."""
    with tempfile.TemporaryDirectory(prefix="bench-lwt-") as tmp, contextlib.ExitStack() as stack:
        nodes: list[ServerHandle] = []
        for i in range(size):
            host = f"127.0.{BENCH_SUBNET}.{10 + i}"
            argv = [sys.executable, "-m", "tabletdb.cli.main", "server", "--workdir", f"{tmp}/n{i}"]
            argv += ["--listen-address", host, "--smp", "1", "--api-port", str(20990 + i)]
            if nodes:
                argv += ["--seeds", nodes[0].host]
            cm = contextlib.contextmanager(_started)(f"node{i}", argv, host, 9042, Path(tmp) / f"n{i}.log")
            nodes.append(stack.enter_context(cm))
        yield nodes


def _schema(node: ServerHandle, rf: int) -> None:
    from cassandra.cluster import Cluster

    c = Cluster([node.host], port=node.port, protocol_version=4)
    try:
        s = c.connect()
        s.execute(
            "CREATE KEYSPACE bench WITH replication = "
            f"{{'class': 'NetworkTopologyStrategy', 'replication_factor': {rf}}}"
        )
        s.execute("CREATE TABLE bench.kv (k int PRIMARY KEY, v text)")
    finally:
        c.shutdown()


def _load(
    nodes: list[ServerHandle], statement: str, args: argparse.Namespace, keys: int = KEYS
) -> dict[str, Any]:
    spec = LoadSpec(
        nodes[0].host,
        nodes[0].port,
        statement,
        values=("int_rand", "text16"),
        concurrency=args.concurrency,
        processes=args.processes,
        warmup_s=args.warmup,
        duration_s=args.duration,
        key_space=keys,
    )
    others = nodes[1:]
    before = [proc_cpu_seconds(n.pid) for n in others]
    result = run_load(spec, nodes[0].pid).as_dict()
    if others and result["server_cpu_s"] is not None and result["ops"]:
        # The other replicas' CPU over the whole run (warm-up included): an upper bound.
        extra = sum(proc_cpu_seconds(n.pid) - b for n, b in zip(others, before))
        total = result["server_cpu_s"] + extra * args.duration / (args.duration + args.warmup)
        result["cluster_cpu_us_per_op"] = total / result["ops"] * 1e6
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "lwt", "concurrency": args.concurrency}
    for size in (1, 3):
        with cluster(size) as nodes:
            _schema(nodes[0], size)
            figures[f"{size} node insert"] = _load(nodes, INSERT, args)
            figures[f"{size} node lwt"] = _load(nodes, LWT, args)
            if size > 1:
                figures[f"{size} node lwt one key"] = _load(nodes, LWT, args, keys=1)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
