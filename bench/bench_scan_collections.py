"""Benchmark: full scans of a table with a non-frozen list beside the same table without it.

Issue 19 item 5: every INSERT into a table with a non-frozen collection writes a collection
tombstone, and such tables used to be scanned row by row in Python. One fresh node (`--smp 1`,
default tablets) holds two tables with the same `--rows` rows, in one run:

- ``bench.coll (id uuid PRIMARY KEY, name text, tags list<text>, d date, x double, ok boolean)``,
  the shape a user reported, with three tags per row;
- ``bench.plain``: the same without ``tags`` (partitions without flags: the same-run baseline).

For each: a paged ``SELECT *`` through scylla-driver (`--page` rows per page): rows/s (wall clock;
the driver decodes every row in this process, so it bounds rows/s too) and the node's CPU µs per
row (/proc/<pid>/stat around the scan), the figure to compare; and with `--spark` the whole table
read through the `tabletdb` Spark data source into the `noop` sink (`--master`, default
local[2]): rows/s and node CPU µs per row. `ratios` divides the collection table's figures by
the plain table's.

Reproduce: `.venv/bin/python -m bench.bench_scan_collections [--rows N] [--page N] [--spark]`.
Run it on a quiet machine: figures taken while other processes share the cores are noise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from datetime import date
from typing import Any

from bench.common import RESULT_PREFIX, ServerHandle, proc_cpu_seconds, tabletdb_server

HOST_OCTET = 44
TABLES = {
    "coll": "CREATE TABLE bench.coll (id uuid PRIMARY KEY, name text, tags list<text>, d date, x double,"
    " ok boolean)",
    "plain": "CREATE TABLE bench.plain (id uuid PRIMARY KEY, name text, d date, x double, ok boolean)",
}


def _log(text: str) -> None:
    print(f"bench_scan_collections: {text}", file=sys.stderr, flush=True)


def _session(server: ServerHandle) -> tuple[Any, Any]:
    from cassandra.cluster import Cluster

    cluster = Cluster([server.host], port=server.port, protocol_version=4, connect_timeout=60)
    session = cluster.connect()
    session.default_timeout = 600
    return cluster, session


def _fill(session: Any, rows: int) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    session.execute(
        "CREATE KEYSPACE bench WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    for create in TABLES.values():
        session.execute(create)
    coll = session.prepare("INSERT INTO bench.coll (id, name, tags, d, x, ok) VALUES (?, ?, ?, ?, ?, ?)")
    plain = session.prepare("INSERT INTO bench.plain (id, name, d, x, ok) VALUES (?, ?, ?, ?, ?)")
    chunk = 20_000
    for start in range(0, rows, chunk):
        keys = [uuid.UUID(int=i + 1) for i in range(start, min(rows, start + chunk))]
        values = [(f"name-{k.int}", date(2020, 1, 1 + k.int % 28), k.int / 7, k.int % 2 == 0) for k in keys]
        tags = [[f"tag-{k.int % 97}", "common", f"t{k.int % 5}"] for k in keys]
        execute_concurrent_with_args(
            session, coll, [(k, v[0], t, *v[1:]) for k, v, t in zip(keys, values, tags)], concurrency=64
        )
        execute_concurrent_with_args(session, plain, [(k, *v) for k, v in zip(keys, values)], concurrency=64)


def _measured(server: ServerHandle, work: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, server CPU seconds) of ``work()``."""
    cpu0 = proc_cpu_seconds(server.pid)
    t0 = time.monotonic()
    result = work()
    return result, time.monotonic() - t0, proc_cpu_seconds(server.pid) - cpu0


def _scan(session: Any, table: str, page: int) -> int:
    from cassandra.query import SimpleStatement

    return sum(1 for _ in session.execute(SimpleStatement(f"SELECT * FROM bench.{table}", fetch_size=page)))


def _figures(seen: int, wall: float, cpu: float) -> dict[str, Any]:
    return {
        "rows_seen": seen,
        "rows_per_s": round(seen / wall),
        "server_cpu_us_per_row": round(cpu / max(1, seen) * 1e6, 2),
    }


def _spark_reads(server: ServerHandle, master: str) -> dict[str, Any]:
    from tabletdb.spark.session import spark_session

    spark = spark_session(master, {"spark.sql.shuffle.partitions": "4"})
    out: dict[str, Any] = {}
    try:
        for table in TABLES:
            options = {"hosts": server.host, "port": str(server.port), "table": f"bench.{table}"}

            def load(options: dict[str, str] = options) -> Any:
                return spark.read.format("tabletdb").options(**options).option("consistency", "ONE").load()

            def read() -> None:
                load().write.format("noop").mode("overwrite").save()

            read()  # warm-up: connections, prepared statements, Python workers
            _, wall, cpu = _measured(server, read)
            out[table] = _figures(int(load().count()), wall, cpu)
            _log(f"spark read of {table}: {out[table]}")
    finally:
        spark.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--page", type=int, default=5000)
    parser.add_argument("--spark", action="store_true", help="also read both tables through Spark")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "benchmark": "scan_collections",
        "workload": f"{args.rows} rows per table, pages of {args.page}, 1 node smp 1",
    }
    with tabletdb_server(host_octet=HOST_OCTET) as server:
        cluster, session = _session(server)
        try:
            _fill(session, args.rows)
            _log(f"filled {args.rows} rows in each table")
            for table in TABLES:
                _scan(session, table, args.page)  # warm-up: the file cache, prepared plans
                seen, wall, cpu = _measured(server, lambda table=table: _scan(session, table, args.page))
                figures[f"scan_{table}"] = _figures(seen, wall, cpu)
                _log(f"scan of {table}: {figures[f'scan_{table}']}")
        finally:
            cluster.shutdown()
        if args.spark:
            for table, found in _spark_reads(server, args.master).items():
                figures[f"spark_{table}"] = found
    ratios = {}
    for kind in ("scan", "spark"):
        coll, plain = figures.get(f"{kind}_coll"), figures.get(f"{kind}_plain")
        if coll and plain:
            ratios[f"{kind}_rows_per_s_coll_vs_plain"] = round(coll["rows_per_s"] / plain["rows_per_s"], 3)
            ratios[f"{kind}_cpu_per_row_coll_vs_plain"] = round(
                coll["server_cpu_us_per_row"] / max(plain["server_cpu_us_per_row"], 1e-9), 3
            )
    figures["ratios"] = ratios
    figures["errors"] = sum(
        int(figures[k]["rows_seen"] != args.rows) for k in figures if k[:5] in ("scan_", "spark")
    )
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
