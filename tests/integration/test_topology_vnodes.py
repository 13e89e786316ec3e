"""Vnode keyspaces through topology changes, on real node processes: 3 nodes, 5,000 rows at RF=2.

Decommission (with a smaller table at RF=3, whose replica sets shrink to the two nodes left):
the leaving node's ranges stream to their new owners while both rings take writes; reads switch
after streaming. Join of a fourth node, then its decommission: the joiner pulls its ranges from
the nodes that lose them, which are cleaned up (their status in group0 goes back to `clean`)
before the ranges go back to them. Every row written before, and every write acknowledged at
QUORUM meanwhile, reads back at QUORUM and ALL afterwards, and each node holds every row of its
ranges itself: a scan at ONE through a node reads its own files for the ranges it replicates (no
read repair at ONE could have filled them in). A reader loop at ONE during each change finds
every row it looks for.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for
from tests.integration.test_topology_decommission import post

ROWS = 5000
SMALL_ROWS = 500


def load(session: Any, table: str, keys: range) -> set[tuple[int, str]]:
    from cassandra import ConsistencyLevel
    from cassandra.concurrent import execute_concurrent_with_args

    insert = session.prepare(f"INSERT INTO {table} (k, v) VALUES (?, ?)")
    insert.consistency_level = ConsistencyLevel.QUORUM
    rows = [(k, f"v{k}") for k in keys]
    for ok, result in execute_concurrent_with_args(session, insert, rows, concurrency=32):
        assert ok, result
    return set(rows)


def rows(session: Any, table: str, cl: str) -> set[tuple[int, str]]:
    """Every row at ``cl``. Unavailable is retried: on a loaded box the failure detector may call
    a busy peer down for a second, and Unavailable is answered before any replica is asked, so
    retrying it cannot hide a missing row."""
    from cassandra import Unavailable

    for attempt in range(10):
        try:
            return {(r.k, r.v) for r in run(session, f"SELECT k, v FROM {table}", cl, fetch_size=1000)}
        except Unavailable:
            if attempt == 9:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def host_id(node: TestNode) -> Any:
    with pinned(node) as s:
        return run(s, "SELECT host_id FROM system.local", "ONE")[0].host_id


class Traffic:
    """A QUORUM writer recording what was acknowledged, and a reader of known rows at ONE."""

    def __init__(self, node: TestNode, known: dict[int, str], first_key: int = 10 * ROWS) -> None:
        self.node = node
        self.known = known
        self.first_key = first_key
        self.acked: set[tuple[int, str]] = set()
        self.tried: set[tuple[int, str]] = set()
        self.reads = 0
        self.wrong: list[tuple[int, object]] = []
        self.read_errors: list[str] = []
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._write), threading.Thread(target=self._read)]

    def __enter__(self) -> Traffic:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        for t in self.threads:
            t.join()

    def _write(self) -> None:
        with pinned(self.node) as s:
            k = self.first_key
            while not self.done.is_set():
                self.tried.add((k, f"w{k}"))
                try:
                    run(s, "INSERT INTO vk.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"w{k}"))
                    self.acked.add((k, f"w{k}"))
                except Exception:  # a write refused by the fence or timed out need not be there
                    pass
                k += 1

    def _read(self) -> None:
        rng = random.Random(7)
        keys = sorted(self.known)
        with pinned(self.node) as s:
            while not self.done.is_set():
                k = rng.choice(keys)
                try:
                    found = run(s, "SELECT v FROM vk.t WHERE k = %s", "ONE", (k,))
                except Exception as exc:
                    self.read_errors.append(repr(exc))
                    continue
                self.reads += 1
                if [r.v for r in found] != [self.known[k]]:
                    self.wrong.append((k, found))


def create(node: TestNode) -> set[tuple[int, str]]:
    with pinned(node) as s:
        run(
            s,
            "CREATE KEYSPACE vk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
            "ONE",
        )
        run(s, "CREATE TABLE vk.t (k int PRIMARY KEY, v text)", "ONE")
        return load(s, "vk.t", range(ROWS))


def states(node: TestNode) -> dict[Any, tuple[str, str]]:
    with pinned(node) as s:
        found = run(s, "SELECT host_id, node_state, cleanup_status FROM system.topology", "ONE")
        return {r.host_id: (r.node_state, r.cleanup_status) for r in found}


def every_node_holds_its_rows(
    nodes: list[TestNode], expected: set[tuple[int, str]], tried: set[tuple[int, str]]
) -> None:
    for node in nodes:
        with pinned(node) as s:
            held = rows(s, "vk.t", "ONE")
        assert expected <= held <= expected | tried, (node, len(expected - held))


def decommission(leaving: TestNode, reader: TestNode, known: set[tuple[int, str]], first_key: int) -> Traffic:
    with Traffic(reader, dict(known), first_key) as traffic:
        status, body = post(leaving.api_url + "/storage_service/decommission", timeout=600)
    assert status == 200, body
    assert traffic.reads and not traffic.wrong, traffic.wrong[:5]
    assert not traffic.read_errors, traffic.read_errors[:5]
    wait_for(lambda: not leaving.running, "the decommissioned node to stop")
    return traffic


@pytest.mark.parametrize(
    "which", [2, pytest.param(0, marks=pytest.mark.slow)], ids=["a-follower", "the-founder"]
)
def test_decommission_streams_vnode_ranges_and_keeps_every_row(node_factory: NodeFactory, which: int) -> None:
    """The founder usually leads group0: it then runs the coordinator that decommissions it."""
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    leaving, stays = nodes[which], [n for i, n in enumerate(nodes) if i != which]
    with pinned(nodes[0]) as s:
        run(
            s,
            "CREATE KEYSPACE vk WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}",
            "ONE",
        )
        run(
            s,
            "CREATE KEYSPACE vk3 WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 3} AND tablets = {'enabled': false}",
            "ONE",
        )
        run(s, "CREATE TABLE vk.t (k int PRIMARY KEY, v text)", "ONE")
        run(s, "CREATE TABLE vk3.t (k int PRIMARY KEY, v text)", "ONE")
        expected = load(s, "vk.t", range(ROWS))
        small = load(s, "vk3.t", range(SMALL_ROWS))
    gone = host_id(leaving)  # with RF=2 on 3 nodes it replicates about 2/3 of the ranges

    traffic = decommission(leaving, stays[0], expected, 10 * ROWS)
    assert traffic.acked, "no write was acknowledged while the node was decommissioned"

    for node in stays:  # each node holds every row itself (RF=2 and RF=3 on two nodes: all of it)
        with pinned(node) as s:
            held = rows(s, "vk.t", "ONE")
            assert expected | traffic.acked <= held <= expected | traffic.tried, len(held)
            assert rows(s, "vk3.t", "ONE") == small
    with pinned(stays[1]) as s:
        for cl in ("QUORUM", "ALL"):
            assert expected | traffic.acked <= rows(s, "vk.t", cl)
            assert rows(s, "vk3.t", cl) == small
    for node in stays:
        with pinned(node) as s:
            states = {
                r.host_id: (r.node_state, r.cleanup_status)
                for r in run(s, "SELECT host_id, node_state, cleanup_status FROM system.topology", "ONE")
            }
            assert states.pop(gone)[0] == "left"
            assert set(states.values()) == {("normal", "clean")}, states  # nobody lost a range


@pytest.mark.slow
def test_join_streams_vnode_ranges_cleans_the_old_owners_and_gives_them_back(
    node_factory: NodeFactory,
) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0]) as s:
        kinds = {r.request_type for r in run(s, "SELECT request_type FROM system.topology_requests", "ONE")}
    if "join" not in kinds:
        pytest.skip("nodes join through the direct group0 join here, not as a topology join request")
    expected = create(nodes[0])

    joiner = node_factory.create(seeds=[nodes[0].host], options=OPTIONS)
    with Traffic(nodes[0], dict(expected), 10 * ROWS) as traffic:
        joiner.start()
        joined = host_id(joiner)
        wait_for(
            lambda: set(states(nodes[1]).values()) == {("normal", "clean")} and joined in states(nodes[1]),
            "the joiner to be normal and every cleanup done",
        )
    assert traffic.reads and not traffic.wrong, traffic.wrong[:5]
    assert not traffic.read_errors, traffic.read_errors[:5]
    expected |= traffic.acked
    cleaned = [n for n in nodes if "vnode cleanup done" in n.log_tail(400)]
    removed = [
        int(line.rsplit("partitions_removed=", 1)[1].split()[0].strip('"'))
        for n in cleaned
        for line in n.log_tail(400).splitlines()
        if "vnode cleanup done" in line
    ]
    assert cleaned and sum(removed) > 0, "no old owner dropped the ranges the joiner took"
    every_node_holds_its_rows([*nodes, joiner], expected, traffic.tried)

    # the ranges go back to the nodes that dropped them: streamed again, nothing lost
    traffic = decommission(joiner, nodes[1], expected, 20 * ROWS)
    expected |= traffic.acked
    every_node_holds_its_rows(nodes, expected, traffic.tried)
    with pinned(nodes[2]) as s:
        for cl in ("QUORUM", "ALL"):
            assert expected <= rows(s, "vk.t", cl)
