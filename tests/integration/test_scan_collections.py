"""A paged ``SELECT *`` of a table with non-frozen collections through a real node and
scylla-driver, and the Spark data source's read of one (issue 19 item 5): every INSERT into such
a table writes a collection tombstone, and the replica decides those partitions and assembles
the collections in SQL. Whatever was written comes back: whole values that replaced earlier
ones, appends and prepends, elements deleted by index, value and key, deleted collections,
expired elements, a user type's fields, over eight tablets, pages crossing tablet and partition
boundaries, at ONE and QUORUM."""

from __future__ import annotations

import time
import uuid
from datetime import date
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.query import SimpleStatement

from tests.harness.node import TestNode

Row = tuple[Any, ...]


def _plain(r: Any) -> Row:
    return (
        r.id,
        r.name,
        None if r.tags is None else list(r.tags),
        None if r.s is None else sorted(r.s),
        None if r.m is None else dict(r.m),
        None if r.u is None else (r.u.a, r.u.b),
        r.x,
    )


def _scan(session: Any, fetch_size: int, level: int = ConsistencyLevel.ONE) -> list[Row]:
    statement = SimpleStatement("SELECT * FROM sco.t", fetch_size=fetch_size, consistency_level=level)
    return [_plain(r) for r in session.execute(statement)]


def test_a_paged_scan_returns_the_collections_written(session: Any) -> None:
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS sco WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 8}"
    )
    session.execute("CREATE TYPE IF NOT EXISTS sco.pair (a int, b text)")
    session.execute(
        "CREATE TABLE IF NOT EXISTS sco.t (id uuid PRIMARY KEY, name text, tags list<text>, s set<int>,"
        " m map<text, int>, u pair, x double)"
    )
    insert = session.prepare("INSERT INTO sco.t (id, name, tags, s, m, u, x) VALUES (?, ?, ?, ?, ?, ?, ?)")
    ids = [uuid.UUID(int=i + 1) for i in range(60)]
    live: dict[uuid.UUID, list[Any]] = {}
    for i, key in enumerate(ids):
        tags = [f"t{i}", "", f"t{i}"] if i % 5 else None  # repeats and an empty string kept in order
        row = [f"n{i}", tags, {i, -i}, {f"k{i}": i}, (i, f"b{i}"), i / 7]
        session.execute(insert, (key, *row))
        live[key] = row
    k = ids
    session.execute("UPDATE sco.t SET tags = ['new'] WHERE id = %s", (k[1],))  # replaces the INSERT's list
    live[k[1]][1] = ["new"]
    session.execute("UPDATE sco.t SET tags = tags + ['end'], s = s + {100} WHERE id = %s", (k[2],))
    live[k[2]][1] = [*live[k[2]][1], "end"]
    live[k[2]][2] = {2, -2, 100}
    session.execute("UPDATE sco.t SET tags = ['first'] + tags WHERE id = %s", (k[3],))
    live[k[3]][1] = ["first", *live[k[3]][1]]
    session.execute("DELETE tags[0] FROM sco.t WHERE id = %s", (k[4],))
    live[k[4]][1] = live[k[4]][1][1:]
    session.execute("UPDATE sco.t SET tags = tags - ['t6'] WHERE id = %s", (k[6],))
    live[k[6]][1] = [""]
    session.execute("DELETE tags, u FROM sco.t WHERE id = %s", (k[7],))
    live[k[7]][1] = live[k[7]][4] = None
    session.execute("UPDATE sco.t SET s = s - {8, -8}, m['k8'] = null, m['z'] = 1 WHERE id = %s", (k[8],))
    live[k[8]][2] = None  # an empty set is null
    live[k[8]][3] = {"z": 1}
    session.execute("UPDATE sco.t SET u.b = 'field' WHERE id = %s", (k[9],))
    live[k[9]][4] = (9, "field")
    session.execute("UPDATE sco.t SET tags = null, s = {} WHERE id = %s", (k[11],))
    live[k[11]][1] = live[k[11]][2] = None
    session.execute("DELETE FROM sco.t WHERE id = %s", (k[12],))
    del live[k[12]]
    # an appended element that expires, and a row whose only data is an expiring element
    session.execute("UPDATE sco.t USING TTL 1 SET tags = tags + ['brief'] WHERE id = %s", (k[13],))
    session.execute(
        "UPDATE sco.t USING TTL 1 SET tags = tags + ['gone'] WHERE id = %s", (uuid.UUID(int=999),)
    )
    expected = sorted(((key, *row) for key, row in live.items()), key=lambda r: r[0])

    def sort_key(row: Row) -> Any:
        return row[0]

    deadline = time.monotonic() + 60
    while len(_scan(session, 5000)) != len(expected):
        assert time.monotonic() < deadline, "the TTL'd elements never expired"
        time.sleep(0.2)
    for got in (_scan(session, 5000), _scan(session, 7), _scan(session, 1, ConsistencyLevel.QUORUM)):
        assert len(got) == len(expected)
        assert sorted(got, key=sort_key) == [_normal(row) for row in expected]


def _normal(row: Row) -> Row:
    key, name, tags, s, m, u, x = row
    return (key, name, tags, None if s is None else sorted(s), m, u, x)


def test_the_spark_read_of_a_list_table_returns_what_was_written(
    spark: Any, node: TestNode, session: Any
) -> None:
    """The user's table shape: its list and set columns reach Spark in Arrow batches."""
    session.execute(
        "CREATE KEYSPACE IF NOT EXISTS scs WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1} AND tablets = {'initial': 4}"
    )
    session.execute(
        "CREATE TABLE IF NOT EXISTS scs.t (id uuid PRIMARY KEY, name text, tags list<text>, s set<int>,"
        " d date, x double, ok boolean)"
    )
    insert = session.prepare("INSERT INTO scs.t (id, name, tags, s, d, x, ok) VALUES (?, ?, ?, ?, ?, ?, ?)")
    live: dict[str, list[Any]] = {}
    for i in range(40):
        key = uuid.UUID(int=i + 1)
        row = [f"n{i}", [f"t{i}", "a"] if i % 4 else None, {i} if i % 3 else None, date(2024, 1, 1 + i % 28)]
        row += [i / 3, i % 2 == 0]
        session.execute(insert, (key, *row))
        live[str(key)] = row
    session.execute("UPDATE scs.t SET tags = ['only'] WHERE id = %s", (uuid.UUID(int=2),))
    live[str(uuid.UUID(int=2))][1] = ["only"]
    session.execute("DELETE tags[1] FROM scs.t WHERE id = %s", (uuid.UUID(int=3),))
    live[str(uuid.UUID(int=3))][1] = ["t2"]
    session.execute("DELETE tags, s FROM scs.t WHERE id = %s", (uuid.UUID(int=6),))
    live[str(uuid.UUID(int=6))][1:3] = [None, None]
    options = {"hosts": node.host, "port": str(node.port), "table": "scs.t", "consistency": "ONE"}
    got = spark.read.format("tabletdb").options(**options).load().collect()
    assert sorted((r.id, r.name, r.tags, r.s, r.d, r.x, r.ok) for r in got) == sorted(
        (key, name, tags, None if s is None else sorted(s), d, x, ok)
        for key, (name, tags, s, d, x, ok) in live.items()
    )
