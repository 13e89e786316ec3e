"""Benchmark: what CDC costs on the write path (issue 16's benchmark).

Figures, all against one fresh node in one run (scylla-driver in a separate process), prepared
`INSERT INTO bench.<table> (k, v) VALUES (?, ?)` with random keys into:
- `insert cdc off`: a table without CDC (the same-run baseline);
- `insert cdc delta`: `cdc = {'enabled': true}` — the base write plus one delta log row, derived
  and committed by the replica in the same commit tick;
- `insert cdc pre+post image`: `cdc = {'enabled': true, 'preimage': true, 'postimage': true}`:
  the replica also reads the partition under its lock before the write and logs the images
  (a server that refuses the options shows `{"refused": "<the server's message>"}` instead).
with ops/s, p50/p99 and server CPU µs per op; the ratios of CPU µs/op to `insert cdc off` are
printed as `cpu_ratio_to_off`. Run on a quiet machine: on a shared box the figures are noise.

Reproduce: `.venv/bin/python -m bench.bench_cdc [--duration S] [--concurrency N]`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.common import RESULT_PREFIX, LoadSpec, run_load, tabletdb_server

KEYS = 1_000_000
KEYSPACE = (
    "CREATE KEYSPACE bench WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
)
TABLES = (
    ("insert cdc off", "kv", ""),
    ("insert cdc delta", "kvd", " WITH cdc = {'enabled': true}"),
    (
        "insert cdc pre+post image",
        "kvp",
        " WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}",
    ),
)


def _create_schema(host: str, port: int) -> dict[str, str]:
    """Create the tables; returns {figure name: the server's refusal} for tables it refused."""
    from cassandra import InvalidRequest
    from cassandra.cluster import Cluster

    refused: dict[str, str] = {}
    cluster = Cluster([host], port=port, protocol_version=4)
    try:
        session = cluster.connect()
        session.execute(KEYSPACE)
        for name, table, options in TABLES:
            try:
                session.execute(f"CREATE TABLE bench.{table} (k int PRIMARY KEY, v text){options}")
            except InvalidRequest as e:
                refused[name] = str(e)
    finally:
        cluster.shutdown()
    return refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--smp", type=int, default=1)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "cdc", "concurrency": args.concurrency, "smp": args.smp}
    with tabletdb_server(smp=args.smp) as server:
        refused = _create_schema(server.host, server.port)
        for name, table, _ in TABLES:
            if name in refused:
                figures[name] = {"refused": refused[name]}
                continue
            spec = LoadSpec(
                server.host,
                server.port,
                f"INSERT INTO bench.{table} (k, v) VALUES (?, ?)",
                values=("int_rand", "text16"),
                concurrency=args.concurrency,
                warmup_s=args.warmup,
                duration_s=args.duration,
                key_space=KEYS,
            )
            figures[name] = run_load(spec, server.pid).as_dict()
    base = figures["insert cdc off"].get("server_cpu_us_per_op")
    for name, _, _ in TABLES[1:]:
        cpu = figures[name].get("server_cpu_us_per_op")
        if base and cpu:
            figures[name]["cpu_ratio_to_off"] = cpu / base
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
