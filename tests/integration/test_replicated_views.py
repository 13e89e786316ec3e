"""Materialized views and secondary indexes with RF > 1 on real processes (issue #7 item 4).

Three nodes; a table with a view (keyed by a regular column, so updates move view rows), a
global index and a second view (both created over existing rows, so they are built first), in
an RF=3 keyspace and an RF=1 one (where a base replica's paired view replica is usually another
node). Writes of every kind come from different coordinators; view reads and index lookups at
QUORUM from every node must equal a model. With one node killed -9 QUORUM writes and reads of
base, views and index still work; once it is back, ALL reads agree.
"""

from __future__ import annotations

from typing import Any

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, available_at_all, pinned, run, wait_for

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': %d}"
Model = dict[tuple[int, int], tuple[int | None, str]]
"""(k, c) -> (v, w) of the base table."""


def create_schema(session: Any, ks: str, rf: int) -> None:
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = {NTS % rf} AND tablets = {{'enabled': true}}")
    session.execute(f"CREATE TABLE {ks}.t (k int, c int, v int, w text, PRIMARY KEY (k, c))")
    session.execute(
        f"CREATE MATERIALIZED VIEW {ks}.mv AS SELECT * FROM {ks}.t "
        "WHERE v IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, k, c)"
    )


def insert(session: Any, ks: str, model: Model, k: int, c: int, v: int, w: str, cl: str = "QUORUM") -> None:
    run(session, f"INSERT INTO {ks}.t (k, c, v, w) VALUES (%s, %s, %s, %s)", cl, (k, c, v, w))
    model[(k, c)] = (v, w)


def set_v(session: Any, ks: str, model: Model, k: int, c: int, v: int) -> None:
    run(session, f"UPDATE {ks}.t SET v = %s WHERE k = %s AND c = %s", "QUORUM", (v, k, c))
    model[(k, c)] = (v, model[(k, c)][1])


def delete_row(session: Any, ks: str, model: Model, k: int, c: int) -> None:
    run(session, f"DELETE FROM {ks}.t WHERE k = %s AND c = %s", "QUORUM", (k, c))
    model.pop((k, c))


def delete_partition(session: Any, ks: str, model: Model, k: int) -> None:
    run(session, f"DELETE FROM {ks}.t WHERE k = %s", "QUORUM", (k,))
    for key in [key for key in model if key[0] == k]:
        model.pop(key)


def check(session: Any, ks: str, model: Model, cl: str) -> None:
    """Base, view (whole and per view partition) and index lookups equal the model at ``cl``."""
    base = {(r.k, r.c): (r.v, r.w) for r in run(session, f"SELECT k, c, v, w FROM {ks}.t", cl, fetch_size=7)}
    assert base == model
    view = {(r.v, r.k, r.c, r.w) for r in run(session, f"SELECT v, k, c, w FROM {ks}.mv", cl, fetch_size=5)}
    assert view == {(v, k, c, w) for (k, c), (v, w) in model.items() if v is not None}
    by_w = {(r.w, r.k, r.c) for r in run(session, f"SELECT w, k, c FROM {ks}.byw", cl, fetch_size=5)}
    assert by_w == {(w, k, c) for (k, c), (_, w) in model.items()}
    for v in {v for v, _ in model.values() if v is not None} | {99}:
        got = {(r.k, r.c) for r in run(session, f"SELECT k, c FROM {ks}.mv WHERE v = %s", cl, (v,))}
        assert got == {key for key, (mv, _) in model.items() if mv == v}
    for w in {w for _, w in model.values()} | {"none"}:
        got = {(r.k, r.c) for r in run(session, f"SELECT k, c FROM {ks}.t WHERE w = %s", cl, (w,))}
        assert got == {key for key, (_, mw) in model.items() if mw == w}


def test_views_and_indexes_rf3_and_rf1_through_a_kill(node_factory: NodeFactory) -> None:
    # one rack per node: a tablets keyspace with views must be RF-rack-valid (RF 1 or 3 here)
    nodes = node_factory.start_cluster(3, options=OPTIONS, racks=["r1", "r2", "r3"])
    models: dict[str, Model] = {"v3": {}, "v1": {}}
    with pinned(nodes[0]) as s0:
        create_schema(s0, "v3", 3)
        create_schema(s0, "v1", 1)
        for ks, model in models.items():
            for k in range(6):  # existing data: CREATE INDEX builds its entries
                insert(s0, ks, model, k, 0, k % 3, f"w{k % 2}")
            s0.execute(f"CREATE INDEX ON {ks}.t (w)")
            s0.execute(  # built from the existing rows, then maintained
                f"CREATE MATERIALIZED VIEW {ks}.byw AS SELECT k, c, w FROM {ks}.t "
                "WHERE w IS NOT NULL AND k IS NOT NULL AND c IS NOT NULL PRIMARY KEY (w, k, c)"
            )
    for ks, model in models.items():
        for i, node in enumerate(nodes):
            with pinned(node) as s:
                for k in range(6 + 4 * i, 10 + 4 * i):
                    insert(s, ks, model, k, i, k % 4, f"w{k % 3}")
                set_v(s, ks, model, i, 0, 10 + i)  # the view row moves
                run(s, f"UPDATE {ks}.t SET w = %s WHERE k = %s AND c = 0", "QUORUM", (f"x{i}", 3 + i))
                model[(3 + i, 0)] = (model[(3 + i, 0)][0], f"x{i}")
        with pinned(nodes[1]) as s1:
            delete_row(s1, ks, model, 6, 0)
            delete_partition(s1, ks, model, 7)
            run(s1, f"UPDATE {ks}.t SET v = null WHERE k = 8 AND c = 0", "QUORUM")  # leaves the view
            model[(8, 0)] = (None, model[(8, 0)][1])
        with pinned(nodes[2]) as s2:
            lwt = f"INSERT INTO {ks}.t (k, c, v, w) VALUES (40, 0, 4, 'lwt') IF NOT EXISTS"
            assert run(s2, lwt, "QUORUM")[0][0] is True  # Paxos commits update views on each replica
            model[(40, 0)] = (4, "lwt")
            run(s2, f"INSERT INTO {ks}.t (k, c, v, w) VALUES (50, 0, 5, 'ttl') USING TTL 1", "QUORUM")
            expired = f"SELECT k FROM {ks}.mv WHERE v = 5"
            wait_for(lambda q=expired: not run(s2, q, "QUORUM"), "view row to expire")
            assert run(s2, f"SELECT k FROM {ks}.t WHERE w = 'ttl'", "QUORUM") == []
        for node in nodes:
            with pinned(node) as s:
                check(s, ks, model, "QUORUM")

    model = models["v3"]
    victim = nodes[2]
    victim.kill()
    with pinned(nodes[0]) as s0, pinned(nodes[1]) as s1:
        wait_for(lambda: not available_at_all(s0, "v3"), "node 0 to see node 2 down")
        for k in range(30, 36):
            insert(s0 if k % 2 else s1, "v3", model, k, 0, k % 5, f"w{k % 2}")
        set_v(s1, "v3", model, 1, 0, 21)
        set_v(s0, "v3", model, 30, 0, 22)
        delete_row(s0, "v3", model, 31, 0)
        delete_partition(s1, "v3", model, 9)
        check(s0, "v3", model, "QUORUM")
        check(s1, "v3", model, "QUORUM")

    victim.start()
    for node in nodes:  # every node's failure detector must see the others up before reading at ALL
        with pinned(node) as s:
            wait_for(lambda s=s: available_at_all(s, "v3"), f"{node.endpoints.address} to see its peers up")
            check(s, "v3", model, "ALL")
