"""The data path through a real server process and scylla-driver."""

from __future__ import annotations

from typing import Any


def test_prepared_writes_and_paged_reads(session: Any) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS dp "
        "WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    session.execute("CREATE TABLE IF NOT EXISTS dp.kv (p int, c int, v text, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO dp.kv (p, c, v) VALUES (?, ?, ?)")
    for p in range(10):
        for c in range(30):
            session.execute(insert, (p, c, f"{p}-{c}"))
    select = session.prepare("SELECT c, v FROM dp.kv WHERE p = ?")
    assert [(r.c, r.v) for r in session.execute(select, (3,))] == [(c, f"3-{c}") for c in range(30)]
    from cassandra.query import SimpleStatement

    rows = list(session.execute(SimpleStatement("SELECT p, c FROM dp.kv", fetch_size=7)))
    assert sorted((r.p, r.c) for r in rows) == [(p, c) for p in range(10) for c in range(30)]
    assert len(rows) == 300
    session.execute("DELETE FROM dp.kv WHERE p = 3")
    assert list(session.execute(select, (3,))) == []


def test_tables_in_tablets_keyspaces_get_tablet_maps(session: Any) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS tk "
        "WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1} "
        "AND tablets = {'initial': 4}"
    )
    session.execute("CREATE TABLE IF NOT EXISTS tk.t (p text PRIMARY KEY, v int)")
    table_id = (
        session.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'tk' AND table_name = 't'")
        .one()
        .id
    )
    rows = list(
        session.execute(
            "SELECT last_token, tablet_count, replicas FROM system.tablets WHERE table_id = %s", (table_id,)
        )
    )
    assert [r.tablet_count for r in rows] == [4] * 4
    assert [r.last_token for r in rows] == sorted(r.last_token for r in rows)
    session.execute("INSERT INTO tk.t (p, v) VALUES ('hello', 1)")
    assert session.execute("SELECT v FROM tk.t WHERE p = 'hello'").one().v == 1
    session.execute("DROP TABLE tk.t")
    assert list(session.execute("SELECT * FROM system.tablets WHERE table_id = %s", (table_id,))) == []
