"""Benchmark: writes to a table with a materialized view and an index at RF=3, against a plain table.

Figures (issue 7 item 4, views and indexes at RF>1), one 3-node cluster (smp 1 each), RF=3,
prepared INSERT at QUORUM, the driver spreading requests over the three coordinators:
- `plain insert`: a table without views or indexes (the base write only).
- `derived insert`: the same write to a table with one view and one global index on `v`;
  every base replica also reads the partition before and after its apply, derives the view row
  and the index entry (plus the deletions of the old ones when a key is overwritten) and sends
  them to its paired view replica, acknowledging only once those are applied (synchronous).
- `view select` / `index select`: a QUORUM read of one view partition / one index lookup.
Server CPU is summed over every node and divided by client operations. All processes share 2
cores with the client.

Reproduce: `.venv/bin/python -m bench.bench_replicated_views [--duration S] [--concurrency N]`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from bench.bench_replicated import _load, cluster
from bench.common import RESULT_PREFIX, ServerHandle


def _create_schema(node: ServerHandle) -> None:
    from cassandra.cluster import Cluster

    c = Cluster([node.host], port=node.port, protocol_version=4)
    try:
        session = c.connect()
        session.execute(
            "CREATE KEYSPACE bench WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
        )
        for name in ("plain", "derived"):
            session.execute(f"CREATE TABLE bench.{name} (k int PRIMARY KEY, v text)")
        session.execute(
            "CREATE MATERIALIZED VIEW bench.by_v AS SELECT * FROM bench.derived "
            "WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)"
        )
        session.execute("CREATE INDEX ON bench.derived (v)")
    finally:
        c.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    figures: dict[str, Any] = {
        "benchmark": "replicated_views",
        "concurrency": args.concurrency,
        "cl": "QUORUM",
    }
    with cluster(3, 40) as nodes:
        _create_schema(nodes[0])
        for name in ("plain", "derived"):
            insert = f"INSERT INTO bench.{name} (k, v) VALUES (?, ?)"
            figures[f"{name} insert"] = _load(nodes, insert, ("int_rand", "text16"), args)
        view = "SELECT k FROM bench.by_v WHERE v = ?"
        figures["view select"] = _load(nodes, view, ("text16",), args)
        index = "SELECT k FROM bench.derived WHERE v = ?"
        figures["index select"] = _load(nodes, index, ("text16",), args)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
