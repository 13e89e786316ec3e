"""The replicated data path on real processes (issue #7 acceptance).

Three nodes, RF=3, one tablets keyspace and one vnode keyspace: QUORUM writes read back at
QUORUM and ALL from every coordinator; with one node killed (-9) QUORUM still works and ALL is
Unavailable; once it is back, ALL reads return every row written while it was down (read repair,
there are no hints) and the repair is durable on the returning node. Counters stay exact through
it all (each update is a Paxos round; test_replicated_rmw has the concurrent cases). And RF=1 on
three nodes: every node coordinates every key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.harness.clients import PATIENT_DRIVER
from tests.harness.node import NodeFactory, TestNode

SETTLE_SECONDS = 60.0
"""Upper bound for the failure detector to notice a node leave or return (liveness, not speed)."""
OPTIONS = {
    "num_tokens": 16,
    "write_request_timeout_in_ms": 30000,
    "read_request_timeout_in_ms": 30000,
    "range_request_timeout_in_ms": 30000,
    "counter_write_request_timeout_in_ms": 30000,
}
"""Generous coordinator budgets: replicas fsync every write, which can take seconds on a busy box,
and the pinned sessions never retry, so a 2 s default write timeout would fail the test."""
NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': %d}"
KEYSPACES = {
    "rt": f"CREATE KEYSPACE rt WITH replication = {NTS} AND tablets = {{'enabled': true}}",
    "rv": f"CREATE KEYSPACE rv WITH replication = {NTS} AND tablets = {{'enabled': false}}",
}


@contextmanager
def pinned(node: TestNode) -> Iterator[Any]:
    """A session whose every request is coordinated by ``node`` and never retried elsewhere."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy, WhiteListRoundRobinPolicy

    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([node.host]),
        retry_policy=FallthroughRetryPolicy(),
        request_timeout=60,
    )
    cluster = Cluster(
        [node.host],
        port=node.port,
        protocol_version=4,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        schema_metadata_enabled=False,
        **PATIENT_DRIVER,
    )
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def run(
    session: Any, cql: str, cl: str, params: tuple[Any, ...] = (), fetch_size: int | None = None
) -> list[Any]:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    stmt = SimpleStatement(cql, consistency_level=getattr(ConsistencyLevel, cl), fetch_size=fetch_size)
    return list(session.execute(stmt, params))


def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def create_schema(node: TestNode, rf: int) -> None:
    with pinned(node) as s:
        for name, ddl in KEYSPACES.items():
            s.execute(ddl % rf)
            s.execute(f"CREATE TABLE {name}.t (k int, c int, v text, PRIMARY KEY (k, c))")
            s.execute(f"CREATE TABLE {name}.counts (k int PRIMARY KEY, n counter)")


def all_rows(session: Any, ks: str, cl: str) -> set[tuple[int, int, str]]:
    return {(r.k, r.c, r.v) for r in run(session, f"SELECT k, c, v FROM {ks}.t", cl, fetch_size=7)}


def write_rows(session: Any, ks: str, keys: range, cl: str) -> set[tuple[int, int, str]]:
    written = set()
    for k in keys:
        for c in range(2):
            run(session, f"INSERT INTO {ks}.t (k, c, v) VALUES (%s, %s, %s)", cl, (k, c, f"v{k}.{c}"))
            written.add((k, c, f"v{k}.{c}"))
    return written


def bump(session: Any, ks: str, times: int) -> None:
    for k in range(times):
        run(session, f"UPDATE {ks}.counts SET n = n + %s WHERE k = %s", "QUORUM", (k + 1, k % 3))


def counts(session: Any, ks: str, cl: str) -> dict[int, int]:
    return {r.k: r.n for r in run(session, f"SELECT k, n FROM {ks}.counts", cl)}


def unavailable_at_all(session: Any, ks: str) -> bool:
    from cassandra import Unavailable

    try:
        run(session, f"SELECT * FROM {ks}.t WHERE k = 0", "ALL")
    except Unavailable:
        return True
    except Exception:  # the dying node's connection may fail the request differently meanwhile
        return False
    return False


def available_at_all(session: Any, table: str) -> bool:
    """Whether ``table`` (``ks`` alone means ``ks.t``) answers a read at ALL."""
    try:
        run(session, f"SELECT * FROM {table if '.' in table else table + '.t'} WHERE k = 0", "ALL")
    except Exception:
        return False
    return True


@pytest.mark.parametrize("ks", ["rt", "rv"])
def test_rf3_quorum_survives_a_kill_and_all_repairs_on_return(node_factory: NodeFactory, ks: str) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    create_schema(nodes[0], 3)
    with pinned(nodes[0]) as s0:
        expected = write_rows(s0, ks, range(0, 20), "QUORUM")
    for node in nodes:
        with pinned(node) as s:
            bump(s, ks, 4)
    for node in nodes:
        with pinned(node) as s:
            assert counts(s, ks, "QUORUM") == {0: 15, 1: 6, 2: 9}
            assert all_rows(s, ks, "QUORUM") == expected
            assert all_rows(s, ks, "ALL") == expected
            assert {(r.k, r.c, r.v) for r in run(s, f"SELECT k, c, v FROM {ks}.t WHERE k = 3", "ALL")} == {
                (3, 0, "v3.0"),
                (3, 1, "v3.1"),
            }

    victim = nodes[2]
    victim.kill()
    with pinned(nodes[0]) as s0, pinned(nodes[1]) as s1:
        wait_for(lambda: unavailable_at_all(s0, ks), "node 0 to see node 2 down")
        expected |= write_rows(s0, ks, range(20, 30), "QUORUM")
        expected |= write_rows(s1, ks, range(30, 40), "QUORUM")
        run(s1, f"DELETE FROM {ks}.t WHERE k = 1", "QUORUM")
        expected = {row for row in expected if row[0] != 1}
        assert all_rows(s0, ks, "QUORUM") == expected
        assert all_rows(s1, ks, "QUORUM") == expected
        bump(s0, ks, 4)
        bump(s1, ks, 4)
        assert counts(s0, ks, "QUORUM") == {0: 25, 1: 10, 2: 15}

    victim.start()
    with pinned(victim) as s2:
        wait_for(lambda: available_at_all(s2, ks), "node 2 to see its peers up")
        assert all_rows(s2, ks, "ALL") == expected
        # the ALL read repaired node 2 itself: at ONE it answers alone, from its own stores
        assert all_rows(s2, ks, "ONE") == expected
        bump(s2, ks, 4)
        assert counts(s2, ks, "ALL") == {0: 30, 1: 12, 2: 18}


def test_rf1_every_node_coordinates_every_key(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    create_schema(nodes[0], 1)
    for ks in KEYSPACES:
        expected: set[tuple[int, int, str]] = set()
        for i, node in enumerate(nodes):
            with pinned(node) as s:
                expected |= write_rows(s, ks, range(i * 10, i * 10 + 10), "ONE")
        for node in nodes:
            with pinned(node) as s:
                assert all_rows(s, ks, "ONE") == expected
                for k in range(0, 30, 7):
                    got = {
                        (r.k, r.c, r.v)
                        for r in run(s, f"SELECT k, c, v FROM {ks}.t WHERE k = %s", "ONE", (k,))
                    }
                    assert got == {row for row in expected if row[0] == k}
