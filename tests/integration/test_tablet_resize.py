"""Split and merge by size on real node processes (issue #15 item 3), balancing on (the default).

Three nodes of two shards, an RF=2 tablets keyspace with ``initial: 8``, a table with
``max_tablet_count: 16`` and a 64 KiB ``target_tablet_size_in_bytes``. Loading ~1.5 MB makes the
coordinator split the table (the average tablet above 2x the target) while a QUORUM writer and a
QUORUM reader run: no acknowledged write is lost and the reader finds every acknowledged key it
asks for. After the split a token-aware driver that learned the old tablets still reads every
row, and once it has read across the ring no tablet it learned routes anywhere wrong (the
tablets-routing-v1 hints named the right tablets); each replica holds only files of the current
generation.

Then two sibling pairs are pulled apart (one replica to its node's other shard through REST, one
to the third node through ``nodetool movetablet``), as the balancer may do to a table that is not
merging, and the table is emptied (TRUNCATE): the coordinator co-locates the siblings again (its
log says so) and merges the table back to its floor of 8, under new QUORUM clients, whose every
acknowledged write reads back at ALL and through the driver, whose tablets again route right.
Deleting rows and compacting them away is the other way to empty a table (s9compact's test); the
real-size split is ``test_tablet_split_size.py``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from click.testing import CliRunner

from tabletdb.cli.main import cli
from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode
from tests.harness.topology_workload import wait_for
from tests.integration.test_replicated_data import OPTIONS, pinned, run
from tests.integration.test_tablet_move import post

TARGET = 64 * 1024
ROWS = 350
VALUE = "x" * 1000
"""~1.5 MB as the store keeps them: above 2x the target on average over 8 tablets."""
RF = 2
RESIZE_OPTIONS = {**OPTIONS, "target_tablet_size_in_bytes": TARGET}


def tablet_count(session: Any) -> int:
    rows = run(
        session, "SELECT table_name, last_token, stage FROM system.tablets WHERE keyspace_name = 'rz'", "ONE"
    )
    return sum(1 for r in rows if r.table_name == "t")


def generations(node: TestNode) -> set[str]:
    """Suffixes of the tablet files of ``rz.t`` on ``node`` ('' for the first generation)."""
    names = {p.name for p in node.workdir.glob("data/rz/t-*/shard-*/tablet-*.db")}
    return {n.split(".")[1] if n.count(".") == 2 else "" for n in names}


class Clients:
    """A QUORUM writer (through one node) and a QUORUM reader (through another) of new keys."""

    def __init__(self, writer: Any, reader: Any, first_key: int = 1_000_000, table: str = "rz.t") -> None:
        self.writer, self.reader = writer, reader
        self.first_key = first_key
        self.table = table
        self.acked: list[int] = []
        self.written = 0
        """Writes attempted: acknowledged or not, each may be there."""
        self.missing: list[int] = []
        self.reads = 0
        self.stop = threading.Event()
        self._lock = threading.Lock()

    def write_loop(self) -> None:
        from cassandra import ConsistencyLevel
        from cassandra.query import SimpleStatement

        insert = SimpleStatement(
            f"INSERT INTO {self.table} (k, v) VALUES (%s, %s)", consistency_level=ConsistencyLevel.QUORUM
        )
        k = self.first_key
        while not self.stop.is_set():
            k += 1
            self.written += 1
            try:
                self.writer.execute(insert, (k, "w"))
            except Exception:  # unacknowledged: it may or may not be there, nothing is claimed
                continue
            with self._lock:
                self.acked.append(k)

    def read_loop(self) -> None:
        from cassandra import ConsistencyLevel
        from cassandra.query import SimpleStatement

        select = SimpleStatement(
            f"SELECT k FROM {self.table} WHERE k = %s", consistency_level=ConsistencyLevel.QUORUM
        )
        rng = random.Random(7)
        while not self.stop.is_set():
            with self._lock:
                sample = rng.sample(self.acked, min(10, len(self.acked)))
            for k in sample:
                try:
                    found = self.reader.execute(select, (k,)).one()
                except Exception:  # a timeout says nothing about the data
                    continue
                self.reads += 1
                if found is None:
                    self.missing.append(k)
            time.sleep(0.05)


@contextmanager
def running(clients: Clients) -> Iterator[Clients]:
    threads = [threading.Thread(target=clients.write_loop), threading.Thread(target=clients.read_loop)]
    for t in threads:
        t.start()
    try:
        yield clients
    finally:
        clients.stop.set()
        for t in threads:
            t.join(120)


def tablets_of(session: Any) -> list[tuple[int, list[tuple[Any, int]]]]:
    """(last token, replicas) of ``rz.t``'s tablets in token order, none in transition."""
    rows = run(
        session,
        "SELECT table_name, last_token, replicas, stage FROM system.tablets WHERE keyspace_name = 'rz'",
        "ONE",
    )
    rows = [r for r in rows if r.table_name == "t"]
    assert all(r.stage is None for r in rows), "a tablet is in transition"
    return sorted((r.last_token, [(h, s) for h, s in r.replicas]) for r in rows)


def pairs_apart(session: Any) -> int:
    found = tablets_of(session)
    return sum(1 for a, b in zip(found[0::2], found[1::2]) if set(a[1]) != set(b[1]))


def balancing(node: TestNode, enabled: bool) -> None:
    status, body = post(
        node.api_url + "/storage_service/tablets/balancing", {"enabled": str(enabled).lower()}
    )
    assert status == 200, body


def pull_siblings_apart(nodes: list[TestNode], session: Any) -> None:
    """Tablet 1's first replica to its node's other shard (REST), tablet 3's to the node without
    it (``nodetool movetablet``): two sibling pairs apart, as balancing may leave them."""
    hosts = []
    for node in nodes:
        with pinned(node) as p:
            hosts.append(run(p, "SELECT host_id FROM system.local", "ONE")[0].host_id)
    found = tablets_of(session)
    last_token, replicas = found[1]
    (host, shard) = replicas[0]
    params = {"ks": "rz", "table": "t", "token": last_token, "src_host": host, "src_shard": shard}
    status, body = post(
        nodes[0].api_url + "/storage_service/tablets/move",
        {**params, "dst_host": host, "dst_shard": 1 - shard},
    )
    assert status == 200, body
    last_token, replicas = found[3]
    (host, shard) = replicas[0]
    target = next(h for h in hosts if h not in {r[0] for r in replicas})
    argv = [
        "-h",
        nodes[1].host,
        "-p",
        str(nodes[1].endpoints.api_port),
        "movetablet",
        "--",
        "rz",
        "t",
    ]  # "--": a token may be negative
    result = CliRunner().invoke(
        cli, ["nodetool", *argv, str(last_token), str(host), str(shard), str(target), "0"]
    )
    assert result.exit_code == 0, result.output
    assert tablets_of(session)[3][1] == [(target, 0), replicas[1]]


def misrouting(cluster: Any, session: Any, select: Any, pinned_session: Any) -> list[str]:
    """After 2,000 reads through the token-aware driver (every tablet many times over: a request
    its stale tablets send astray brings the tablets-routing-v1 hint), the tablets the driver
    learned that would still route somewhere wrong: one overlapping a current tablet with other
    replicas. Empty when every hint named the right tablet and replicas."""
    results = execute_concurrent_with_args(session, select, [(k,) for k in range(2000)], concurrency=32)
    assert all(ok for ok, _ in results)
    current, first = [], -(2**63)
    for last, replicas in tablets_of(pinned_session):
        current.append((first, last, {(h, s) for h, s in replicas}))
        first = last
    wrong = []
    for t in cluster.metadata._tablets._tablets[("rz", "t")]:
        learned = {(h, s) for h, s in t.replicas}
        for a, b, replicas in current:
            if t.first_token < b and a < t.last_token and replicas != learned:
                wrong.append(f"({t.first_token}, {t.last_token}] on {learned}, now ({a}, {b}] on {replicas}")
    return wrong


def test_split_under_quorum_clients_then_merge_when_emptied(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=RESIZE_OPTIONS)
    with pinned(nodes[0]) as s, pinned(nodes[1]) as w, pinned(nodes[2]) as r:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE rz WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': {RF}}} "
            "AND tablets = {'initial': 8}"
        )
        s.execute("CREATE TABLE rz.t (k int PRIMARY KEY, v text) WITH tablets = {'max_tablet_count': 16}")
        assert tablet_count(s) == 8
        policy = TokenAwarePolicy(DCAwareRoundRobinPolicy())
        profile = {EXEC_PROFILE_DEFAULT: ExecutionProfile(load_balancing_policy=policy, request_timeout=60)}
        with scylla_cluster(nodes, execution_profiles=profile) as cluster:
            session = cluster.connect(wait_for_all_pools=True)
            insert = session.prepare("INSERT INTO rz.t (k, v) VALUES (?, ?)")
            select = session.prepare("SELECT k FROM rz.t WHERE k = ?")
            from cassandra import ConsistencyLevel

            insert.consistency_level = ConsistencyLevel.QUORUM
            select.consistency_level = ConsistencyLevel.QUORUM
            for k in range(20):  # the driver learns the 8 tablets from misrouted requests
                session.execute(select, (k,))
            with running(Clients(w, r)) as clients:
                results = execute_concurrent_with_args(
                    session, insert, [(k, VALUE) for k in range(ROWS)], concurrency=16
                )
                assert all(ok for ok, _ in results)
                wait_for(lambda: tablet_count(s) == 16, "the table to split", seconds=300)
                acked_at_split = len(clients.acked)
                wait_for(lambda: len(clients.acked) > acked_at_split + 20, "writes after the split")
            assert clients.reads > 0 and clients.missing == [], (
                f"reader missed acknowledged keys {clients.missing[:10]}"
            )
            assert len(clients.acked) > 20
            for k in clients.acked:
                assert run(s, "SELECT k FROM rz.t WHERE k = %s", "ALL", (k,)), f"acknowledged key {k} lost"
            # the driver's tablets are the old ones: the hint brings the new ones, every row reads back
            for k in range(ROWS):
                assert session.execute(select, (k,)).one() is not None, f"row {k} lost"
            assert tablet_count(s) == 16  # max_tablet_count stops further splits
            assert misrouting(cluster, session, select, s) == []
            for node in nodes:  # every replica dropped the old generation's files
                wait_for(
                    lambda node=node: "" not in generations(node), f"old tablet files removed on {node.host}"
                )

            # no merge begins while balancing is off: the stage is set first
            balancing(nodes[0], False)
            wait_for(
                lambda: all(r.stage is None for r in run(s, "SELECT stage FROM system.tablets", "ONE")),
                "no move",
            )
            pull_siblings_apart(nodes, s)
            assert pairs_apart(s) >= 2
            s.execute("TRUNCATE rz.t")
            with running(Clients(w, r, first_key=2_000_000)) as clients:
                balancing(nodes[0], True)
                wait_for(
                    lambda: tablet_count(s) == 8, "the emptied table to merge back to 8 tablets", seconds=300
                )
                acked_at_merge = len(clients.acked)
                wait_for(lambda: len(clients.acked) > acked_at_merge + 20, "writes after the merge")
            assert clients.missing == [], f"reader missed acknowledged keys {clients.missing[:10]}"
            for k in clients.acked:  # through the driver that knew 16 tablets: the hint brings the 8
                assert session.execute(select, (k,)).one() is not None, f"acknowledged key {k} lost"
                assert run(s, "SELECT k FROM rz.t WHERE k = %s", "ALL", (k,)), f"acknowledged key {k} lost"
            assert misrouting(cluster, session, select, s) == []
    logs = b"".join(node.process.log_path.read_bytes() for node in nodes)
    assert b"co-locating sibling tablets for a merge" in logs


def begun_on(nodes: list[TestNode]) -> TestNode | None:
    """The node whose coordinator began a split (its log says so), if one has."""
    for node in nodes:
        if b"proposes: begin split" in node.process.log_path.read_bytes():
            return node
    return None


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["coordinator", "replica"])
def test_kill_9_mid_split_resumes_or_rolls_back(node_factory: NodeFactory, victim: str) -> None:
    """kill -9 of the coordinator, or of another replica, right after a split began, with QUORUM
    clients running through the survivors; the node comes back and the split ends (resumed, or
    rolled back and begun again): 16 tablets, every acknowledged write at ALL."""
    nodes = node_factory.start_cluster(3, options=RESIZE_OPTIONS)
    with pinned(nodes[0]) as s:
        dc = run(s, "SELECT data_center FROM system.local", "ONE")[0].data_center
        s.execute(
            f"CREATE KEYSPACE rz WITH replication = {{'class': 'NetworkTopologyStrategy', '{dc}': 3}} "
            "AND tablets = {'initial': 8}"
        )
        s.execute("CREATE TABLE rz.t (k int PRIMARY KEY, v text) WITH tablets = {'max_tablet_count': 16}")
    with scylla_cluster(nodes) as cluster:
        session = cluster.connect()
        insert = session.prepare("INSERT INTO rz.t (k, v) VALUES (?, ?)")
        rows = 4 * ROWS  # a copy of seconds, so the kill lands inside it
        results = execute_concurrent_with_args(
            session, insert, [(k, VALUE) for k in range(rows)], concurrency=16
        )
        assert all(ok for ok, _ in results)
        with running(Clients(cluster.connect(), cluster.connect())) as clients:
            wait_for(lambda: begun_on(nodes) is not None, "a split to begin", seconds=300)
            coordinator = begun_on(nodes)
            assert coordinator is not None
            killed = (
                coordinator if victim == "coordinator" else next(n for n in nodes if n is not coordinator)
            )
            killed.kill()
            alive = next(n for n in nodes if n is not killed)
            with pinned(alive) as p:
                assert tablet_count(p) == 8, "the split ended before the kill: nothing was tested"
            acked_at_kill = len(clients.acked)
            wait_for(lambda: len(clients.acked) > acked_at_kill + 20, "QUORUM writes with a node down")
            killed.start()
            with pinned(alive) as p:
                wait_for(
                    lambda: tablet_count(p) == 16, "the split to end after the node came back", seconds=300
                )
        assert clients.missing == [], f"reader missed acknowledged keys {clients.missing[:10]}"
    with pinned(nodes[0]) as s:
        for k in [*range(rows), *clients.acked]:
            assert run(s, "SELECT k FROM rz.t WHERE k = %s", "ALL", (k,)), f"acknowledged key {k} lost"
