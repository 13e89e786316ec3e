"""Read-modify-write at RF=3 on real processes: counters and list/UDT element operations.

Each runs as a Paxos round on its partition (``query.paxos_rmw``), so updates from sessions
pinned to *different* coordinators are all kept: concurrent mixed +/- counter increments add up
exactly (at QUORUM and ALL, from every node), also right after one node is killed -9 (before any
failure detector noticed, and while it stays down); list index set/delete, removal by value and
UDT field set/delete are read back at ALL from every node; concurrent list appends and index
sets lose nothing. Tablets and vnodes keyspaces in the same cluster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, available_at_all, pinned, run, wait_for

RMW_OPTIONS = {**OPTIONS, "cas_contention_timeout_in_ms": 60000, "write_request_timeout_in_ms": 10000}
"""Concurrent updates of one partition contend in Paxos; give them room (liveness, not speed). A
Paxos round that waits for a silent replica is retried after the write timeout, so keep it well
inside the counter budget (30 s): right after the kill -9 a round can wait for the dead node."""
KEYSPACES = ("rt", "rv")
NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"


def create_schema(node: TestNode) -> None:
    with pinned(node) as s:
        for ks, tablets in (("rt", "true"), ("rv", "false")):
            s.execute(f"CREATE KEYSPACE {ks} WITH replication = {NTS} AND tablets = {{'enabled': {tablets}}}")
            s.execute(f"CREATE TYPE {ks}.pt (a int, b text)")
            s.execute(f"CREATE TABLE {ks}.counts (k int PRIMARY KEY, n counter, m counter)")
            s.execute(f"CREATE TABLE {ks}.lists (k int PRIMARY KEY, l list<int>, u pt)")


def in_parallel(nodes: list[TestNode], work: Callable[[Any, int], None]) -> None:
    """``work(session, i)`` in one thread per node, each session pinned to its node; re-raises."""
    errors: list[BaseException] = []

    def body(i: int, node: TestNode) -> None:
        try:
            with pinned(node) as s:
                work(s, i)
        except BaseException as exc:  # reported below, with the others'
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i, n)) for i, n in enumerate(nodes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


Totals = dict[int, tuple[int, int]]


def increments(ks: str, rounds: int) -> tuple[Callable[[Any, int], None], Callable[[int], Totals]]:
    """Work for ``in_parallel`` (mixed +/- on two counters of two partitions) and the totals
    that ``workers`` threads of it add."""

    def delta(i: int, r: int) -> tuple[int, int]:
        return (i + 1) * (1 if r % 3 else -2), r % 5 - 2

    def work(session: Any, i: int) -> None:
        for r in range(rounds):
            n, m = delta(i, r)
            run(
                session,
                f"UPDATE {ks}.counts SET n = n + %s, m = m + %s WHERE k = %s",
                "QUORUM",
                (n, m, r % 2),
            )

    def expected(workers: int) -> Totals:
        totals = {0: (0, 0), 1: (0, 0)}
        for i in range(workers):
            for r in range(rounds):
                n, m = delta(i, r)
                tn, tm = totals[r % 2]
                totals[r % 2] = (tn + n, tm + m)
        return totals

    return work, expected


def totals(session: Any, ks: str, cl: str) -> dict[int, tuple[int, int]]:
    return {r.k: (r.n, r.m) for r in run(session, f"SELECT k, n, m FROM {ks}.counts", cl)}


def add(a: dict[int, tuple[int, int]], b: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    return {k: (a[k][0] + b[k][0], a[k][1] + b[k][1]) for k in a}


def test_concurrent_counters_from_every_coordinator_are_exact_through_a_kill(
    node_factory: NodeFactory,
) -> None:
    nodes = node_factory.start_cluster(3, options=RMW_OPTIONS)
    create_schema(nodes[0])
    rounds = 12
    for ks in KEYSPACES:
        work, expected_of = increments(ks, rounds)
        in_parallel(nodes, work)
        expected = expected_of(3)
        for node in nodes:
            with pinned(node) as s:
                assert totals(s, ks, "QUORUM") == expected
                assert totals(s, ks, "ALL") == expected

    victim = nodes[2]
    victim.kill()  # no waiting: the survivors may still believe it is up
    survivors = nodes[:2]
    after_kill: dict[str, dict[int, tuple[int, int]]] = {}
    for ks in KEYSPACES:
        work, expected_of = increments(ks, rounds)
        in_parallel(survivors, work)
        after_kill[ks] = add(expected_of(3), expected_of(2))
        for node in survivors:
            with pinned(node) as s:
                assert totals(s, ks, "QUORUM") == after_kill[ks]

    victim.start()
    for node in nodes:  # every coordinator must see every replica up before reading at ALL
        with pinned(node) as s:
            wait_for(lambda s=s: available_at_all(s, "rt.counts"), f"{node.host} to see its peers up")
    for ks in KEYSPACES:
        for node in nodes:
            with pinned(node) as s:
                assert totals(s, ks, "ALL") == after_kill[ks]


def list_row(session: Any, ks: str, cl: str) -> tuple[list[int], Any]:
    (row,) = run(session, f"SELECT l, u FROM {ks}.lists WHERE k = 0", cl)
    return list(row.l or []), row.u


def test_list_and_udt_element_operations_at_rf3(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=RMW_OPTIONS)
    create_schema(nodes[0])
    for ks in KEYSPACES:
        with pinned(nodes[0]) as s0, pinned(nodes[1]) as s1, pinned(nodes[2]) as s2:
            row = "(0, [1, 2, 3, 4, 5, 4], {a: 1, b: 'x'})"
            run(s0, f"INSERT INTO {ks}.lists (k, l, u) VALUES {row}", "ALL")
            run(s0, f"UPDATE {ks}.lists SET l[1] = 20 WHERE k = 0", "QUORUM")
            run(s1, f"DELETE l[0] FROM {ks}.lists WHERE k = 0", "QUORUM")
            run(s2, f"UPDATE {ks}.lists SET l = l - [4] WHERE k = 0", "QUORUM")
            run(s1, f"UPDATE {ks}.lists SET u.a = 7 WHERE k = 0", "QUORUM")
            run(s2, f"DELETE u.b FROM {ks}.lists WHERE k = 0", "ALL")
            batch = (
                f"BEGIN BATCH UPDATE {ks}.lists SET l[0] = 30 WHERE k = 0; "
                f"UPDATE {ks}.lists SET u.b = 'y' WHERE k = 0; APPLY BATCH"
            )
            run(s0, batch, "QUORUM")
        for node in nodes:
            with pinned(node) as s:
                values, udt = list_row(s, ks, "ALL")
                assert values == [30, 3, 5]
                assert (udt.a, udt.b) == (7, "y")


def test_element_operations_read_the_quorum_not_the_coordinators_stale_store(
    node_factory: NodeFactory,
) -> None:
    """A coordinator that missed the list's write still finds its elements: the Paxos read is
    reconciled from a quorum (also for a list element set inside an LWT)."""
    nodes = node_factory.start_cluster(3, options=RMW_OPTIONS)
    create_schema(nodes[0])
    victim = nodes[2]
    victim.kill()
    with pinned(nodes[0]) as s0:
        for ks in KEYSPACES:
            run(s0, f"INSERT INTO {ks}.lists (k, l) VALUES (1, [1, 2, 3])", "QUORUM")
    victim.start()
    for node in nodes:  # every coordinator must see every replica up (the reads below are at ALL)
        with pinned(node) as s:
            wait_for(lambda s=s: available_at_all(s, "rt.lists"), f"{node.host} to see its peers up")
    with pinned(victim) as s2:
        for ks in KEYSPACES:
            run(s2, f"UPDATE {ks}.lists SET l[1] = 99 WHERE k = 1", "QUORUM")
            (applied,) = run(s2, f"UPDATE {ks}.lists SET l[0] = 7 WHERE k = 1 IF EXISTS", "QUORUM")
            assert applied.applied
    for ks in KEYSPACES:
        for node in nodes:
            with pinned(node) as s:
                (row,) = run(s, f"SELECT l FROM {ks}.lists WHERE k = 1", "ALL")
                assert row.l == [7, 99, 3]


def test_element_operations_and_counters_at_rf1_on_three_nodes(node_factory: NodeFactory) -> None:
    """RF=1: a partition on this node takes the local lock path, one elsewhere a one-replica round."""
    nodes = node_factory.start_cluster(3, options=RMW_OPTIONS)
    with pinned(nodes[0]) as s:
        s.execute("CREATE KEYSPACE r1 WITH replication = " + NTS.replace("3", "1"))
        s.execute("CREATE TABLE r1.lists (k int PRIMARY KEY, l list<int>)")
        s.execute("CREATE TABLE r1.counts (k int PRIMARY KEY, n counter)")
        for k in range(6):
            run(s, "INSERT INTO r1.lists (k, l) VALUES (%s, [0, 0])", "ONE", (k,))
    for i, node in enumerate(nodes):
        with pinned(node) as s:
            for k in range(6):
                run(s, "UPDATE r1.lists SET l[%s] = %s WHERE k = %s", "ONE", (i % 2, i + 1, k))
                run(s, "UPDATE r1.counts SET n = n + %s WHERE k = %s", "ONE", (i + 1, k))
    for node in nodes:
        with pinned(node) as s:
            assert {r.k: r.l for r in run(s, "SELECT k, l FROM r1.lists", "ONE")} == {
                k: [3, 2] for k in range(6)
            }
            assert {r.k: r.n for r in run(s, "SELECT k, n FROM r1.counts", "ONE")} == {k: 6 for k in range(6)}


def test_concurrent_list_appends_and_index_sets_lose_nothing(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=RMW_OPTIONS)
    create_schema(nodes[0])
    count = 15
    for ks in KEYSPACES:
        with pinned(nodes[0]) as s:
            run(s, f"INSERT INTO {ks}.lists (k, l) VALUES (0, [0, 0])", "ALL")

        def work(session: Any, i: int, ks: str = ks) -> None:
            for r in range(count):
                if i == 1:  # index sets of the two original elements, which appends never move
                    run(session, f"UPDATE {ks}.lists SET l[%s] = %s WHERE k = 0", "QUORUM", (r % 2, -r))
                else:
                    value = i * 1000 + r
                    run(session, f"UPDATE {ks}.lists SET l = l + [%s] WHERE k = 0", "QUORUM", (value,))

        in_parallel(nodes, work)
        appended = sorted(i * 1000 + r for i in (0, 2) for r in range(count))
        for node in nodes:
            with pinned(node) as s:
                values, _ = list_row(s, ks, "ALL")
                assert values[:2] == [-(count - 1), -(count - 2)]  # the last set of each index
                assert sorted(values[2:]) == appended


def test_statement_semantics_hold_through_the_paxos_path(node_factory: NodeFactory) -> None:
    """Errors computed from the read (overflow, index out of bounds) write nothing; a COUNTER
    batch naming a partition twice counts both; a counter deletion is a deletion."""
    from cassandra import InvalidRequest

    nodes = node_factory.start_cluster(3, options=RMW_OPTIONS)
    create_schema(nodes[0])
    with pinned(nodes[0]) as s0, pinned(nodes[1]) as s1:
        for ks in KEYSPACES:
            run(s0, f"UPDATE {ks}.counts SET n = n + %s WHERE k = 5", "QUORUM", ((1 << 63) - 2,))
            try:
                run(s1, f"UPDATE {ks}.counts SET n = n + 5 WHERE k = 5", "QUORUM")
                raise AssertionError("an overflowing increment was accepted")
            except InvalidRequest as exc:
                assert "overflow" in str(exc)
            batch = (
                f"BEGIN COUNTER BATCH UPDATE {ks}.counts SET n = n + 1 WHERE k = 6; "
                f"UPDATE {ks}.counts SET n = n + 2, m = m - 1 WHERE k = 6; "
                f"UPDATE {ks}.counts SET n = n + 4 WHERE k = 7; APPLY BATCH"
            )
            run(s1, batch, "ALL")
            run(s0, f"DELETE FROM {ks}.counts WHERE k = 7", "QUORUM")
            assert totals(s0, ks, "ALL") == {5: ((1 << 63) - 2, None), 6: (3, -1)}

            run(s0, f"INSERT INTO {ks}.lists (k, l) VALUES (2, [1])", "QUORUM")
            try:
                run(s1, f"UPDATE {ks}.lists SET l[3] = 9 WHERE k = 2", "QUORUM")
                raise AssertionError("an out of bounds list index was accepted")
            except InvalidRequest:
                pass
            (row,) = run(s1, f"SELECT l FROM {ks}.lists WHERE k = 2", "ALL")
            assert row.l == [1]
