"""Benchmark: what a secondary index and a materialized view cost on the write path, and a read
through an index.

Figures, all against one fresh node in one run (scylla-driver in a separate process):
- `insert plain`: prepared `INSERT INTO bench.kv (k, v) VALUES (?, ?)`, no index or view;
- `insert indexed`: the same into a table with a global index on `v` (read-before-write,
  an index entry write, the base write);
- `insert with view`: the same into a table with a materialized view keyed by `v`;
- `select by index`: prepared `SELECT k FROM bench.kvi WHERE v = ?` (random v, about one row);
with ops/s, p50/p99, server CPU µs per op and RSS. The ratio of CPU µs/op is the figure to read.

Reproduce: `.venv/bin/python -m bench.bench_indexes [--duration S] [--concurrency N]`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.common import RESULT_PREFIX, LoadSpec, run_load, tabletdb_server

KEYS = 100_000
SCHEMA = (
    "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}",
    "CREATE TABLE bench.kv (k int PRIMARY KEY, v int)",
    "CREATE TABLE bench.kvi (k int PRIMARY KEY, v int)",
    "CREATE INDEX kvi_v ON bench.kvi (v)",
    "CREATE TABLE bench.kvm (k int PRIMARY KEY, v int)",
    "CREATE MATERIALIZED VIEW bench.kvm_by_v AS SELECT * FROM bench.kvm "
    "WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)",
)
LOADS = (
    ("insert plain", "INSERT INTO bench.kv (k, v) VALUES (?, ?)", ("int_rand", "int_rand")),
    ("insert indexed", "INSERT INTO bench.kvi (k, v) VALUES (?, ?)", ("int_rand", "int_rand")),
    ("insert with view", "INSERT INTO bench.kvm (k, v) VALUES (?, ?)", ("int_rand", "int_rand")),
    ("select by index", "SELECT k FROM bench.kvi WHERE v = ?", ("int_rand",)),
)


def _create_schema(host: str, port: int) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=port, protocol_version=4)
    try:
        session = cluster.connect()
        for statement in SCHEMA:
            session.execute(statement)
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--smp", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "indexes", "concurrency": args.concurrency, "smp": args.smp}
    with tabletdb_server(smp=args.smp) as server:
        _create_schema(server.host, server.port)
        for name, statement, values in LOADS:
            spec = LoadSpec(
                server.host,
                server.port,
                statement,
                values=values,
                concurrency=args.concurrency,
                warmup_s=args.warmup,
                duration_s=args.duration,
                key_space=KEYS,
            )
            figures[name] = run_load(spec, server.pid).as_dict()
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
