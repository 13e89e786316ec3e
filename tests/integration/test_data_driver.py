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
