"""Benchmark: 16 node processes started at once until every one is NORMAL (issue 14).

Two variants in the same run, on addresses of a block claimed like the test harness's:

* baseline: 16 processes each founding a cluster of its own (no join): what 16 simultaneous
  process starts cost on this machine at this moment;
* join: one founder and 15 nodes listing it as their seed, all spawned at once. Each joiner is
  admitted by the group0 leader, queues a `join` request, is bootstrapped by the topology
  coordinator one request at a time (FIFO), promoted to a Raft voter, and only then serves CQL.

Figures: seconds from spawn until every node answers CQL (for the join variant this is also
"all NORMAL": a node serves only once normal, which the script checks in `system.topology`), and
the CPU seconds of all 16 processes at that point, from /proc/<pid>/stat. The difference between
the variants is what joining costs beyond starting processes. Goal (issue 14): <= 30 s for the
join variant on the 2-core box. Run on a quiet machine; figures measured under load are noise.

Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.bench_join16 [--nodes 16] [--runs 1]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, proc_cpu_seconds
from tests.harness.addresses import AddressAllocator
from tests.harness.node import NodeFactory, TestNode

START_TIMEOUT = 900.0


def _start_all(nodes: list[TestNode]) -> tuple[float, float]:
    """Spawn every node, wait for all to serve CQL: (seconds, CPU seconds of all of them)."""
    started = time.monotonic()
    for node in nodes:
        node.start(wait=False)
    for node in nodes:
        node.wait_ready(timeout=START_TIMEOUT)
    elapsed = time.monotonic() - started
    pids = [node.process.pid for node in nodes]
    cpu = sum(proc_cpu_seconds(pid) for pid in pids if pid is not None)
    return elapsed, cpu


def _states(node: TestNode) -> dict[str, str]:
    from cassandra.cluster import Cluster

    cluster = Cluster([node.host], port=node.port, protocol_version=4)
    try:
        session = cluster.connect()
        rows = session.execute("SELECT host_id, node_state FROM system.topology")
        return {str(r.host_id): r.node_state for r in rows}
    finally:
        cluster.shutdown()


def _stop_all(factory: NodeFactory) -> None:
    problems = factory.cleanup()
    if problems:
        raise RuntimeError("; ".join(problems))


def run_once(size: int, base: Path) -> dict[str, Any]:
    allocator = AddressAllocator.for_this_process()
    standalone = NodeFactory(allocator, base / "standalone")
    try:
        alone = [standalone.create() for _ in range(size)]
        base_s, base_cpu = _start_all(alone)
    finally:
        _stop_all(standalone)
    joined = NodeFactory(allocator, base / "joined")
    try:
        founder = joined.create()
        nodes = [founder] + [joined.create(seeds=[founder.host]) for _ in range(size - 1)]
        join_s, join_cpu = _start_all(nodes)
        states = _states(nodes[-1])
        if len(states) != size or set(states.values()) != {"normal"}:
            raise RuntimeError(f"not every node is normal: {states}")
    finally:
        _stop_all(joined)
    return {
        "nodes": size,
        "baseline_standalone_s": round(base_s, 2),
        "baseline_standalone_cpu_s": round(base_cpu, 2),
        "join_all_normal_s": round(join_s, 2),
        "join_all_normal_cpu_s": round(join_cpu, 2),
        "join_extra_s": round(join_s - base_s, 2),
        "join_extra_cpu_s": round(join_cpu - base_cpu, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-join16-") as tmp:
            results.append(run_once(args.nodes, Path(tmp)))
        print(f"run {i + 1}: {results[-1]}", flush=True)
    summary = {key: statistics.median(r[key] for r in results) for key in results[0] if key != "nodes"} | {
        "nodes": args.nodes,
        "runs": args.runs,
        "loadavg_1m": os.getloadavg()[0],
    }
    print(RESULT_PREFIX + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
