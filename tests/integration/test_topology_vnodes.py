"""Vnode keyspaces through a decommission, on real node processes: 3 nodes, 5,000 rows at RF=2
and a smaller table at RF=3 (whose replica sets shrink to the two nodes left).

The leaving node's ranges stream to their new owners while both rings take writes; reads switch
after streaming. Every row written before, and every write acknowledged at QUORUM during the
move, reads back at QUORUM and ALL afterwards, and each node that stays holds every row of its
ranges itself (read at ONE on the node, which reads its own files: no read repair could have
filled it in). A reader loop at QUORUM during the whole move finds every row it looks for.
"""

from __future__ import annotations

import random
import threading
from typing import Any

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
    return {(r.k, r.v) for r in run(session, f"SELECT k, v FROM {table}", cl, fetch_size=1000)}


def host_id(node: TestNode) -> Any:
    with pinned(node) as s:
        return run(s, "SELECT host_id FROM system.local", "ONE")[0].host_id


class Traffic:
    """A QUORUM writer recording what was acknowledged, and a QUORUM reader of known rows."""

    def __init__(self, node: TestNode, known: dict[int, str]) -> None:
        self.node = node
        self.known = known
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
            k = 10 * ROWS
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
                    found = run(s, "SELECT v FROM vk.t WHERE k = %s", "QUORUM", (k,))
                except Exception as exc:
                    self.read_errors.append(repr(exc))
                    continue
                self.reads += 1
                if [r.v for r in found] != [self.known[k]]:
                    self.wrong.append((k, found))


def test_decommission_streams_vnode_ranges_and_keeps_every_row(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    leaving, stays = nodes[2], nodes[:2]
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

    with Traffic(stays[0], dict(expected)) as traffic:
        status, body = post(leaving.api_url + "/storage_service/decommission", timeout=600)
    assert status == 200, body
    assert traffic.acked, "no write was acknowledged while the node was decommissioned"
    assert traffic.reads and not traffic.wrong, traffic.wrong[:5]
    assert not traffic.read_errors, traffic.read_errors[:5]
    wait_for(lambda: not leaving.running, "the decommissioned node to stop")

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
