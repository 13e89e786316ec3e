"""Benchmark: the floor server alone (what asyncio + framing + the driver cost, with no database).

Every server benchmark prints its figures beside these. Reproduce: `make bench` or
`.venv/bin/python -m bench.bench_floor [--duration S] [--concurrency N] [--processes P]`.
"""

from __future__ import annotations

import argparse
import json

from bench.common import RESULT_PREFIX, LoadSpec, floor_server, run_load

STATEMENT = "SELECT k, v FROM floor.t WHERE k = ?"
VALUES = ("int_rand",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    with floor_server(VALUES) as server:
        spec = LoadSpec(
            server.host,
            server.port,
            STATEMENT,
            values=VALUES,
            concurrency=args.concurrency,
            processes=args.processes,
            warmup_s=args.warmup,
            duration_s=args.duration,
        )
        result = run_load(spec, server_pid=server.pid)
    figures = {"benchmark": "floor", "workload": "prepared SELECT by key", **result.as_dict()}
    figures["concurrency"], figures["processes"] = args.concurrency, args.processes
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
