"""Lightweight transactions across three real replicas (RF=3): Paxos decides, not a local lock.

Clients are pinned to different nodes so every node coordinates some transactions on the same
partition. One cluster serves all phases (starting three processes is the expensive part):
racing INSERT ... IF NOT EXISTS, a compare-and-set counter, a conditional batch, then kill -9 of
one node (SERIAL still works) and of a second (Unavailable), then both restart and the one that
missed the latest transactions coordinates the next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.harness.clients import PATIENT_DRIVER
from tests.harness.node import NodeFactory, TestNode

KEYSPACE = (
    "CREATE KEYSPACE px WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
)
OPTIONS = {
    "cas_contention_timeout_in_ms": 20000,
    "write_request_timeout_in_ms": 15000,
    "read_request_timeout_in_ms": 15000,
}
"""Generous budgets: two shared cores run three servers and the clients; a timeout is not a result."""
CLIENT_TIMEOUT = 120
"""Above the server's worst case for one CAS (contention, then accept and commit)."""
SETTLE_ATTEMPTS = 10
DOWN_WAIT = 60.0


@contextmanager
def pinned(node: TestNode, keyspace: str | None = "px") -> Iterator[Any]:
    """A session whose requests all go to ``node`` (so that node coordinates the transaction)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(
        load_balancing_policy=WhiteListRoundRobinPolicy([node.host]), request_timeout=CLIENT_TIMEOUT
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
        yield cluster.connect(keyspace)
    finally:
        cluster.shutdown()


def in_threads(work: list[Callable[[], Any]]) -> list[Any]:
    results: list[Any] = [None] * len(work)

    def run(i: int) -> None:
        try:
            results[i] = work[i]()
        except Exception as exc:  # reported to the test, not lost in a thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def race_inserts(nodes: list[TestNode], key: int) -> int:
    """Exactly one value is chosen; at most one client hears [applied]=True and it is that value.

    A contended proposal accepted by some replicas but not a quorum has an unknown outcome: the
    client gets WriteTimeout (write type CAS), as from Cassandra, and the serial read settles it.
    """
    from cassandra import WriteTimeout

    def insert(node: TestNode, value: int) -> Any:
        with pinned(node) as s:
            return s.execute("INSERT INTO once (k, v) VALUES (%s, %s) IF NOT EXISTS", (key, value)).one()

    results = in_threads([lambda n=n, i=i: insert(n, i) for i, n in enumerate(nodes * 2)])
    unknown = {i for i, r in enumerate(results) if isinstance(r, WriteTimeout)}
    errors = [r for i, r in enumerate(results) if isinstance(r, Exception) and i not in unknown]
    assert not errors, errors
    winners = [i for i, r in enumerate(results) if i not in unknown and r.applied]
    with pinned(nodes[key % len(nodes)]) as s:
        row = settled(lambda: s.execute("UPDATE once SET v = -1 WHERE k = %s IF v = -2", (key,)).one())
    assert not row.applied
    if winners or not unknown:
        assert winners == [row.v], (results, row)
    else:  # every answer was unknown or a loss: the chosen value (if any) is an unknown one's
        assert row.v is None or row.v in unknown, (results, row)
    assert {r.v for i, r in enumerate(results) if i not in unknown and not r.applied} <= {row.v}
    return len(unknown)


def settled(read: Callable[[], Any]) -> Any:
    """Run a CAS that never applies (a serial read); on WriteTimeout, which for it means only
    "contended, no answer", ask again: the value is what the test checks, not the latency."""
    from cassandra import WriteTimeout

    for _ in range(SETTLE_ATTEMPTS - 1):
        try:
            return read()
        except WriteTimeout:
            continue
    return read()


def serial_read(session: Any, key: int) -> tuple[int, frozenset[str]]:
    """The counter's value through Paxos: a CAS whose condition never holds returns the current row."""
    row = settled(
        lambda: session.execute(
            "UPDATE counter SET v = -1 WHERE k = %s IF v = -2 AND ids = {'never'}", (key,)
        ).one()
    )
    assert not row.applied
    return row.v, frozenset(row.ids or ())


def count_up(node: TestNode, client: int, increments: int) -> tuple[set[str], set[str]]:
    """Compare-and-set increments; returns (ids applied, ids whose outcome is unknown: WriteTimeout)."""
    from cassandra import WriteTimeout

    applied: set[str] = set()
    unknown: set[str] = set()
    with pinned(node) as s:
        current, _ = serial_read(s, 0)
        attempt = 0
        while len(applied) < increments:
            attempt += 1
            tag = f"c{client}-{attempt}"
            try:
                row = s.execute(
                    "UPDATE counter SET v = %s, ids = ids + %s WHERE k = 0 IF v = %s",
                    (current + 1, {tag}, current),
                ).one()
            except WriteTimeout:
                unknown.add(tag)
                current, _ = serial_read(s, 0)
                continue
            if row.applied:
                applied.add(tag)
                current += 1
            else:
                current = row.v
    return applied, unknown


def wait_down(observer: TestNode, count: int) -> None:
    """Until ``observer``'s failure detector has reported ``count`` peers DOWN."""
    deadline = time.monotonic() + DOWN_WAIT
    while observer.log_tail(2000).count("node DOWN host_id") < count:
        assert time.monotonic() < deadline, "peers did not mark the killed node DOWN"
        time.sleep(0.2)


def test_paxos_across_three_replicas(node_factory: NodeFactory) -> None:
    from cassandra import ConsistencyLevel, Unavailable
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.query import SimpleStatement

    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0], keyspace=None) as s:
        s.execute(KEYSPACE)
    with pinned(nodes[0]) as s:
        s.execute("CREATE TABLE once (k int PRIMARY KEY, v int)")
        s.execute("CREATE TABLE counter (k int PRIMARY KEY, v int, ids set<text>)")
        s.execute("CREATE TABLE acct (k int, c int, bal int, PRIMARY KEY (k, c))")
        assert s.execute("INSERT INTO counter (k, v) VALUES (0, 0) IF NOT EXISTS").one().applied

    # Racing INSERT ... IF NOT EXISTS from every node: exactly one wins, the others see its value.
    unknown = sum(race_inserts(nodes, key) for key in range(5))
    assert unknown < 5 * len(nodes) * 2 // 2, "most racing inserts ended without an answer"

    # A compare-and-set counter: its final value is exactly the number of increments that applied.
    results = in_threads([lambda n=n, c=c: count_up(n, c, 4) for c, n in enumerate(nodes * 2)])
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    applied = set().union(*(a for a, _ in results))
    unknown = set().union(*(u for _, u in results))
    with pinned(nodes[1]) as s:
        value, ids = serial_read(s, 0)
    assert len(applied) == 24
    assert applied <= ids <= applied | unknown
    assert value == len(ids)
    # Commits reach the base tables through the normal apply path: plain QUORUM reads agree.
    for node in nodes:
        with pinned(node) as s:
            stmt = SimpleStatement(
                "SELECT v, ids FROM counter WHERE k = 0", consistency_level=ConsistencyLevel.QUORUM
            )
            row = s.execute(stmt).one()
            assert (row.v, frozenset(row.ids)) == (value, ids)

    # A conditional batch on one partition: all statements in one round, conditions on two rows.
    with pinned(nodes[2]) as s:
        assert s.execute("INSERT INTO acct (k, c, bal) VALUES (1, 1, 10) IF NOT EXISTS").one().applied
        assert s.execute("INSERT INTO acct (k, c, bal) VALUES (1, 2, 0) IF NOT EXISTS").one().applied
        move = (
            "BEGIN BATCH UPDATE acct SET bal = 4 WHERE k = 1 AND c = 1 IF bal = 10; "
            "UPDATE acct SET bal = 6 WHERE k = 1 AND c = 2 IF bal = 0; APPLY BATCH"
        )
        assert s.execute(move).one().applied
        again = s.execute(move).all()
        assert not again[0].applied and sorted((r.c, r.bal) for r in again) == [(1, 4), (2, 6)]

    # kill -9 one replica: SERIAL transactions still reach a quorum.
    nodes[2].kill()
    with pinned(nodes[0]) as s:
        assert s.execute("INSERT INTO once (k, v) VALUES (100, 1) IF NOT EXISTS").one().applied
        row = s.execute("INSERT INTO once (k, v) VALUES (100, 2) IF NOT EXISTS").one()
        assert not row.applied and row.v == 1
    with pinned(nodes[1]) as s:
        update = s.prepare("UPDATE once SET v = ? WHERE k = 100 IF v = ?")
        update.serial_consistency_level = ConsistencyLevel.LOCAL_SERIAL
        assert s.execute(update, (3, 1)).one().applied

    # A second one down: fewer than a serial quorum alive -> Unavailable.
    nodes[1].kill()
    wait_down(nodes[0], 2)
    with pinned(nodes[0]) as s:
        stmt = SimpleStatement(
            "INSERT INTO once (k, v) VALUES (101, 1) IF NOT EXISTS",
            serial_consistency_level=ConsistencyLevel.SERIAL,
            retry_policy=FallthroughRetryPolicy(),  # the server's error, not NoHostAvailable
        )
        try:
            s.execute(stmt)
        except Unavailable as exc:
            assert exc.consistency == ConsistencyLevel.SERIAL
        else:
            raise AssertionError("an LWT with 1 of 3 replicas alive succeeded")

    # Both come back. The one that missed every transaction on k=100 coordinates the next: the
    # promises bring it the latest commit and the current row, and its own replica catches up.
    nodes[1].start()
    nodes[2].start()
    with pinned(nodes[2]) as s:
        row = s.execute("UPDATE once SET v = 4 WHERE k = 100 IF v = 3").one()
        assert row.applied, row
        at_all = SimpleStatement("SELECT v FROM once WHERE k = 100", consistency_level=ConsistencyLevel.ALL)
        assert s.execute(at_all).one().v == 4
        serial = SimpleStatement(
            "SELECT v FROM once WHERE k = 100", consistency_level=ConsistencyLevel.SERIAL
        )
        assert s.execute(serial).one().v == 4


def test_conditional_writes_keep_indexes_and_views_on_a_single_node(session: Any) -> None:
    """A node of one is a cluster too: Paxos with one acceptor, whose commits update derived data."""
    session.execute(
        "CREATE KEYSPACE solo WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    session.execute("CREATE TABLE solo.t (k int PRIMARY KEY, v int)")
    session.execute("CREATE INDEX ON solo.t (v)")
    session.execute(
        "CREATE MATERIALIZED VIEW solo.by_v AS SELECT * FROM solo.t "
        "WHERE v IS NOT NULL AND k IS NOT NULL PRIMARY KEY (v, k)"
    )
    assert session.execute("INSERT INTO solo.t (k, v) VALUES (1, 10) IF NOT EXISTS").one().applied
    assert session.execute("UPDATE solo.t SET v = 11 WHERE k = 1 IF v = 10").one().applied
    assert [r.k for r in session.execute("SELECT k FROM solo.t WHERE v = 11")] == [1]
    assert list(session.execute("SELECT k FROM solo.t WHERE v = 10")) == []
    assert [(r.v, r.k) for r in session.execute("SELECT v, k FROM solo.by_v")] == [(11, 1)]
