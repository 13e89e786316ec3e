"""Profile the per-row work of one `tabletdb load --via files` task, in-process, without Spark.

A file load's Spark task fits each input row to the table, builds its mutation, groups rows by
tablet, writes per-tablet SQLite files and sends them to the replicas (`spark.file_load.load_rows`).
Under Spark that runs in a Python worker no profiler sees; here the same function runs in this
process over the rows of `bench_load`'s CSV (read with `csv`, every field a string, as Spark's CSV
reader hands them over) against one fresh node, under cProfile. Prints the task's CPU seconds
per row without the profiler, then the profile's top functions (by own time). The node's merge
is not in the profile (it runs in the node).
Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.profile_file_load [--rows 200000] [--out FILE]`.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import pstats
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_load import API_PORT, TABLE, write_csv
from bench.common import tabletdb_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--out", help="Where to keep the profile (pstats format).")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()

    from tabletdb.spark.backup_rest import Cluster
    from tabletdb.spark.coerce import map_columns
    from tabletdb.spark.connection import fetch_table_schema, parse_options, session_for
    from tabletdb.spark.file_load import FilePlan, _clustering_orders, _groups, load_rows
    from tabletdb.spark.tablet_rows import table_def

    with tempfile.TemporaryDirectory(prefix="bench-profile-load-") as tmp:
        source = Path(tmp) / "rows.csv"
        write_csv(source, args.rows)
        with open(source, newline="") as f:
            reader = csv.reader(f)
            names = next(reader)
            rows = [tuple(r) for r in reader]
        with tabletdb_server(host_octet=5) as server:
            options = parse_options({"hosts": server.host, "port": str(server.port), "table": "bench.files"})
            session = session_for(options.connect)
            replication = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
            session.execute(f"CREATE KEYSPACE bench WITH replication = {replication}")
            session.execute(f"CREATE TABLE bench.files {TABLE}")
            session.execute(f"CREATE TABLE bench.profiled {TABLE}")
            plans = []
            for name in ("files", "profiled"):
                schema = fetch_table_schema(session, "bench", name)
                table = table_def(schema, _clustering_orders(session, schema))
                cluster = Cluster(options.connect.hosts, API_PORT, {})
                last_tokens, ranges, replicas = _groups(session, cluster, schema)
                mapping = map_columns(schema, names)
                stamp = time.time_ns() // 1000
                plan = FilePlan(
                    table, schema, mapping, tuple(names), False, last_tokens, ranges, replicas, stamp,
                    writetime_at=None, ttl_at=None,
                )  # fmt: skip
                plans.append(plan)
            cpu = time.process_time()
            outputs = list(load_rows(plans[0], iter(rows)))
            cpu = time.process_time() - cpu
            if outputs[-1][2] != len(rows):
                raise SystemExit(f"loaded {outputs[-1][2]} of {len(rows)} rows")
            print(f"task CPU without the profiler: {cpu / len(rows) * 1e6:.1f} us per row ({len(rows)} rows)")
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            list(load_rows(plans[1], iter(rows)))
            profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    if args.out:
        stats.dump_stats(args.out)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
