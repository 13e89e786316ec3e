"""User-defined functions wherever a value goes (VALUES, SET, WHERE, IF, collection literals,
arguments of other functions, BATCH), prepared and not, typed as ScyllaDB types them; and scalar
functions of aggregates in a select list (`f(max(v))`, `toJson(count(*))`, `CAST(avg(v) AS text)`).
Through the driver, on one node with ScyllaDB's two UDF switches on. (EXECUTE permission in these
positions: tests/integration/test_auth_permissions.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import Session

from tests.harness.clients import scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory

LUA = "RETURNS NULL ON NULL INPUT"


@pytest.fixture(scope="module")
def session(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("udfterms"))
    try:
        with scylla_cluster(factory.start_node(options=UDF_OPTIONS)) as cluster:
            s = cluster.connect()
            s.execute(
                "CREATE KEYSPACE ut WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
            )
            s.execute(
                "CREATE TABLE ut.t (k int, c int, v int, n text, l list<int>, m map<text, int>, "
                "PRIMARY KEY (k, c))"
            )
            for signature, body in (
                (f"inc(a int) {LUA} RETURNS int", "return a + 1"),
                (f"twice(a int) {LUA} RETURNS int", "return a * 2"),
                (f"twice(a bigint) {LUA} RETURNS bigint", "return a * 2"),
                (f"label(a int) {LUA} RETURNS text", 'return "n" .. a'),
                ("orzero(a int) CALLED ON NULL INPUT RETURNS int", "if a == nil then return 0 end return a"),
                (f"boom(a int) {LUA} RETURNS int", 'error("no")'),
                (f"acc(s int, a int) {LUA} RETURNS int", "return s + a"),
            ):
                s.execute(f"CREATE FUNCTION ut.{signature} LANGUAGE lua AS '{body}'")
            s.execute("CREATE AGGREGATE ut.total(int) SFUNC acc STYPE int INITCOND 0")
            yield s
    finally:
        assert not factory.cleanup()


def _row(session: Session, where: str) -> Any:
    return session.execute(f"SELECT * FROM ut.t WHERE {where}").one()


def test_values_keys_collections_and_conditions_take_user_functions(session: Session) -> None:
    session.execute(
        "INSERT INTO ut.t (k, c, v, n, l, m) VALUES (inc(0), ut.inc(inc(0)), twice((int) 4), label(7), "
        "[inc(1), blobAsInt(intAsBlob(inc(2)))], {label(1): inc(10)})"
    )
    row = _row(session, "k = 1 AND c = 2")
    assert (row.v, row.n, row.l, dict(row.m)) == (8, "n7", [2, 3], {"n1": 11})
    # WHERE (partition and clustering key), SET, and the native function of a user one
    assert _row(session, "k = inc(0) AND c = twice((int) 1)").v == 8
    session.execute("UPDATE ut.t SET v = inc(41) WHERE k = 1 AND c = 2")
    assert _row(session, "k = 1 AND c = 2").v == 42
    # IF conditions compare with the function's result
    missed = session.execute("UPDATE ut.t SET v = 0 WHERE k = 1 AND c = 2 IF v = inc(40)").one()
    assert missed[0] is False and missed.v == 42
    applied = session.execute("UPDATE ut.t SET v = orzero(null) WHERE k = 1 AND c = 2 IF v = inc(41)").one()
    assert applied[0] is True and _row(session, "k = 1 AND c = 2").v == 0
    # RETURNS NULL ON NULL INPUT: a null argument makes a null value
    session.execute("UPDATE ut.t SET n = label(null) WHERE k = 1 AND c = 2")
    assert _row(session, "k = 1 AND c = 2").n is None
    session.execute(
        "BEGIN BATCH INSERT INTO ut.t (k, c, v) VALUES (inc(1), 1, inc(100)); "
        "UPDATE ut.t SET v = twice((int) 50) WHERE k = 2 AND c = inc(1) APPLY BATCH"
    )
    assert [(r.c, r.v) for r in session.execute("SELECT c, v FROM ut.t WHERE k = 2")] == [(1, 101), (2, 100)]
    session.execute("DELETE FROM ut.t WHERE k = inc(1) AND c = inc(0)")
    assert [r.c for r in session.execute("SELECT c FROM ut.t WHERE k = 2")] == [2]


def test_markers_passed_to_user_functions_take_their_parameter_types(session: Session) -> None:
    insert = session.prepare("INSERT INTO ut.t (k, c, v) VALUES (?, inc(?), twice((bigint) ?))")
    assert [m.type.typename for m in insert.column_metadata] == ["int", "int", "bigint"]
    assert insert.routing_key_indexes == [0]
    with pytest.raises(
        InvalidRequest, match=r"cannot assign result of function ut\.twice \(type bigint\) to v"
    ):
        session.execute(insert, (3, 1, 5))
    insert = session.prepare("INSERT INTO ut.t (k, c, v) VALUES (?, inc(?), twice((int) ?))")
    session.execute(insert, (3, 1, 5))
    select = session.prepare("SELECT v FROM ut.t WHERE k = ? AND c = inc(?)")
    assert [m.type.typename for m in select.column_metadata] == ["int", "int"]
    assert session.execute(select, (3, 1)).one().v == 10
    update = session.prepare("UPDATE ut.t SET v = label(?) WHERE k = 3 AND c = 2")
    assert update.column_metadata[0].type.typename == "int"
    with pytest.raises(
        InvalidRequest, match=r"cannot assign result of function ut\.label \(type text\) to v"
    ):
        session.execute(update, (1,))
    # an overloaded function needs a type hint on its marker
    with pytest.raises(InvalidRequest, match=r"Ambiguous call to function ut\.twice"):
        session.prepare("UPDATE ut.t SET v = twice(?) WHERE k = 3 AND c = 2")


def test_calls_are_checked_as_scylladb_checks_them(session: Session) -> None:
    def refused(values: str, match: str) -> None:
        with pytest.raises(InvalidRequest, match=match):
            session.execute(f"INSERT INTO ut.t (k, c, v) VALUES {values}")

    refused("(9, 1, label(1))", r"cannot assign result of function ut.label \(type text\) to v \(type int\)")
    refused("(9, 1, inc('x'))", r"Invalid call to function ut.inc, none of its type signatures match")
    refused("(9, 1, inc(1, 2))", r"Invalid number of arguments in call to function ut.inc: 1 required but 2")
    refused("(9, 1, twice(1))", r"Ambiguous call to function ut.twice .*use type casts to disambiguate")
    refused("(9, 1, ut.nosuch(1))", r"Unknown function ut.nosuch")
    refused("(9, 1, other.inc(1))", r"Unknown function other.inc")
    refused("(9, 1, total(1))", r"Aggregate function ut.total cannot be used here")
    refused("(9, 1, boom(1))", r"lua execution failed")
    assert session.execute("SELECT * FROM ut.t WHERE k = 9").one() is None


def test_scalar_functions_of_aggregates(session: Session) -> None:
    for c, v in ((1, 5), (2, 7), (3, 9)):
        session.execute("INSERT INTO ut.t (k, c, v) VALUES (20, %s, %s)", (c, v))
    session.execute("INSERT INTO ut.t (k, c, v) VALUES (21, 1, 1)")
    rs = session.execute(
        "SELECT inc(max(v)), toJson(count(*)), CAST(avg(v) AS text) AS a, inc(total(v)), max(v) "
        "FROM ut.t WHERE k = 20"
    )
    assert tuple(rs.one()) == (10, "3", "7", 22, 9)
    assert rs.column_names == [
        "ut.inc(system.max(v))",
        "system.tojson(count)",
        "a",
        "ut.inc(ut.total(v))",
        "system.max(v)",
    ]
    grouped = session.execute("SELECT k, inc(inc(min(v))) AS m FROM ut.t WHERE k IN (20, 21) GROUP BY k")
    assert [(r.k, r.m) for r in grouped] == [(20, 7), (21, 3)]
    assert (
        session.execute("SELECT JSON label(cast(count(v) AS int)) AS x FROM ut.t WHERE k = 20").one()[0]
        == '{"x": "n3"}'
    )
    # no rows: the aggregate is null (count is 0) and so is a function returning null on null input
    assert tuple(
        session.execute("SELECT inc(max(v)), inc(cast(count(*) AS int)) FROM ut.t WHERE k = 99").one()
    ) == (
        None,
        1,
    )
    prepared = session.prepare("SELECT blobAsInt(intAsBlob(sum(v))) FROM ut.t WHERE k = ?")
    assert prepared.result_metadata[0][3].typename == "int"
    assert session.execute(prepared, (20,)).one()[0] == 21
    with pytest.raises(InvalidRequest):
        session.execute("SELECT max(max(v)) FROM ut.t")


def test_element_subscripts_take_function_calls_and_null(session: Session) -> None:
    session.execute("INSERT INTO ut.t (k, c, l, m) VALUES (30, 1, [5, 6], {'n1': 10, 'a': 11})")
    row = session.execute(
        "SELECT m[label(1)], m[blobAsText(0x61)], l[inc(0)], m[null], l[null] FROM ut.t WHERE k = 30"
    ).one()
    assert tuple(row) == (10, 11, 6, None, None)
    with pytest.raises(
        InvalidRequest, match=r"cannot assign result of function ut\.inc \(type int\) to key\(m\)"
    ):
        session.execute("SELECT m[inc(1)] FROM ut.t")
