"""Profile the per-row work of one `tabletdb load --via files` task, in-process, without Spark.

A file load's Spark task fits Arrow batches of input to the table column by column, keys and
routes the rows, writes per-tablet SQLite files and sends them to the replicas
(`spark.bulk.task.load_batches`). Under Spark that runs in a Python worker no profiler sees;
here the same function runs in this process over `bench_load`'s CSV (read by pyarrow into
batches of 10,000 rows, every field a string plus the null corrupt-record column, as Spark's
CSV reader hands them over) against one fresh node, under cProfile. Prints the task's CPU
seconds per row without the profiler and the node's over the same run (its checks and merges of
the files), then the profile's top functions (by own time). The node's work is not in the
profile (it runs in the node).
Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.profile_file_load [--rows 200000] [--out FILE]`.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_load import API_PORT, TABLE, write_csv
from bench.common import proc_cpu_seconds, tabletdb_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--out", help="Where to keep the profile (pstats format).")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()

    import pyarrow as pa
    import pyarrow.csv as pa_csv

    from tabletdb.spark.backup_rest import Cluster
    from tabletdb.spark.bulk.plan import FilePlan
    from tabletdb.spark.bulk.task import load_batches
    from tabletdb.spark.coerce import map_columns
    from tabletdb.spark.connection import fetch_table_schema, parse_options, session_for
    from tabletdb.spark.file_load import _groups, clustering_orders
    from tabletdb.spark.load import CORRUPT
    from tabletdb.spark.tablet_rows import table_def

    with tempfile.TemporaryDirectory(prefix="bench-profile-load-") as tmp:
        source = Path(tmp) / "rows.csv"
        write_csv(source, args.rows)
        names = source.read_text().split("\n", 1)[0].split(",")
        strings = pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()))
        table = pa_csv.read_csv(source, convert_options=strings)
        table = table.append_column(CORRUPT, pa.nulls(len(table), pa.string()))
        batches = table.to_batches(max_chunksize=10_000)
        count = len(table)
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
                table_def_ = table_def(schema, clustering_orders(session, schema))
                cluster = Cluster(options.connect.hosts, API_PORT, {})
                last_tokens, ranges, replicas = _groups(session, cluster, schema)
                mapping = map_columns(schema, names)
                stamp = time.time_ns() // 1000
                plan = FilePlan(
                    table_def_, schema, mapping, (*names, CORRUPT), False, last_tokens, ranges, replicas,
                    stamp, writetime_at=None, ttl_at=None,
                )  # fmt: skip
                plans.append(plan)
            cpu = time.process_time()
            node_cpu = proc_cpu_seconds(server.pid)
            outputs = list(load_batches(plans[0], iter(batches)))
            cpu = time.process_time() - cpu
            node_cpu = proc_cpu_seconds(server.pid) - node_cpu
            loaded = outputs[-1].column(2)[0].as_py()
            if loaded != count:
                raise SystemExit(f"loaded {loaded} of {count} rows")
            print(f"task CPU without the profiler: {cpu / count * 1e6:.1f} us per row ({count} rows)")
            print(f"node CPU (upload checks and merges): {node_cpu / count * 1e6:.1f} us per row")
            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
            list(load_batches(plans[1], iter(batches)))
            profiler.disable()
    stats = pstats.Stats(profiler, stream=sys.stdout)
    if args.out:
        stats.dump_stats(args.out)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
