"""Full scans and COUNT(*) through a real node and scylla-driver (issue 19 item 5): rows deleted
every way, expired by TTL, spread over eight tablets, paged across tablet boundaries, counted
at ONE and QUORUM, whole and by token range — always the rows that were written and are live."""

from __future__ import annotations

import time
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement


def _rows(session: Any, cql: str, fetch_size: int) -> list[tuple[int, int, str | None, int | None]]:
    return [(r.k, r.c, r.v, r.n) for r in session.execute(SimpleStatement(cql, fetch_size=fetch_size))]


def _count(session: Any, cql: str, level: int = ConsistencyLevel.ONE) -> int:
    return int(session.execute(SimpleStatement(cql, consistency_level=level)).one()[0])


def test_scans_and_counts_see_exactly_the_live_rows(session: Any) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS sc WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 8}"
    )
    session.execute("CREATE TABLE IF NOT EXISTS sc.t (k int, c int, v text, n int, PRIMARY KEY (k, c))")
    insert = session.prepare("INSERT INTO sc.t (k, c, v, n) VALUES (?, ?, ?, ?)")
    live: dict[tuple[int, int], tuple[str | None, int | None]] = {}
    for k in range(40):
        for c in range(6):
            session.execute(insert, (k, c, f"{k}-{c}", k * c))
            live[k, c] = (f"{k}-{c}", k * c)
    session.execute("DELETE FROM sc.t WHERE k = 1")  # a partition
    session.execute("DELETE FROM sc.t WHERE k = 2 AND c = 3")  # a row
    session.execute("DELETE FROM sc.t WHERE k = 3 AND c > 2")  # a range
    session.execute("DELETE n FROM sc.t WHERE k = 4 AND c = 0")  # a cell: the row stays
    session.execute("UPDATE sc.t SET v = null WHERE k = 5 AND c = 1")
    for c in range(6):
        del live[1, c]
    del live[2, 3]
    for c in (3, 4, 5):
        del live[3, c]
    live[4, 0] = ("4-0", None)
    live[5, 1] = (None, 5)
    # rows whose only data expires: gone once the TTL passes; a row with a live marker stays
    session.execute("UPDATE sc.t USING TTL 1 SET v = 'brief' WHERE k = 100 AND c = 0")
    session.execute("INSERT INTO sc.t (k, c, v) VALUES (101, 0, 'kept')")
    session.execute("UPDATE sc.t USING TTL 1 SET n = 7 WHERE k = 101 AND c = 0")
    live[101, 0] = ("kept", None)
    expected = sorted((k, c, v, n) for (k, c), (v, n) in live.items())

    deadline = time.monotonic() + 60
    while _count(session, "SELECT count(*) FROM sc.t") != len(expected):
        assert time.monotonic() < deadline, "the TTL'd rows never expired"
        time.sleep(0.2)
    assert _count(session, "SELECT count(*) FROM sc.t", ConsistencyLevel.QUORUM) == len(expected)
    for fetch_size in (7, 5000):
        got = _rows(session, "SELECT k, c, v, n FROM sc.t", fetch_size)
        assert sorted(got) == expected
        assert len(got) == len(set(got))
    # by token range, as the Spark data source and restore's verification ask
    token_of = {r.k: r.t for r in session.execute("SELECT k, token(k) AS t FROM sc.t")}
    split = sorted(token_of.values())[len(token_of) // 2]
    low = f"SELECT count(*) FROM sc.t WHERE token(k) <= {split}"
    high = f"SELECT count(*) FROM sc.t WHERE token(k) > {split}"
    below = [row for row in expected if token_of[row[0]] <= split]
    assert _count(session, low) == len(below)
    assert _count(session, high) == len(expected) - len(below)
    assert sorted(_rows(session, f"SELECT k, c, v, n FROM sc.t WHERE token(k) <= {split}", 3)) == below
