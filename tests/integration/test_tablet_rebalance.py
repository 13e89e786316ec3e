"""The balancer loop on real node processes (issue 15 item 2, its acceptance).

Three nodes of two shards, four tables of different sizes at RF=2. With balancing switched off
(``nodetool disablebalancing``) a fourth node joins: its join takes its share of replicas by
count and nothing else moves. Switched on again, the topology coordinator weighs tablets by the
nodes' measured file sizes and moves replicas between nodes and between the shards of a node
(a file renamed into the other shard's directory) until no move helps. Then every node's bytes
are within 10 % of the mean, every node's two shards within 10 % of each other, and every row
reads back at ALL.
Bytes are measured on disk as the balancer measures them: each tablet file's database pages.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner

from tabletdb.cli.main import cli
from tabletdb.replica.load_stats import file_bytes
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import OPTIONS, host_id, session_on, statement, wait_for

KEYSPACE = "rb"
TOLERANCE = 0.10
SETTLE_S = 600.0
"""Liveness bound for the balancer to converge on a loaded two-core box (not a speed check)."""
STABLE_S = 11.0
"""Placement unchanged this long, nothing in transition: converged (the coordinator re-polls
tablet sizes at least every 10 s and plans at once when a round ended)."""


def nodetool(node: TestNode, *args: str) -> str:
    argv = ["nodetool", "-h", node.host, "-p", str(node.endpoints.api_port), *args]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def load(node: TestNode, tables: dict[str, int], value_bytes: int) -> dict[str, int]:
    """Create the tables (16 tablets each) and fill each with its number of rows; rows per table."""
    from cassandra.concurrent import execute_concurrent_with_args

    with session_on(node) as s:
        s.execute(
            f"CREATE KEYSPACE {KEYSPACE} WITH replication = {{'class': 'NetworkTopologyStrategy', "
            f"'replication_factor': 2}} AND tablets = {{'enabled': true}}"
        )
        for name, rows in tables.items():
            s.execute(
                f"CREATE TABLE {KEYSPACE}.{name} (k int PRIMARY KEY, v text) "
                "WITH tablets = {'min_tablet_count': 16}"
            )
            insert = s.prepare(f"INSERT INTO {KEYSPACE}.{name} (k, v) VALUES (?, ?)")
            insert.consistency_level = statement("", "QUORUM").consistency_level
            filler = "x" * value_bytes
            results = execute_concurrent_with_args(
                s, insert, [(k, f"{k}{filler}") for k in range(rows)], concurrency=16
            )
            assert all(ok for ok, _ in results)
    return tables


def placement(node: TestNode) -> tuple[tuple[Any, ...], bool]:
    """(every tablet's replicas, whether any is in transition) as ``node`` sees them."""
    with session_on(node) as s:
        rows = list(
            s.execute(
                statement(
                    "SELECT table_name, last_token, replicas, stage FROM system.tablets "
                    f"WHERE keyspace_name = '{KEYSPACE}' ALLOW FILTERING",
                    "ONE",
                )
            )
        )
    moving = any(r.stage is not None for r in rows)
    return tuple(sorted((r.table_name, r.last_token, tuple(r.replicas)) for r in rows)), moving


def wait_stable(node: TestNode, what: str) -> tuple[Any, ...]:
    """The placement once it stayed the same, with nothing moving, for ``STABLE_S``."""
    seen: list[tuple[tuple[Any, ...], float]] = []

    def stable() -> bool:
        current, moving = placement(node)
        now = time.monotonic()
        if moving or not seen or seen[-1][0] != current:
            seen.append((current, now))
            return False
        return now - seen[-1][1] >= STABLE_S

    wait_for(stable, what, SETTLE_S)
    return seen[-1][0]


def disk_bytes(node: TestNode) -> dict[int, int]:
    """Bytes of the keyspace's tablet files on each shard of ``node``, as the balancer weighs a
    file (its database pages, WAL included: ``replica.load_stats``)."""
    per_shard: dict[int, int] = {0: 0, 1: 0}
    for path in (node.workdir / "data").glob(f"{KEYSPACE}/*/shard-*/tablet-*.db"):
        shard = int(path.parent.name.removeprefix("shard-"))
        per_shard[shard] = per_shard.get(shard, 0) + file_bytes(path)
    return per_shard


def imbalance(nodes: list[TestNode]) -> list[str]:
    """What is outside the tolerance: nodes against the mean, shards of a node against each other."""
    shards = {n.host: disk_bytes(n) for n in nodes}
    totals = {h: sum(s.values()) for h, s in shards.items()}
    mean = sum(totals.values()) / len(totals)
    problems = [
        f"node {h} holds {b} bytes, mean {mean:.0f}"
        for h, b in totals.items()
        if abs(b - mean) > TOLERANCE * mean
    ]
    for h, s in shards.items():
        if max(s.values()) - min(s.values()) > TOLERANCE * max(s.values()):
            problems.append(f"node {h} shards hold {s}")
    return problems


def replica_counts(layout: tuple[Any, ...]) -> dict[uuid.UUID, int]:
    counts: dict[uuid.UUID, int] = {}
    for _table, _token, replicas in layout:
        for h, _shard in replicas:
            counts[h] = counts.get(h, 0) + 1
    return counts


def shard_moves(nodes: list[TestNode]) -> int:
    return sum(n.log_tail(100_000).count("tablet moved between shards") for n in nodes)


def rebalance(
    node_factory: NodeFactory, tables: dict[str, int], value_bytes: int, check: Callable[[list[str]], None]
) -> None:
    nodes = node_factory.start_cluster(3, smp=2, options=OPTIONS)
    rows = load(nodes[0], tables, value_bytes)
    assert nodetool(nodes[1], "disablebalancing") == ""
    assert nodetool(nodes[2], "statusbalancing") == "not running"

    fourth = node_factory.create(seeds=[nodes[0].host], smp=2, options=OPTIONS)
    fourth.start()  # CQL served: its join (its share of replicas, by count) is done
    nodes.append(fourth)
    joined = wait_stable(nodes[0], "the join's moves to end")
    assert replica_counts(joined).get(host_id(fourth), 0) > 0
    assert wait_stable(nodes[0], "nothing to move with balancing off") == joined

    started = time.monotonic()
    nodetool(fourth, "enablebalancing")
    assert nodetool(nodes[0], "statusbalancing") == "running"
    balanced = wait_stable(nodes[0], "the balancer to converge")
    seconds = time.monotonic() - started - STABLE_S
    assert balanced != joined, "the balancer moved nothing"
    check(imbalance(nodes))
    print(f"balanced in {seconds:.0f} s; shard moves: {shard_moves(nodes)}")

    for node in (nodes[0], fourth):
        with session_on(node) as s:
            for name, count in rows.items():
                found = s.execute(statement(f"SELECT k FROM {KEYSPACE}.{name}", "ALL", fetch_size=1000))
                assert sorted(r.k for r in found) == list(range(count)), f"{name} through {node.host}"


def test_a_fourth_node_gets_its_share_of_bytes_and_every_shard_evens_out(node_factory: NodeFactory) -> None:
    def within(problems: list[str]) -> None:
        assert not problems, problems

    rebalance(node_factory, {"t1": 25, "t2": 50, "t3": 100, "t4": 200}, 2000, within)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_bigger_rebalance_converges_within_the_tolerance(node_factory: NodeFactory) -> None:
    def within(problems: list[str]) -> None:
        assert not problems, problems

    rebalance(node_factory, {"t1": 200, "t2": 600, "t3": 1200, "t4": 2400}, 2000, within)
