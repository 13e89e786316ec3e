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

from bench.bench_replicated import cluster, quorum_load
from bench.common import RESULT_PREFIX, ServerHandle

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "counters", "concurrency": args.concurrency, "cl": "QUORUM"}
    with cluster(3, 40) as nodes:
        _create_schema(nodes[0])
        figures["rf3 insert"] = quorum_load(nodes, INSERT, ("int_rand", "text16"), args, 100_000)
        figures["rf3 counter"] = quorum_load(nodes, COUNTER, ("int_rand", "int_rand"), args, 100_000)
        figures["rf3 counter hot"] = quorum_load(nodes, COUNTER, ("int_rand", "int_rand"), args, 16)
        figures["rf3 counter one key"] = quorum_load(nodes, COUNTER, ("int_rand", "int_rand"), args, 1)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
