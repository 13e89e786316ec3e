"""Benchmark: counter updates on 3 nodes at RF=3 QUORUM, with a plain INSERT of the same run as baseline.

Figures (issue 7, counters):
- `rf3 insert`: prepared `INSERT INTO bench.kv (k, v) VALUES (?, ?)` at QUORUM, random int key of
  100,000, random 16-char text: the replicated write path's cost, for comparison.
- `rf3 counter`: prepared `UPDATE bench.counts SET n = n + ? WHERE k = ?` at QUORUM, random key
  of 100,000 (little contention): the cost of one counter update.
- `rf3 counter hot`: the same on 16 keys, so concurrent updates of one partition meet (Paxos
  contention: backoff and retried rounds).
- `rf3 counter one key`: every update on one partition (the delta is 0: the bind values are
  drawn from the key space), all requests in flight meet.
The driver spreads requests round robin over the three nodes. Server CPU is summed over every
node and divided by client operations. All processes share the machine's cores.

Reproduce: `.venv/bin/python -m bench.bench_counters [--duration S] [--concurrency N]`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.bench_replicated import cluster
from bench.common import RESULT_PREFIX, LoadSpec, ServerHandle, run_load

INSERT = "INSERT INTO bench.kv (k, v) VALUES (?, ?)"
COUNTER = "UPDATE bench.counts SET n = n + ? WHERE k = ?"


def _create_schema(node: ServerHandle) -> None:
    from cassandra.cluster import Cluster

    c = Cluster([node.host], port=node.port, protocol_version=4)
    try:
        session = c.connect()
        session.execute(
            "CREATE KEYSPACE bench WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
        )
        session.execute("CREATE TABLE bench.kv (k int PRIMARY KEY, v text)")
        session.execute("CREATE TABLE bench.counts (k int PRIMARY KEY, n counter)")
    finally:
        c.shutdown()


def _load(
    nodes: list[ServerHandle], statement: str, values: tuple[str, ...], keys: int, args: argparse.Namespace
) -> Any:
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
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "counters", "concurrency": args.concurrency, "cl": "QUORUM"}
    with cluster(3, 40) as nodes:
        _create_schema(nodes[0])
        figures["rf3 insert"] = _load(nodes, INSERT, ("int_rand", "text16"), 100_000, args)
        figures["rf3 counter"] = _load(nodes, COUNTER, ("int_rand", "int_rand"), 100_000, args)
        figures["rf3 counter hot"] = _load(nodes, COUNTER, ("int_rand", "int_rand"), 16, args)
        figures["rf3 counter one key"] = _load(nodes, COUNTER, ("int_rand", "int_rand"), 1, args)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
