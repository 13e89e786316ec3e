"""Secondary indexes, view WHERE clauses, UDT field updates and mixed-order slices through a
real server process and scylla-driver (prepared statements, driver paging, driver metadata)."""

from __future__ import annotations

from typing import Any

TABLETS = "SELECT table_name FROM system.tablets WHERE keyspace_name = 'ix' ALLOW FILTERING"
KEYSPACE = (
    "CREATE KEYSPACE ix WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} "
    "AND tablets = {'initial': 2}"
)


def test_index_queries_views_udt_fields_and_mixed_slices(session: Any) -> None:
    from cassandra.query import SimpleStatement

    session.execute(KEYSPACE)
    session.execute("CREATE TABLE ix.t (p int, c int, v text, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO ix.t (p, c, v) VALUES (?, ?, ?)")
    for p in range(20):
        for c in range(5):
            session.execute(insert, (p, c, f"v{(p + c) % 4}"))
    session.execute("CREATE INDEX t_v ON ix.t (v)")  # built from the rows already there
    session.cluster.refresh_schema_metadata()
    assert "t_v" in session.cluster.metadata.keyspaces["ix"].indexes
    scan = [(r.p, r.c) for r in session.execute("SELECT p, c, v FROM ix.t") if r.v == "v1"]
    by_value = session.prepare("SELECT p, c FROM ix.t WHERE v = ?")
    by_value.fetch_size = 4
    assert [(r.p, r.c) for r in session.execute(by_value, ("v1",))] == scan
    session.execute("UPDATE ix.t SET v = 'moved' WHERE p = 0 AND c = 1")
    assert (0, 1) not in [(r.p, r.c) for r in session.execute(by_value, ("v1",))]
    assert [(r.p, r.c) for r in session.execute(by_value, ("moved",))] == [(0, 1)]
    tablets = session.execute(
        "SELECT table_name FROM system.tablets WHERE keyspace_name = 'ix' ALLOW FILTERING"
    )
    assert {r.table_name for r in tablets} == {"t", "t_v_index"}
    session.execute("DROP INDEX ix.t_v")
    tablets = session.execute(
        "SELECT table_name FROM system.tablets WHERE keyspace_name = 'ix' ALLOW FILTERING"
    )
    assert {r.table_name for r in tablets} == {"t"}

    session.execute(
        "CREATE MATERIALIZED VIEW ix.small AS SELECT * FROM ix.t "
        "WHERE p IS NOT NULL AND c IS NOT NULL AND c < 2 PRIMARY KEY (c, p)"
    )
    session.execute("INSERT INTO ix.t (p, c, v) VALUES (100, 1, 'x')")
    session.execute("INSERT INTO ix.t (p, c, v) VALUES (100, 3, 'y')")
    assert [(r.c, r.v) for r in session.execute("SELECT c, v FROM ix.small WHERE c = 1 AND p = 100")] == [
        (1, "x")
    ]
    assert list(session.execute("SELECT * FROM ix.small WHERE c = 3 AND p = 100")) == []

    session.execute("CREATE TYPE ix.addr (street text, num int)")
    session.execute("CREATE TABLE ix.u (id int PRIMARY KEY, a addr)")
    session.execute("INSERT INTO ix.u (id, a) VALUES (1, {street: 'Main', num: 1})")
    session.execute(session.prepare("UPDATE ix.u SET a.num = ? WHERE id = ?"), (42, 1))
    row = session.execute("SELECT a FROM ix.u WHERE id = 1").one()
    assert (row.a.street, row.a.num) == ("Main", 42)

    session.execute(
        "CREATE TABLE ix.m (p int, b int, c int, PRIMARY KEY (p, b, c)) "
        "WITH CLUSTERING ORDER BY (b ASC, c DESC)"
    )
    for b in range(3):
        for c in range(3):
            session.execute("INSERT INTO ix.m (p, b, c) VALUES (0, %s, %s)", (b, c))
    slice_ = SimpleStatement("SELECT b, c FROM ix.m WHERE p = 0 AND (b, c) > (1, 1)", fetch_size=2)
    assert [(r.b, r.c) for r in session.execute(slice_)] == [(1, 2), (2, 2), (2, 1), (2, 0)]
