"""Benchmark: the 4-node rebalance of issue 15 beside `cp` of the same bytes.

Three node processes of two shards, four tables of 64 KiB blobs at RF=2 in the sizes 1:2:4:8
(`--mb` MB in all, before replication), 16 tablets each. With balancing off a fourth node joins
(its join moves its share of replicas by count); then balancing is switched on and the run waits
until the placement stayed the same for 15 s with nothing moving.

Figures, all from the same run:
* `join_s`, `join_MB`: the join request (start of the fourth node until it serves CQL) and the
  bytes its moves streamed (the nodes' `tablet streamed ... bytes=` log lines);
* `balance_s`, `balance_MB`, `balance_MBps`: from `enablebalancing` until the last balancer move
  ended (the last log line of a stream or shard move), the bytes streamed between nodes meanwhile,
  and their rate; `shard_moves`: replicas moved between shards of a node (a rename: no bytes);
* `cp_MBps` / `cp_fsync_MBps`: `cp` of tablet files of the fourth node adding up to the bytes
  the rebalance streamed (join and balancer), to another file on the same filesystem, without
  and with an fsync; `rebalance_vs_cp`: (join_MB + balance_MB) / (join_s + balance_s) over cp_MBps;
* `node_spread`, `shard_spread`: after it, the largest |node bytes - mean| / mean and the
  largest (max - min) / max of a node's two shards, measured on disk as the balancer does.
Run on a quiet machine; figures measured under load are noise.

Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.bench_rebalance [--mb 256]`.
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import re
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import RESULT_PREFIX, cp_baseline
from tabletdb.replica.load_stats import file_bytes
from tests.harness.addresses import AddressAllocator
from tests.harness.node import NodeFactory, TestNode

BLOB = 64 * 1024
MB = 1024 * 1024
OPTIONS = {"write_request_timeout_in_ms": 60000, "read_request_timeout_in_ms": 60000}
SHARES = {"t1": 1, "t2": 2, "t3": 4, "t4": 8}
STABLE_S = 15.0
STREAMED = re.compile(r"tablet streamed .*?bytes=(\d+)")
MOVED_SHARD = "tablet moved between shards"


def _session(node: TestNode) -> Any:
    from cassandra.cluster import Cluster

    cluster = Cluster([node.host], port=node.port, protocol_version=4)
    return cluster, cluster.connect()


def _load(node: TestNode, megabytes: int) -> None:
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    cluster, s = _session(node)
    try:
        s.execute(
            "CREATE KEYSPACE rb WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 2} AND tablets = {'enabled': true}"
        )
        total = sum(SHARES.values())
        for name, share in SHARES.items():
            tablets = "{'min_tablet_count': 16}"
            s.execute(f"CREATE TABLE rb.{name} (k int PRIMARY KEY, v blob) WITH tablets = {tablets}")
            insert = s.prepare(f"INSERT INTO rb.{name} (k, v) VALUES (?, ?)")
            insert.consistency_level = ConsistencyLevel.QUORUM
            rows = megabytes * MB * share // total // BLOB
            execute_concurrent_with_args(
                s, insert, [(k, os.urandom(BLOB)) for k in range(rows)], concurrency=16
            )
    finally:
        cluster.shutdown()


def _post(node: TestNode, path: str) -> None:
    request = urllib.request.Request(node.api_url + path, method="POST", data=b"")
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()


def _placement(node: TestNode) -> tuple[tuple[Any, ...], bool]:
    cluster, s = _session(node)
    try:
        rows = list(
            s.execute(
                "SELECT table_name, last_token, replicas, stage FROM system.tablets "
                "WHERE keyspace_name = 'rb' ALLOW FILTERING"
            )
        )
    finally:
        cluster.shutdown()
    moving = any(r.stage is not None for r in rows)
    return tuple(sorted((r.table_name, r.last_token, tuple(r.replicas)) for r in rows)), moving


def _wait_stable(node: TestNode, limit_s: float = 3600) -> None:
    last: tuple[Any, ...] | None = None
    since = time.monotonic()
    deadline = since + limit_s
    while time.monotonic() < deadline:
        current, moving = _placement(node)
        if moving or current != last:
            last, since = current, time.monotonic()
        elif time.monotonic() - since >= STABLE_S:
            return
        time.sleep(1)
    raise RuntimeError(f"placement did not settle within {limit_s} s")


def _log(node: TestNode) -> str:
    return (node.workdir.parent / f"{node.workdir.name}.log").read_text()


def _moves(nodes: list[TestNode]) -> tuple[int, int, float]:
    """(bytes streamed, shard moves, time.time() of the last move line) over the nodes' logs."""
    streamed, shard_moves, last = 0, 0, 0.0
    for node in nodes:
        for line in _log(node).splitlines():
            found = STREAMED.search(line)
            if found or MOVED_SHARD in line:
                streamed += int(found.group(1)) if found else 0
                shard_moves += 0 if found else 1
                last = max(last, _stamp(line))
    return streamed, shard_moves, last


def _stamp(line: str) -> float:
    """A log line's time (logfmt: ``ts=YYYY-mm-ddTHH:MM:SS.mmmZ`` first, UTC), 0 if it has none."""
    try:
        whole = calendar.timegm(time.strptime(line[3:22], "%Y-%m-%dT%H:%M:%S"))
        return whole + int(line[23:26]) / 1000
    except (ValueError, IndexError):
        return 0.0


def _spread(nodes: list[TestNode]) -> tuple[float, float]:
    shards: list[dict[int, int]] = []
    for node in nodes:
        per: dict[int, int] = {0: 0, 1: 0}
        for path in (node.workdir / "data").glob("rb/*/shard-*/tablet-*.db"):
            shard = int(path.parent.name.removeprefix("shard-"))
            per[shard] = per.get(shard, 0) + file_bytes(path)
        shards.append(per)
    totals = [sum(s.values()) for s in shards]
    mean = sum(totals) / len(totals)
    node_spread = max(abs(t - mean) for t in totals) / mean
    shard_spread = max((max(s.values()) - min(s.values())) / max(s.values()) for s in shards)
    return node_spread, shard_spread


def _files_of(node: TestNode, size: int) -> list[Path]:
    """Tablet files of ``node`` adding up to at least ``size`` bytes (the baseline's input)."""
    files, total = [], 0
    for path in sorted((node.workdir / "data").glob("rb/*/shard-*/tablet-*.db")):
        if total >= size:
            break
        files.append(path)
        total += path.stat().st_size
    return files


def run(megabytes: int, base: Path) -> dict[str, Any]:
    factory = NodeFactory(AddressAllocator.for_this_process(), base)
    try:
        nodes = factory.start_cluster(3, smp=2, options=OPTIONS)
        _load(nodes[0], megabytes)
        _post(nodes[0], "/storage_service/tablets/balancing?enabled=false")
        started = time.monotonic()
        fourth = factory.create(seeds=[nodes[0].host], smp=2, options=OPTIONS)
        fourth.start(timeout=3600)
        join_s = time.monotonic() - started
        nodes.append(fourth)
        _wait_stable(nodes[0])
        join_bytes, _, _ = _moves(nodes)
        enabled_at = time.time()
        _post(fourth, "/storage_service/tablets/balancing?enabled=true")
        _wait_stable(nodes[0])
        all_bytes, shard_moves, last = _moves(nodes)
        balance_bytes = all_bytes - join_bytes
        balance_s = max(last - enabled_at, 0.0)
        node_spread, shard_spread = _spread(nodes)
        cp_bytes, cp_s, cp_fsync_s = cp_baseline(_files_of(fourth, all_bytes), base / "cp-baseline")
    finally:
        factory.cleanup()
    cp_mbps = cp_bytes / MB / max(cp_s, 1e-6)
    rebalance_mbps = all_bytes / MB / max(join_s + balance_s, 1e-6)
    return {
        "loaded_MB": megabytes,
        "join_s": round(join_s, 1),
        "join_MB": round(join_bytes / MB, 1),
        "balance_s": round(balance_s, 1),
        "balance_MB": round(balance_bytes / MB, 1),
        "balance_MBps": round(balance_bytes / MB / max(balance_s, 1e-6), 3),
        "shard_moves": shard_moves,
        "cp_MB": round(cp_bytes / MB, 1),
        "cp_MBps": round(cp_mbps, 1),
        "cp_fsync_MBps": round(cp_bytes / MB / max(cp_fsync_s, 1e-6), 1),
        "rebalance_vs_cp": round(rebalance_mbps / cp_mbps, 3),
        "node_spread": round(node_spread, 3),
        "shard_spread": round(shard_spread, 3),
        "loadavg_1m": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=256, help="MB written before replication (RF=2)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-rebalance-") as tmp:
        result = run(args.mb, Path(tmp))
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
