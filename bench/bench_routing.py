"""Benchmark: driver routing on a 3-node cluster — token/tablet-aware vs round-robin.

RF=1, so a request coordinated by a non-replica costs an extra internode hop. For a tablets
table and a vnode table, prepared SELECT by key and INSERT run from scylla-driver in a
separate process (concurrency 64), once with the driver's default TokenAwarePolicy and once with
RoundRobinPolicy. Per run: ops/s, p50/p99, server CPU µs per op **summed over the three nodes**,
and the share of requests the nodes counted as coordinated by a replica (their `/metrics`,
sampled around the run, warm-up included).

Reproduce: `.venv/bin/python -m bench.bench_routing [--duration S] [--concurrency N] [--smp N]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import BENCH_SUBNET, RESULT_PREFIX, LoadSpec, ServerHandle, _started, run_load

KEYS = 100_000
FIRST_OCTET = 131  # 127.0.99.131..: clear of the other benchmarks' 127.0.99.x nodes
API_PORT = 20990
ROUTED = "tabletdb_cql_single_partition_requests_total"


@contextlib.contextmanager
def tabletdb_cluster(size: int, smp: int) -> Iterator[list[ServerHandle]]:
    """Fresh nodes on 127.0.99.131.. joining the first one; each with the shard-aware port."""
    with tempfile.TemporaryDirectory(prefix="bench-routing-") as tmp, contextlib.ExitStack() as stack:
        handles: list[ServerHandle] = []
        for i in range(size):
            host = f"127.0.{BENCH_SUBNET}.{FIRST_OCTET + i}"
            argv = [sys.executable, "-m", "tabletdb.cli.main", "server", "--workdir", f"{tmp}/node{i}"]
            argv += ["--listen-address", host, "--smp", str(smp), "--api-port", str(API_PORT + i)]
            argv += ["--native-shard-aware-transport-port", "19042"]
            if handles:
                argv += ["--seeds", handles[0].host]
            started = contextlib.contextmanager(_started)(
                f"node{i}", argv, host, 9042, Path(tmp) / f"n{i}.log"
            )
            handles.append(stack.enter_context(started))
        yield handles


def _api_port(handle: ServerHandle) -> int:
    return API_PORT + int(handle.host.rsplit(".", 1)[1]) - FIRST_OCTET


def routed(nodes: list[ServerHandle]) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out = {"replica": 0.0, "other_shard": 0.0, "non_replica": 0.0}
    for node in nodes:
        url = f"http://{node.host}:{_api_port(node)}/metrics"
        with urllib.request.urlopen(url, timeout=30) as response:
            for family in text_string_to_metric_families(response.read().decode()):
                for sample in family.samples:
                    if sample.name == ROUTED:
                        out[sample.labels["coordinator"]] += sample.value
    return out


def _create_schema(host: str) -> None:
    from cassandra.cluster import Cluster

    cluster = Cluster([host], port=9042, protocol_version=4)
    try:
        session = cluster.connect()
        dc = session.execute("SELECT data_center FROM system.local").one().data_center
        rf = f"{{'class': 'NetworkTopologyStrategy', '{dc}': 1}}"
        session.execute(f"CREATE KEYSPACE tab WITH replication = {rf}")
        session.execute(f"CREATE KEYSPACE vn WITH replication = {rf} AND tablets = {{'enabled': false}}")
        for ks in ("tab", "vn"):
            session.execute(f"CREATE TABLE {ks}.kv (k int PRIMARY KEY, v text)")
    finally:
        cluster.shutdown()


def _run(
    nodes: list[ServerHandle], statement: str, values: tuple[str, ...], aware: bool, args: Any
) -> dict[str, Any]:
    spec = LoadSpec(
        nodes[0].host,
        nodes[0].port,
        statement,
        values=values,
        concurrency=args.concurrency,
        warmup_s=args.warmup,
        duration_s=args.duration,
        key_space=KEYS,
        token_aware=aware,
    )
    before = routed(nodes)
    result = run_load(spec, nodes[0].pid, [n.pid for n in nodes[1:]]).as_dict()
    after = routed(nodes)
    counts = {k: after[k] - before[k] for k in after}
    total = sum(counts.values())
    result["replica_share"] = (counts["replica"] + counts["other_shard"]) / total if total else None
    result["owning_shard_share"] = counts["replica"] / total if total else None
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--smp", type=int, default=2)
    args = parser.parse_args()
    figures: dict[str, Any] = {"benchmark": "routing", "nodes": 3, "rf": 1, "smp": args.smp}
    with tabletdb_cluster(3, args.smp) as nodes:
        _create_schema(nodes[0].host)
        for ks in ("tab", "vn"):
            insert = (f"INSERT INTO {ks}.kv (k, v) VALUES (?, ?)", ("int_rand", "text16"))
            select = (f"SELECT k, v FROM {ks}.kv WHERE k = ?", ("int_rand",))
            for op, (stmt, values) in (("insert", insert), ("select", select)):
                for aware in (True, False):
                    label = f"{ks} {op} {'token-aware' if aware else 'round-robin'}"
                    figures[label] = _run(nodes, stmt, values, aware, args)
    print(RESULT_PREFIX + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main()
