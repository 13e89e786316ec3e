"""A CDC log's tablets stay on its base's replicas through tablet moves and a join (issue 16).

Three nodes, RF=2, a CDC table in a tablets keyspace. An operator moves a tablet of the *log*
table over REST (the base tablet moves with it), then of the base table (the log tablet moves
with it), then a fourth node joins, all while a writer goes on at QUORUM. After each step
``system.tablets`` shows the same replicas for every base tablet and its log tablet (the log
names its base in ``base_table``), and the log holds exactly one row per base row, every
acknowledged write included, read back at QUORUM and at ALL.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run
from tests.integration.test_tablet_move import post
from tests.integration.test_topology_join import host_id

Row = tuple[int, str]


def _maps(session: Any) -> dict[str, dict[int, list[tuple[uuid.UUID, int]]]]:
    rows = run(
        session,
        "SELECT table_name, base_table, last_token, replicas, stage FROM system.tablets "
        "WHERE keyspace_name = 'cl' ALLOW FILTERING",
        "ONE",
    )
    assert all(r.stage is None for r in rows), "a tablet is still in transition"
    out: dict[str, dict[int, list[tuple[uuid.UUID, int]]]] = {}
    for r in rows:
        out.setdefault(r.table_name, {})[r.last_token] = [(h, s) for h, s in r.replicas]
    return out


def _check_colocated(node: TestNode) -> dict[int, list[tuple[uuid.UUID, int]]]:
    with pinned(node) as s:
        maps = _maps(s)
        assert maps["t_scylla_cdc_log"] == maps["t"], maps
        base_id = run(
            s, "SELECT id FROM system_schema.tables WHERE keyspace_name = 'cl' AND table_name = 't'", "ONE"
        )
        bases = run(
            s,
            "SELECT base_table FROM system.tablets WHERE keyspace_name = 'cl' "
            "AND table_name = 't_scylla_cdc_log' ALLOW FILTERING",
            "ONE",
        )
        assert {r.base_table for r in bases} == {base_id[0].id}
        return maps["t"]


class Writer:
    """QUORUM inserts into ``table`` through one node until stopped; records the acknowledged ones."""

    def __init__(self, node: TestNode, table: str = "cl.t") -> None:
        self.acked: set[Row] = set()
        self.failed = 0
        self._node, self._key, self._table = node, 10_000, table
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        with pinned(self._node) as w:
            while not self._done.is_set():
                k = self._key
                self._key += 1
                try:
                    run(w, f"INSERT INTO {self._table} (k, v) VALUES (%s, %s)", "QUORUM", (k, f"w{k}"))
                    self.acked.add((k, f"w{k}"))
                except Exception:  # a write that failed mid-move may or may not be there
                    self.failed += 1


def _move(node: TestNode, table: str, token: int, source: tuple[uuid.UUID, int], target: uuid.UUID) -> None:
    params = {
        "ks": "cl",
        "table": table,
        "token": token,
        "src_host": source[0],
        "src_shard": source[1],
        "dst_host": target,
        "dst_shard": 0,
    }
    status, body = post(node.api_url + "/storage_service/tablets/move", params)
    assert status == 200, body


def _check_log(node: TestNode, acked: set[Row], table: str = "cl.t") -> None:
    """One log row of ``table`` per base row (none twice), every acknowledged write among them."""
    with pinned(node) as s:
        base = {(r.k, r.v) for r in run(s, f"SELECT k, v FROM {table}", "ALL")}
        for cl in ("QUORUM", "ALL"):
            log = [
                (r.k, r.v)
                for r in run(
                    s, f'SELECT k, v, "cdc$operation" FROM {table}_scylla_cdc_log', cl, fetch_size=50
                )
            ]
            assert len(log) == len(set(log)), "a write was logged twice"
            assert set(log) == base, (sorted(base - set(log))[:5], sorted(set(log) - base)[:5])
        assert acked <= base


def test_log_tablets_follow_base_tablets_through_moves_and_a_join(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    # the balancer would start rounds between the checks below: placement is this test's to set
    status, body = post(nodes[0].api_url + "/storage_service/tablets/balancing", {"enabled": "false"})
    assert status == 200, body
    with pinned(nodes[0]) as s:
        s.execute(
            "CREATE KEYSPACE cl WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 2} AND tablets = {'initial': 4}"
        )
        s.execute("CREATE TABLE cl.t (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}")
        for k in range(40):
            run(s, "INSERT INTO cl.t (k, v) VALUES (%s, %s)", "QUORUM", (k, f"v{k}"))
    hosts = [host_id(n) for n in nodes]
    acked: set[Row] = {(k, f"v{k}") for k in range(40)}

    with Writer(nodes[1]) as writer:
        before = _check_colocated(nodes[0])
        first, second = sorted(before)[:2]
        for table, token in (("t_scylla_cdc_log", first), ("t", second)):
            replicas = _check_colocated(nodes[0])[token]
            target = next(h for h in hosts if h not in {r[0] for r in replicas})
            _move(nodes[2], table, token, replicas[0], target)
            moved = _check_colocated(nodes[0])
            assert moved[token] == [(target, 0), replicas[1]], moved[token]

        fourth = node_factory.create(seeds=[nodes[0].host], options=OPTIONS)
        fourth.start()  # returns once CQL is served: the node is normal by then
    acked |= writer.acked
    assert writer.acked, "no write was acknowledged while tablets moved"

    joined = host_id(fourth)
    after = _check_colocated(fourth)
    assert any(h == joined for replicas in after.values() for h, _ in replicas), after
    _check_log(nodes[0], acked)
    _check_log(fourth, acked)
