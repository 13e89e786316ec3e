"""Non-frozen user types as one cell per field, and their CDC log form (issue 16), through a real
server process and scylla-driver.

The log rows are ScyllaDB's "Advanced column types" examples for ``CREATE TYPE ks.ut (a int,
b int, c int)``: the value column is ``frozen<ut>`` holding the fields a write set (the others
null), ``cdc$deleted_elements_v`` the indexes of the fields it deleted as ``frozen<set<smallint>>``,
and ``cdc$deleted_v`` a whole-value delete or overwrite; a write that only deletes shows the
value with every field null.
"""

from __future__ import annotations

from typing import Any

import pytest

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"


def _setup(session: Any) -> None:
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS cdcu WITH replication = {NTS_1}")
    session.execute("CREATE TYPE IF NOT EXISTS cdcu.ut (a int, b int, c int)")


def _fields(value: Any) -> tuple[Any, ...] | None:
    return None if value is None else (value.a, value.b, value.c)


def test_log_of_field_updates_deletes_and_overwrites(session: Any) -> None:
    _setup(session)
    session.execute(
        "CREATE TABLE cdcu.t (pk int, ck int, v ut, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}"
    )
    types = {
        r.column_name: r.type
        for r in session.execute(
            "SELECT column_name, type FROM system_schema.columns "
            "WHERE keyspace_name = 'cdcu' AND table_name = 't_scylla_cdc_log'"
        )
    }
    assert types["v"] == "frozen<ut>"
    assert types["cdc$deleted_v"] == "boolean"
    assert types["cdc$deleted_elements_v"] == "frozen<set<smallint>>"
    seen: list[Any] = []

    def new() -> list[tuple[Any, ...]]:
        rows = sorted(
            session.execute("SELECT * FROM cdcu.t_scylla_cdc_log"),
            key=lambda r: (r.cdc_time.time, r.cdc_batch_seq_no),
        )
        fresh = rows[len(seen) :]
        seen[:] = rows
        return [
            (
                r.cdc_operation,
                _fields(r.v),
                r.cdc_deleted_v,
                r.cdc_deleted_elements_v and set(r.cdc_deleted_elements_v),
            )
            for r in fresh
        ]

    def stored() -> tuple[Any, ...] | None:
        row = session.execute("SELECT v FROM cdcu.t WHERE pk = 0 AND ck = 0").one()
        return None if row is None else _fields(row.v)

    session.execute("UPDATE cdcu.t SET v.a = 0, v.b = 1 WHERE pk = 0 AND ck = 0")
    assert new() == [(1, (0, 1, None), None, None)]
    assert stored() == (0, 1, None)

    session.execute("UPDATE cdcu.t SET v.a = null, v.b = null WHERE pk = 0 AND ck = 0")
    assert new() == [(1, (None, None, None), None, {0, 1})]
    assert stored() is None  # no field live: the value is null

    session.execute("UPDATE cdcu.t SET v.a = 42, v.c = null WHERE pk = 0 AND ck = 0")
    assert new() == [(1, (42, None, None), None, {2})]

    session.execute("UPDATE cdcu.t SET v = null WHERE pk = 0 AND ck = 0")
    assert new() == [(1, (None, None, None), True, None)]

    session.execute("UPDATE cdcu.t SET v = {a: 1, b: 2} WHERE pk = 0 AND ck = 0")
    assert new() == [(1, (1, 2, None), True, None)]
    assert stored() == (1, 2, None)

    session.execute("INSERT INTO cdcu.t (pk, ck, v) VALUES (0, 0, {c: 3})")
    assert new() == [(2, (None, None, 3), True, None)]
    assert stored() == (None, None, 3)

    session.execute("DELETE v.c FROM cdcu.t WHERE pk = 0 AND ck = 0")
    assert new() == [(1, (None, None, None), None, {2})]
    assert stored() is None


def test_images_of_a_udt_column(session: Any) -> None:
    _setup(session)
    session.execute(
        "CREATE TABLE cdcu.img (pk int PRIMARY KEY, v ut, n int) "
        "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}"
    )
    session.execute("INSERT INTO cdcu.img (pk, v, n) VALUES (1, {a: 1, b: 2}, 0)")
    session.execute("UPDATE cdcu.img SET v.b = 20, v.c = 30 WHERE pk = 1")
    rows = sorted(
        session.execute("SELECT * FROM cdcu.img_scylla_cdc_log"),
        key=lambda r: (r.cdc_time.time, r.cdc_batch_seq_no),
    )
    last = [(r.cdc_operation, _fields(r.v)) for r in rows if r.cdc_time == rows[-1].cdc_time]
    assert last == [(0, (1, 2, None)), (1, (None, 20, 30)), (9, (1, 20, 30))]


def test_one_cell_per_field_reads_conditions_and_writetime(session: Any) -> None:
    """Field cells keep their own write time and TTL; reads assemble the value; conditions and
    selectors see fields; writetime of the whole non-frozen value is refused, of a field not."""
    from cassandra import InvalidRequest

    _setup(session)
    session.execute("CREATE TABLE cdcu.plain (k int PRIMARY KEY, v ut, f frozen<ut>)")
    session.execute("INSERT INTO cdcu.plain (k, v) VALUES (1, {a: 1, b: 2}) USING TIMESTAMP 100")
    session.execute("UPDATE cdcu.plain USING TIMESTAMP 200 AND TTL 1000 SET v.b = 3 WHERE k = 1")
    session.execute("UPDATE cdcu.plain USING TIMESTAMP 50 SET v.a = 9 WHERE k = 1")  # older: loses
    row = session.execute(
        "SELECT v, v.a, v.b, writetime(v.a), writetime(v.b), ttl(v.a), ttl(v.b) FROM cdcu.plain WHERE k = 1"
    ).one()
    assert _fields(row[0]) == (1, 3, None)
    assert (row[1], row[2], row[3], row[4], row[5]) == (1, 3, 100, 200, None)
    assert 0 < row[6] <= 1000
    with pytest.raises(InvalidRequest, match="non-frozen UDT"):
        session.execute("SELECT writetime(v) FROM cdcu.plain")
    with pytest.raises(InvalidRequest, match="frozen UDT"):
        session.execute("SELECT writetime(f.a) FROM cdcu.plain")

    assert not session.execute("UPDATE cdcu.plain SET v.c = 5 WHERE k = 1 IF v.b = 2").one()[0]
    assert session.execute("UPDATE cdcu.plain SET v.c = 5 WHERE k = 1 IF v.b = 3").one()[0]
    assert session.execute("UPDATE cdcu.plain SET v.a = null WHERE k = 1 IF v = {a: 1, b: 3, c: 5}").one()[0]
    assert _fields(session.execute("SELECT v FROM cdcu.plain WHERE k = 1").one().v) == (None, 3, 5)
    (json_row,) = session.execute("SELECT JSON v FROM cdcu.plain WHERE k = 1")
    assert json_row[0] == '{"v": {"a": null, "b": 3, "c": 5}}'
    session.execute("UPDATE cdcu.plain SET v = null WHERE k = 1")
    assert session.execute("SELECT v FROM cdcu.plain WHERE k = 1").one().v is None
