"""Benchmark: the replicated data path — 3 nodes at RF=3 QUORUM against one node, same run.

Figures (replicated data path issue 7):
- `single insert` / `single select`: one node, RF=1, prepared INSERT / SELECT by key at QUORUM
  (which is ONE replica there): the local fast path, no RPC.
- `rf3 insert` / `rf3 select`: three nodes on one box, RF=3, the same statements at QUORUM; the
  driver spreads requests over all three (round robin), each coordinator writes to all three
  replicas and reads data from itself plus a digest from one other.
Server CPU is summed over every node of the run and divided by client operations, so the
cluster's figure is the whole cost of one replicated operation. All processes share 2 cores.

Reproduce: `.venv/bin/python -m bench.bench_replicated [--duration S] [--concurrency N]`.
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

from bench.common import BENCH_SUBNET, RESULT_PREFIX, LoadSpec, ServerHandle, _started, run_load

KEYS = 100_000
INSERT = "INSERT INTO bench.kv (k, v) VALUES (?, ?)"
SELECT = "SELECT k, v FROM bench.kv WHERE k = ?"


@contextlib.contextmanager
def cluster(size: int, first_octet: int) -> Iterator[list[ServerHandle]]:
    """``size`` fresh nodes (smp 1) joined one at a time to the first."""
    with tempfile.TemporaryDirectory(prefix="bench-repl-") as tmp, contextlib.ExitStack() as stack:
        nodes: list[ServerHandle] = []
        seed = f"127.0.{BENCH_SUBNET}.{first_octet}"
        for i in range(size):
            host = f"127.0.{BENCH_SUBNET}.{first_octet + i}"
            argv = [sys.executable, "-m", "tabletdb.cli.main", "server", "--workdir", f"{tmp}/n{i}"]
            argv += ["--listen-address", host, "--smp", "1", "--api-port", str(20980 + first_octet + i)]
            if i:
                argv += ["--seeds", seed]
            nodes.append(
                stack.enter_context(
                    contextlib.contextmanager(_started)(f"n{i}", argv, host, 9042, Path(tmp) / f"n{i}.log")
                )
            )
        yield nodes


def _create_schema(node: ServerHandle, rf: int) -> None:
    from cassandra.cluster import Cluster

    c = Cluster([node.host], port=node.port, protocol_version=4)
    try:
        session = c.connect()
        session.execute(
            "CREATE KEYSPACE bench WITH replication = "
            f"{{'class': 'NetworkTopologyStrategy', 'replication_factor': {rf}}}"
        )
        session.execute("CREATE TABLE bench.kv (k int PRIMARY KEY, v text)")
    finally:
        c.shutdown()


def quorum_load(
    nodes: list[ServerHandle],
    statement: str,
    values: tuple[str, ...],
    args: argparse.Namespace,
    keys: int = KEYS,
) -> Any:
    """One load at QUORUM through the first node, CPU counted on every node (also bench_counters)."""
    spec = LoadSpec(
        nodes[0].host,
        nodes[0].port,
        statement,
        values=values,
        concurrency=args.concurrency,
        warmup_s=args.warmup,
        duration_s=args.duration,
        key_space=keys,
        consistency="QUORUM",
    )
    return run_load(spec, nodes[0].pid, [n.pid for n in nodes[1:]]).as_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "replicated", "concurrency": args.concurrency, "cl": "QUORUM"}
    for name, size, rf, octet in (("single", 1, 1, 20), ("rf3", 3, 3, 30)):
        with cluster(size, octet) as nodes:
            _create_schema(nodes[0], rf)
            figures[f"{name} insert"] = quorum_load(nodes, INSERT, ("int_rand", "text16"), args)
            figures[f"{name} select"] = quorum_load(nodes, SELECT, ("int_rand",), args)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
