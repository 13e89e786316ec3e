"""Functions, casts, constants, collection elements and UDT fields in a select list, through the
real driver and one real node, with the names and types ScyllaDB gives their result columns;
what is not supported is refused with an InvalidRequest naming it."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from cassandra import InvalidRequest

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode

STAMP = datetime.datetime(2021, 3, 4, 5, 6, 7, 891000)


@pytest.fixture(scope="module")
def session(node: TestNode) -> Iterator[Any]:
    with scylla_cluster(node) as cluster:
        s = cluster.connect()
        s.execute(
            "CREATE KEYSPACE sf WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
        )
        s.execute("CREATE TYPE sf.addr (street text, zip int)")
        s.execute(
            "CREATE TABLE sf.t (k int, c int, v int, d double, ts timestamp, tu timeuuid, b blob, "
            "m map<text, int>, s set<int>, l list<text>, a frozen<addr>, u addr, PRIMARY KEY (k, c))"
        )
        s.execute(
            "INSERT INTO sf.t (k, c, v, d, ts, tu, b, m, s, l, a, u) VALUES (1, 1, 7, 2.75, %s, "
            "50554d6e-29bb-11e5-b345-feff819cdc9f, 0x0000002a, {'x': 1, 'y': 2}, {3, 4}, ['p', 'q'], "
            "{street: 'Main', zip: 123}, {street: 'Side', zip: 456}) USING TIMESTAMP 1000",
            (STAMP,),
        )
        for c, v in ((2, 5), (3, 9)):
            s.execute("INSERT INTO sf.t (k, c, v) VALUES (1, %s, %s) USING TIMESTAMP %s", (c, v, 1000 + c))
        s.execute("INSERT INTO sf.t (k, c, v) VALUES (2, 1, 100) USING TIMESTAMP 5000")
        yield s


def _one(session: Any, select: str) -> Any:
    return session.execute(f"SELECT {select} FROM sf.t WHERE k = 1 AND c = 1").one()


def test_time_conversion_functions_of_columns_and_of_generators(session: Any) -> None:
    row = _one(session, "toUnixTimestamp(ts), toDate(ts), toTimestamp(tu), unixTimestampOf(tu), dateOf(tu)")
    stamp_ms = int(STAMP.replace(tzinfo=datetime.UTC).timestamp() * 1000)
    assert row[0] == stamp_ms
    assert str(row[1]) == "2021-03-04"
    tu_ms = (uuid.UUID("50554d6e-29bb-11e5-b345-feff819cdc9f").time - 0x01B21DD213814000) // 10_000
    assert row[3] == tu_ms
    assert (
        row[2] == row[4] == datetime.datetime.fromtimestamp(tu_ms / 1000, datetime.UTC).replace(tzinfo=None)
    )
    now_row = _one(session, "now(), uuid(), currentTimestamp(), currentDate(), toUnixTimestamp(now())")
    assert now_row[0].version == 1 and now_row[1].version == 4
    assert abs(now_row[4] - int(now_row[2].timestamp() * 1000)) < 60_000  # same clock, one request
    low = _one(session, "minTimeuuid(ts), maxTimeuuid(ts)")
    # the smallest and greatest clock/node halves in CQL's signed-byte timeuuid order
    assert low[0].hex.endswith("8080808080808080") and low[1].hex.endswith("7f7f7f7f7f7f7f7f")
    assert low[0].time == low[1].time
    assert (low[0].time - 0x01B21DD213814000) // 10_000 == stamp_ms


def test_result_columns_are_named_as_scylla_names_them_and_aliases_win(session: Any) -> None:
    rs = session.execute(
        "SELECT toUnixTimestamp(ts), blobAsInt(b) AS n, m['x'], a.zip, CAST(v AS text) FROM sf.t"
    )
    assert rs.column_names == ["system.tounixtimestamp(ts)", "n", "m['x']", "a.zip", "cast(v as text)"]


def test_blob_conversions_round_trip(session: Any) -> None:
    row = _one(session, "blobAsInt(b), intAsBlob(v), blobAsBigint(bigintAsBlob(3)), textAsBlob('hi')")
    assert row == (42, b"\x00\x00\x00\x07", 3, b"hi")
    with pytest.raises(InvalidRequest, match="blobasint"):
        _one(session, "blobAsInt(v)")


def test_cast_between_numbers_and_to_text(session: Any) -> None:
    row = _one(
        session, "CAST(d AS int), CAST(v AS double), CAST(v AS text), CAST(d AS decimal), CAST(ts AS date)"
    )
    assert row[0] == 2 and row[1] == 7.0 and row[2] == "7" and row[3] == Decimal("2.75")
    assert str(row[4]) == "2021-03-04"
    with pytest.raises(InvalidRequest, match="cannot be cast to"):
        _one(session, "CAST(tu AS int)")


def test_collection_elements_and_udt_fields(session: Any) -> None:
    row = _one(session, "m['x'], m['nope'], s[4], s[5], l[1], l[9], a.street, u.zip")
    assert row == (1, None, 4, None, "q", None, "Main", 456)
    with pytest.raises(InvalidRequest, match="not a user type"):
        _one(session, "v.f")
    with pytest.raises(InvalidRequest, match="has no field"):
        _one(session, "a.nope")
    with pytest.raises(InvalidRequest, match="not a collection"):
        _one(session, "v[1]")


def test_constants_and_tojson_in_the_select_list(session: Any) -> None:
    row = _one(session, "1, 'x', toJson(m), toJson(a), toJson(v)")
    assert row[0] == 1 and row[1] == "x"
    assert row[2] == '{"x": 1, "y": 2}'
    assert row[3] == '{"street": "Main", "zip": 123}'
    assert row[4] == "7"


def test_aggregates_over_expressions_and_group_by(session: Any) -> None:
    rows = list(
        session.execute(
            "SELECT k, max(writetime(v)), min(CAST(v AS double)), count(v), sum(v) FROM sf.t GROUP BY k"
        )
    )
    assert [tuple(r) for r in rows] == [(1, 1003, 5.0, 3, 21), (2, 5000, 100.0, 1, 100)]
    total = session.execute("SELECT avg(v), count(*), max(toUnixTimestamp(ts)) FROM sf.t WHERE k = 1").one()
    assert total[0] == 7 and total[1] == 3 and total[2] is not None


def test_prepared_select_of_functions(session: Any) -> None:
    ps = session.prepare("SELECT blobAsInt(b), m['y'], CAST(v AS bigint) FROM sf.t WHERE k = ? AND c = ?")
    assert [c[3].typename for c in ps.result_metadata] == ["int", "int", "bigint"]
    assert tuple(session.execute(ps, (1, 1)).one()) == (42, 2, 7)


def test_what_is_not_supported_is_refused_by_name(session: Any) -> None:
    with pytest.raises(InvalidRequest, match="Unknown function nosuch"):
        _one(session, "nosuch(v)")
    with pytest.raises(InvalidRequest, match=r"Unknown function sf\.myfn"):  # user functions run (udf)
        _one(session, "sf.myfn(v)")
    with pytest.raises(InvalidRequest, match="Bind markers are not supported"):
        session.prepare("SELECT m[?] FROM sf.t")
    with pytest.raises(
        InvalidRequest, match="WRITETIME on a field selection is only valid for non-frozen UDT"
    ):
        _one(session, "writetime(a.zip)")  # a is frozen: one cell (ScyllaDB's refusal)
    with pytest.raises(InvalidRequest, match="non-frozen collection"):
        _one(session, "writetime(m)")
    with pytest.raises(InvalidRequest, match="fromJson"):
        _one(session, "fromJson(v)")


def test_functions_and_fromjson_in_values_where_and_set(session: Any) -> None:
    session.execute("CREATE TABLE sf.w (k int PRIMARY KEY, ts timestamp, n int, m map<text, int>, b blob)")
    session.execute(
        "INSERT INTO sf.w (k, ts, n, m, b) VALUES (blobAsInt(0x00000001), toTimestamp(now()), "
        "fromJson('42'), fromJson('{\"a\": 1}'), intAsBlob(7))"
    )
    row = session.execute("SELECT k, ts, n, m, b FROM sf.w WHERE k = blobAsInt(intAsBlob(1))").one()
    assert row.k == 1 and row.ts is not None and row.n == 42 and row.m == {"a": 1}
    assert row.b == b"\x00\x00\x00\x07"
    session.execute(session.prepare("UPDATE sf.w SET n = blobAsInt(?) WHERE k = ?"), (b"\x00\x00\x00\x09", 1))
    assert session.execute("SELECT n FROM sf.w WHERE k = 1").one().n == 9
    ps = session.prepare("UPDATE sf.w SET n = fromJson(?) WHERE k = ?")
    assert ps.column_metadata[0].type.typename in ("varchar", "text")
    session.execute(ps, ("43", 1))
    assert session.execute("SELECT n FROM sf.w WHERE k = 1").one().n == 43
    with pytest.raises(InvalidRequest, match=r"system.todate \(type date\) to n"):
        session.execute("INSERT INTO sf.w (k, n) VALUES (2, toDate(now()))")
    with pytest.raises(InvalidRequest, match="type hint"):
        session.execute("INSERT INTO sf.w (k, b) VALUES (2, toJson(1))")
    with pytest.raises(InvalidRequest, match="Could not decode JSON"):
        session.execute("INSERT INTO sf.w (k, n) VALUES (2, fromJson('nope'))")


def test_system_tables_take_the_same_selectors(session: Any) -> None:
    row = session.execute(
        "SELECT keyspace_name AS ks, toJson(durable_writes), textAsBlob(keyspace_name), "
        "replication['class'], "
        "1, CAST(durable_writes AS text) FROM system_schema.keyspaces WHERE keyspace_name = 'sf'"
    ).one()
    assert row[0] == "sf" and row[1] == "true" and row[2] == b"sf" and row[4] == 1 and row[5] == "true"
    assert row[3].endswith("SimpleStrategy")
    counted = session.execute(
        "SELECT count(keyspace_name), max(blobAsText(textAsBlob(keyspace_name))) FROM system_schema.keyspaces"
    ).one()
    assert counted[0] >= 2 and counted[1] >= "sf"
    with pytest.raises(InvalidRequest, match="not supported on system tables"):
        session.execute("SELECT writetime(durable_writes) FROM system_schema.keyspaces")


def test_elements_and_fields_filter_in_where(session: Any) -> None:
    assert [
        r.c for r in session.execute("SELECT c FROM sf.t WHERE k = 1 AND m['x'] = 1 ALLOW FILTERING")
    ] == [1]
    assert [
        r.c for r in session.execute("SELECT c FROM sf.t WHERE k = 1 AND m['x'] = 2 ALLOW FILTERING")
    ] == []
    assert [
        r.c for r in session.execute("SELECT c FROM sf.t WHERE k = 1 AND a.zip = 123 ALLOW FILTERING")
    ] == [1]
    ps = session.prepare("SELECT c FROM sf.t WHERE k = ? AND a.street = ? ALLOW FILTERING")
    assert [r.c for r in session.execute(ps, (1, "Main"))] == [1]
    with pytest.raises(InvalidRequest, match="has no field"):
        session.execute("SELECT c FROM sf.t WHERE k = 1 AND a.nope = 1 ALLOW FILTERING")


def test_functions_in_conditions_collection_literals_and_limits(session: Any) -> None:
    session.execute("CREATE TABLE sf.c (k int PRIMARY KEY, v int, l list<bigint>, m map<int, text>)")
    session.execute(
        "INSERT INTO sf.c (k, v, l, m) VALUES (1, 5, [toUnixTimestamp(toDate((date) '2020-01-02')), 3], "
        "{blobAsInt(0x00000002): 'two'})"
    )
    row = session.execute("SELECT l, m FROM sf.c WHERE k = 1").one()
    assert row.l == [1577923200000, 3] and row.m == {2: "two"}
    applied = session.execute("UPDATE sf.c SET v = 6 WHERE k = 1 IF v = blobAsInt(0x00000005)").one()
    assert applied[0] is True
    session.execute("DELETE FROM sf.c WHERE k = blobAsInt(0x00000001)")
    assert session.execute("SELECT k FROM sf.c WHERE k = 1").one() is None
    with pytest.raises(InvalidRequest, match=r"Ambiguous call to function todate.*\(timeuuid\) '2020-01-02'"):
        session.execute("INSERT INTO sf.c (k, l) VALUES (2, [toUnixTimestamp(toDate('2020-01-02'))])")
