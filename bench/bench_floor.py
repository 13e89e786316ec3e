"""Benchmark: the floor server alone (what asyncio + framing + the driver cost, with no database).

Every server benchmark prints its figures beside these. Reproduce: `make bench` or
`.venv/bin/python -m bench.bench_floor [--duration S] [--concurrency N] [--processes P]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench.common import RESULT_PREFIX, LoadSpec, run_load
from tests.harness.probe import wait_cql_ready
from tests.harness.process import ManagedProcess

HOST, PORT = "127.0.99.1", 9042  # out of the test harness's address blocks
STATEMENT = "SELECT k, v FROM floor.t WHERE k = ?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        argv = [sys.executable, "-m", "bench.floor_server", "--host", HOST, "--port", str(PORT)]
        server = ManagedProcess(argv, Path(tmp) / "floor.log", name="floor-server")
        server.start()
        try:
            wait_cql_ready(HOST, PORT, timeout=60, alive=lambda: server.running)
            assert server.pid is not None
            spec = LoadSpec(
                HOST,
                PORT,
                STATEMENT,
                values=("int_rand",),
                concurrency=args.concurrency,
                processes=args.processes,
                warmup_s=args.warmup,
                duration_s=args.duration,
            )
            result = run_load(spec, server_pid=server.pid)
        finally:
            server.stop()
    figures = {"benchmark": "floor", "workload": "prepared SELECT by key", **result.as_dict()}
    figures["concurrency"], figures["processes"] = args.concurrency, args.processes
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
