"""Benchmark: what a secondary index and a materialized view cost on the write path, and a read
through an index.

Figures, all against one fresh node in one run (scylla-driver in a separate process):
- `insert plain`: prepared `INSERT INTO bench.kv (k, v) VALUES (?, ?)`, no index or view;
- `insert indexed`: the same into a table with a global index on `v` (read-before-write,
  an index entry write, the base write);
- `insert with view`: the same into a table with a materialized view keyed by `v`;
- `select by index`: prepared `SELECT k FROM bench.kvi WHERE v = ?` (random v, about one row);
with ops/s, p50/p99, server CPU µs per op and RSS. The ratio of CPU µs/op is the figure to read.

- `growing partition` (issue 17): rounds of `--round` inserts into ONE partition (clustering key
  counting up) of a plain table (the same-run baseline), one with a global index on a regular
  column and one with a materialized view; server CPU µs per insert of each round. Index and
  view upkeep must cost what the changed row costs, so the figure to read is `last/first`: the
  last round's CPU per insert over the first one's — flat is ~1, a cost that grows with the
  partition (the bug: each insert re-read the whole partition) grows with the round number.

Reproduce: `.venv/bin/python -m bench.bench_indexes [--duration S] [--concurrency N]
[--rounds R --round N]`; `--only-growing` runs the growing-partition case alone.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.common import RESULT_PREFIX, LoadSpec, proc_cpu_seconds, run_load, tabletdb_server

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
GROWING = (
    ("plain", "CREATE TABLE bench.gp (k int, c int, v int, PRIMARY KEY (k, c))", None),
    (
        "indexed",
        "CREATE TABLE bench.gpi (k int, c int, v int, PRIMARY KEY (k, c))",
        "CREATE INDEX gpi_v ON bench.gpi (v)",
    ),
    (
        "with view",
        "CREATE TABLE bench.gpm (k int, c int, v int, PRIMARY KEY (k, c))",
        "CREATE MATERIALIZED VIEW bench.gpm_by_v AS SELECT * FROM bench.gpm "
        "WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)",
    ),
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


def growing_partition(host: str, port: int, pid: int, rounds: int, per_round: int) -> dict[str, Any]:
    """CPU µs per insert of each round into one growing partition, per table kind, and each
    kind's last/first round ratio (the same run's plain table is the baseline)."""
    from cassandra.cluster import Cluster

    out: dict[str, Any] = {"rounds": rounds, "inserts_per_round": per_round}
    cluster = Cluster([host], port=port, protocol_version=4)
    try:
        session = cluster.connect()
        for kind, table, derived in GROWING:
            session.execute(table)
            if derived is not None:
                session.execute(derived)
            name = table.split()[2]
            insert = session.prepare(f"INSERT INTO {name} (k, c, v) VALUES (0, ?, ?)")
            per_insert: list[float] = []
            c = 0
            for _ in range(rounds):
                before = proc_cpu_seconds(pid)
                for _ in range(per_round):
                    session.execute(insert, (c, c % 97))
                    c += 1
                per_insert.append(round((proc_cpu_seconds(pid) - before) / per_round * 1e6, 1))
            out[kind] = {
                "cpu_us_per_insert_by_round": per_insert,
                "last/first": round(per_insert[-1] / per_insert[0], 2),
            }
    finally:
        cluster.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--smp", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8, help="growing partition: rounds of inserts")
    parser.add_argument("--round", type=int, default=500, help="growing partition: inserts per round")
    parser.add_argument("--only-growing", action="store_true")
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "indexes", "concurrency": args.concurrency, "smp": args.smp}
    with tabletdb_server(smp=args.smp) as server:
        _create_schema(server.host, server.port)
        figures["growing partition"] = growing_partition(
            server.host, server.port, server.pid, args.rounds, args.round
        )
        for name, statement, values in () if args.only_growing else LOADS:
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
