"""Chaos on real processes: pauses and partitions under QUORUM writes, LWT and DDL (issue 18).

Three nodes, RF=3. While client threads write keys at QUORUM, compare-and-set a counter row by
one (two threads, so rounds contend) and create tables, a seeded schedule
(`tests.harness.chaos.plan_faults`) pauses one node at a time with SIGSTOP (the group0 leader
among them) and partitions nodes, both ways or one way, through their test-only REST fault
injector (`tests.harness.nemesis`). Once everything is healed, every acknowledged write must
read back at QUORUM and ALL from every coordinator, the CAS counter must equal the acknowledged
rounds (plus at most the unanswered ones), and every acknowledged table must exist on every
node. The short schedule runs in `make test`, the long ones in `make soak`; a failure prints the
seed and the applied faults so it replays.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.harness.chaos import FaultKind, History, cas_problem, missing_tables, missing_writes, plan_faults
from tests.harness.clients import PATIENT_DRIVER
from tests.harness.nemesis import FAULT_OPTIONS, Nemesis, rest
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import statement, wait_for

OPTIONS = {
    **FAULT_OPTIONS,
    "write_request_timeout_in_ms": 10000,
    "read_request_timeout_in_ms": 10000,
    "range_request_timeout_in_ms": 30000,
    "cas_contention_timeout_in_ms": 5000,
}
"""Coordinator budgets for a loaded two-core box; requests that run out are only unacknowledged."""
CLIENT_TIMEOUT = 20.0
"""Client-side bound: a request to a paused coordinator ends here, unacknowledged."""
SETTLE_SECONDS = 120.0
"""After the heal: how long the cluster may take to see every node up and agree on the schema
(a liveness bound, not a speed check)."""
DDL_PAUSE = 0.5


@contextmanager
def driver(nodes: list[TestNode], pinned: TestNode | None = None) -> Iterator[Any]:
    """A session over all nodes (or only `pinned`); no driver retries, so every answer is the server's."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy, RoundRobinPolicy, WhiteListRoundRobinPolicy

    policy = RoundRobinPolicy() if pinned is None else WhiteListRoundRobinPolicy([pinned.host])
    profile = ExecutionProfile(
        load_balancing_policy=policy, retry_policy=FallthroughRetryPolicy(), request_timeout=CLIENT_TIMEOUT
    )
    cluster = Cluster(
        [n.host for n in nodes] if pinned is None else [pinned.host],
        port=nodes[0].port,
        protocol_version=4,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        schema_metadata_enabled=False,
        **PATIENT_DRIVER,
    )
    try:
        yield cluster.connect()
    finally:
        cluster.shutdown()


def definitely_not_applied(exc: BaseException) -> bool:
    """Refusals decided before anything was written; any other failure may have been applied."""
    from cassandra import InvalidRequest, Unavailable

    return isinstance(exc, Unavailable | InvalidRequest)


def writer(session: Any, history: History, stop: threading.Event) -> None:
    insert = statement("INSERT INTO chaos.kv (k, v) VALUES (%s, %s)")
    key = 0
    while not stop.is_set():
        try:
            session.execute(insert, (key, key))
            history.write(key, acked=True)
        except Exception as exc:
            history.write(key, acked=False)
            history.failed(exc)
        key += 1


def cas_client(session: Any, history: History, stop: threading.Event) -> None:
    read = statement("SELECT n FROM chaos.cas WHERE id = 0", "SERIAL")
    update = statement("UPDATE chaos.cas SET n = %s WHERE id = 0 IF n = %s")
    while not stop.is_set():
        try:
            current = session.execute(read).one().n
        except Exception as exc:
            history.failed(exc)
            continue
        try:
            history.cas(bool(session.execute(update, (current + 1, current)).one().applied))
        except Exception as exc:
            history.failed(exc)
            if not definitely_not_applied(exc):
                history.cas(None)


def ddl_client(session: Any, history: History, stop: threading.Event) -> None:
    n = 0
    while not stop.is_set():
        name = f"ddl_{n}"
        try:
            session.execute(statement(f"CREATE TABLE chaos.{name} (k int PRIMARY KEY, v int)"))
            history.table(name, acked=True)
        except Exception as exc:
            history.table(name, acked=False)
            history.failed(exc)
        n += 1
        stop.wait(DDL_PAUSE)


def reads_at_all(session: Any) -> bool:
    try:
        session.execute(statement("SELECT n FROM chaos.cas WHERE id = 0", "ALL"))
    except Exception:
        return False
    return True


def tables_on(session: Any) -> set[str]:
    rows = session.execute(
        statement("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'chaos'", "ONE")
    )
    return {r.table_name for r in rows}


def verify(nodes: list[TestNode], history: History) -> list[str]:
    """Every problem the healed cluster shows, from each node as coordinator."""
    problems: list[str] = []
    counters = {}
    for node in nodes:
        with driver(nodes, pinned=node) as s:
            wait_for(lambda: reads_at_all(s), f"{node.host} to see every peer up", SETTLE_SECONDS)
            for cl in ("QUORUM", "ALL"):
                rows = s.execute(statement("SELECT k FROM chaos.kv", cl, fetch_size=500))
                problems += [
                    f"{node.host} at {cl}: {p}" for p in missing_writes(history, (r.k for r in rows))
                ]
            counters[node.host] = (
                s.execute(statement("SELECT n FROM chaos.cas WHERE id = 0", "SERIAL")).one().n
            )
            deadline = time.monotonic() + SETTLE_SECONDS
            while missing_tables(history, node.host, tables_on(s)) and time.monotonic() < deadline:
                time.sleep(0.5)
            problems += missing_tables(history, node.host, tables_on(s))
    if len(set(counters.values())) != 1:
        problems.append(f"SERIAL reads of the CAS counter disagree: {counters}")
    problem = cas_problem(history, next(iter(counters.values())))
    if problem:
        problems.append(problem)
    return problems


def run_chaos(node_factory: NodeFactory, seed: int, rounds: int, hold: tuple[float, float]) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with driver(nodes, pinned=nodes[0]) as s:
        s.execute(
            "CREATE KEYSPACE chaos WITH replication = "
            "{'class': 'NetworkTopologyStrategy', 'replication_factor': 3}"
        )
        s.execute(statement("CREATE TABLE chaos.kv (k int PRIMARY KEY, v int)"))
        s.execute(statement("CREATE TABLE chaos.cas (id int PRIMARY KEY, n int)"))
        assert s.execute(statement("INSERT INTO chaos.cas (id, n) VALUES (0, 0) IF NOT EXISTS")).one().applied

    history = History()
    nemesis = Nemesis(nodes)
    plan = plan_faults(seed, rounds, len(nodes), hold)
    stop = threading.Event()
    with driver(nodes) as session:
        workers = [
            threading.Thread(target=work, args=(session, history, stop), name=work.__name__)
            for work in (writer, cas_client, cas_client, ddl_client)
        ]
        for t in workers:
            t.start()
        try:
            nemesis.run(plan)  # heals each fault before the next
            # on a slow box a short schedule may end before every client got an answer: the
            # healed cluster must then make progress (liveness), and the checks need some
            wait_for(
                lambda: bool(history.acked_keys and history.cas_acked and history.acked_tables),
                "progress",
                SETTLE_SECONDS,
            )
        finally:
            nemesis.heal()
            stop.set()
            for t in workers:
                t.join(CLIENT_TIMEOUT * 3)
    context = (
        f"seed {seed}; faults:\n  "
        + "\n  ".join(nemesis.log)
        + f"\nclients: {history.summary()}\ninternode messages dropped: {nemesis.dropped}"
    )
    print(context)
    assert all(node.running for node in nodes), f"a node died under chaos; {context}"
    assert history.acked_keys and history.cas_acked and history.acked_tables, f"no progress; {context}"
    if any(f.kind in (FaultKind.ISOLATE, FaultKind.SPLIT, FaultKind.ONE_WAY) for f in plan):
        assert sum(nemesis.dropped.values()) > 0, f"the partitions dropped nothing; {context}"
    problems = verify(nodes, history)
    assert not problems, "\n".join(problems) + "\n" + context


def test_chaos_short(node_factory: NodeFactory) -> None:
    run_chaos(node_factory, seed=18, rounds=5, hold=(1.0, 3.0))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chaos_long(node_factory: NodeFactory, seed: int) -> None:
    run_chaos(node_factory, seed=seed, rounds=40, hold=(2.0, 8.0))


def test_fault_api_is_off_unless_enabled_and_refuses_non_members(node_factory: NodeFactory) -> None:
    import urllib.error

    plain = node_factory.start_node()
    with pytest.raises(urllib.error.HTTPError) as off:
        rest(plain, "POST", f"/faults/block?address={plain.host}")
    assert off.value.code == 404
    enabled = node_factory.start_node(options=FAULT_OPTIONS)
    with pytest.raises(urllib.error.HTTPError) as bad:
        rest(enabled, "POST", "/faults/block?address=10.9.9.9")
    assert bad.value.code == 400
    assert "not a cluster member" in bad.value.read().decode()
    shown = rest(enabled, "GET", "/faults")
    assert shown["blocked"] == [] and shown["dropped"] == 0 and not shown["failing"]
    refusals = {
        "/faults/fail?verb=tablet.strem": "no internode request verb",
        f"/faults/fail?verb=tablet.resize&address={enabled.host}": "towards this node itself",
    }
    for path, reason in refusals.items():
        with pytest.raises(urllib.error.HTTPError) as bad:
            rest(enabled, "POST", path)
        assert bad.value.code == 400 and reason in bad.value.read().decode(), path
    shown = rest(enabled, "POST", f"/faults/fail?verb=tablet.stream&address={enabled.host}")
    assert shown["failing"] == {enabled.host: ["tablet.stream"]}
    assert not rest(enabled, "POST", "/faults/heal")["failing"]
