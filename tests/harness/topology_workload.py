"""Clients that run while the cluster changes shape, and the checks made once it settled.

A QUORUM writer records every acknowledged key, and a compare-and-set client increments a
counter (``IF n = <read>``) recording acknowledged, refused and unanswered rounds
(`tests.harness.chaos.History`). LWT is refused, retryably, while a tablet is written to two
replica sets; the client simply tries again. Afterwards every acknowledged key must read back at
QUORUM and at ALL through every given node, and the counter must equal the acknowledged rounds
(give or take the unanswered ones, which may or may not have applied).

The keyspace uses tablets by default; ``create_schema(..., tablets=False)`` makes the same
tables in a vnode keyspace (SimpleStrategy), and a ``Workload``/``verify`` given its name runs
and checks the same clients there, so one scenario can drive both kinds side by side.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.harness.chaos import History, cas_problem, missing_writes
from tests.harness.clients import pinned_cluster
from tests.harness.node import TestNode

KEYSPACE = "tw"
CLIENT_TIMEOUT = 30.0
SETTLE_SECONDS = 180.0
"""Liveness bound for the cluster to settle after an operation (not a speed check)."""
OPTIONS = {
    "num_tokens": 16,
    "write_request_timeout_in_ms": 20000,
    "read_request_timeout_in_ms": 20000,
    "range_request_timeout_in_ms": 30000,
    "cas_contention_timeout_in_ms": 5000,
}
"""Coordinator budgets for a loaded two-core box: replicas fsync every write."""


def post(url: str, timeout: float = 900) -> tuple[int, str]:
    request = urllib.request.Request(url, method="POST", data=b"")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def host_id(node: TestNode) -> uuid.UUID:
    with urllib.request.urlopen(node.api_url + "/storage_service/hostid/local", timeout=30) as response:
        return uuid.UUID(json.loads(response.read()))


def wait_for(check: Callable[[], bool], what: str, seconds: float = SETTLE_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f}s waiting for {what}")
        time.sleep(0.5)


@contextmanager
def session_on(node: TestNode) -> Iterator[Any]:
    """A session whose every request ``node`` coordinates; the driver never retries."""
    with pinned_cluster(
        node, never_retry=True, request_timeout=CLIENT_TIMEOUT, schema_metadata_enabled=False
    ) as cluster:
        yield cluster.connect()


def statement(cql: str, cl: str = "QUORUM", fetch_size: int | None = None) -> Any:
    from cassandra import ConsistencyLevel
    from cassandra.query import SimpleStatement

    return SimpleStatement(
        cql,
        consistency_level=getattr(ConsistencyLevel, cl),
        serial_consistency_level=ConsistencyLevel.SERIAL,
        fetch_size=fetch_size,
    )


def create_schema(node: TestNode, rf: int = 3, keyspace: str = KEYSPACE, tablets: bool = True) -> None:
    with session_on(node) as s:
        if tablets:
            s.execute(
                f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'NetworkTopologyStrategy', "
                f"'replication_factor': {rf}}} AND tablets = {{'enabled': true}}"
            )
        else:
            s.execute(
                f"CREATE KEYSPACE {keyspace} WITH replication = {{'class': 'SimpleStrategy', "
                f"'replication_factor': {rf}}}"
            )
        s.execute(f"CREATE TABLE {keyspace}.kv (k int PRIMARY KEY, v int)")
        s.execute(f"CREATE TABLE {keyspace}.cas (id int PRIMARY KEY, n int)")
        insert = statement(f"INSERT INTO {keyspace}.cas (id, n) VALUES (0, 0) IF NOT EXISTS")
        assert s.execute(insert).one().applied


def _definitely_not_applied(exc: BaseException) -> bool:
    from cassandra import InvalidRequest, Unavailable

    return isinstance(exc, Unavailable | InvalidRequest)


class Workload:
    """The two clients, coordinated by one node that stays in the cluster throughout."""

    def __init__(self, node: TestNode, keyspace: str = KEYSPACE) -> None:
        self.node = node
        self.keyspace = keyspace
        self.history = History()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._next_key = 0

    def __enter__(self) -> Workload:
        for work in (self._writer, self._cas):
            thread = threading.Thread(target=work, name=work.__name__)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(CLIENT_TIMEOUT * 3)

    def wait_progress(self) -> None:
        """Some writes and CAS rounds acknowledged since now (the clients do work meanwhile)."""
        keys, cas = len(self.history.acked_keys), self.history.cas_acked
        wait_for(
            lambda: len(self.history.acked_keys) > keys + 5 and self.history.cas_acked > cas,
            f"client progress ({self.history.summary()})",
        )

    def _writer(self) -> None:
        with session_on(self.node) as s:
            insert = statement(f"INSERT INTO {self.keyspace}.kv (k, v) VALUES (%s, %s)")
            while not self._stop.is_set():
                key = self._next_key
                self._next_key += 1
                try:
                    s.execute(insert, (key, key))
                    self.history.write(key, acked=True)
                except Exception as exc:  # unacknowledged: it need not be there
                    self.history.write(key, acked=False)
                    self.history.failed(exc)
                    time.sleep(0.05)

    def _cas(self) -> None:
        with session_on(self.node) as s:
            read = statement(f"SELECT n FROM {self.keyspace}.cas WHERE id = 0", "SERIAL")
            update = statement(f"UPDATE {self.keyspace}.cas SET n = %s WHERE id = 0 IF n = %s")
            while not self._stop.is_set():
                try:
                    current = s.execute(read).one().n
                except Exception as exc:  # e.g. refused while the tablet is written to two sets
                    self.history.failed(exc)
                    time.sleep(0.1)
                    continue
                try:
                    self.history.cas(bool(s.execute(update, (current + 1, current)).one().applied))
                except Exception as exc:
                    self.history.failed(exc)
                    if not _definitely_not_applied(exc):
                        self.history.cas(None)
                    time.sleep(0.1)


def verify(nodes: list[TestNode], history: History, keyspace: str = KEYSPACE) -> list[str]:
    """Every problem the settled cluster shows, through each of ``nodes`` as coordinator."""
    problems: list[str] = []
    counters = {}
    for node in nodes:
        with session_on(node) as s:
            for cl in ("QUORUM", "ALL"):
                rows = s.execute(statement(f"SELECT k FROM {keyspace}.kv", cl, fetch_size=500))
                lost = missing_writes(history, (r.k for r in rows))
                problems += [f"{node.host} at {cl}: {p}" for p in lost]
            read = statement(f"SELECT n FROM {keyspace}.cas WHERE id = 0", "SERIAL")
            counters[node.host] = s.execute(read).one().n
    if len(set(counters.values())) != 1:
        problems.append(f"SERIAL reads of the CAS counter disagree: {counters}")
    problem = cas_problem(history, next(iter(counters.values())))
    if problem:
        problems.append(problem)
    return problems


def tablet_hosts(node: TestNode) -> list[set[uuid.UUID]]:
    """The replica hosts of every tablet of the workload's tables, as ``node`` sees them."""
    with session_on(node) as s:
        rows = s.execute(
            statement(
                f"SELECT replicas FROM system.tablets WHERE keyspace_name = '{KEYSPACE}' ALLOW FILTERING",
                "ONE",
            )
        )
        return [{h for h, _ in r.replicas} for r in rows]


def node_states(node: TestNode) -> dict[uuid.UUID, str]:
    with session_on(node) as s:
        return {r.host_id: r.node_state for r in s.execute("SELECT host_id, node_state FROM system.topology")}
