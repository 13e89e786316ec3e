"""Lua user-defined functions and aggregates called in SELECT, through the driver, on a node with
ScyllaDB's two UDF switches on: values of every kind reach Lua and come back, aggregates fold
partitions, null-input rules hold, and what a function does wrong is an InvalidRequest with
ScyllaDB's reason while the node keeps serving."""

from __future__ import annotations

import datetime
import ipaddress
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import Session
from cassandra.util import Date, Duration, OrderedMapSerializedKey, SortedSet

from tests.harness.clients import scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory


@pytest.fixture(scope="module")
def session(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("udf"))
    try:
        with scylla_cluster(factory.start_node(options=UDF_OPTIONS)) as cluster:
            yield from _populated(cluster.connect())
    finally:
        problems = factory.cleanup()
        assert not problems, problems


def _populated(s: Session) -> Iterator[Session]:
    """Keyspace lf with t: partitions 0..2 of four rows (v = 10k + c) and partition 9 with v null."""
    s.execute("CREATE KEYSPACE lf WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE lf.t (k int, c int, v int, PRIMARY KEY (k, c))")
    for k in range(3):
        for c in range(4):
            s.execute("INSERT INTO lf.t (k, c, v) VALUES (%s, %s, %s)", (k, c, 10 * k + c))
    s.execute("INSERT INTO lf.t (k, c) VALUES (9, 0)")
    yield s


def test_a_function_is_called_with_aliases_nested_and_prepared(session: Session) -> None:
    session.execute(
        "CREATE FUNCTION lf.plus1(a int) RETURNS NULL ON NULL INPUT RETURNS int "
        "LANGUAGE lua AS 'return a + 1'"
    )
    rows = list(session.execute("SELECT c, plus1(v) AS x, lf.plus1(plus1(v)) FROM lf.t WHERE k = 1"))
    assert [(r.c, r.x) for r in rows] == [(0, 11), (1, 12), (2, 13), (3, 14)]
    assert rows[0]._fields == ("c", "x", "lf_plus1_lf_plus1_v")
    prepared = session.prepare("SELECT plus1(v) FROM lf.t WHERE k = ? AND c = ?")
    assert prepared.result_metadata[0][2] == "lf.plus1(v)"
    assert session.execute(prepared, (2, 3)).one()[0] == 24
    # RETURNS NULL ON NULL INPUT: the function is not run on a null argument
    assert session.execute("SELECT plus1(v) FROM lf.t WHERE k = 9").one()[0] is None
    # the argument of a native function, and a native one as the argument
    row = session.execute(
        "SELECT cast(plus1(v) AS text), plus1(cast(c AS int)) FROM lf.t WHERE k = 0 AND c = 2"
    )
    assert tuple(row.one()) == ("3", 3)


def test_called_on_null_input_sees_nil(session: Session) -> None:
    session.execute(
        "CREATE FUNCTION lf.orzero(a int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
        "AS 'if a == nil then return -1 end return a'"
    )
    assert session.execute("SELECT orzero(v) FROM lf.t WHERE k = 9").one()[0] == -1
    assert session.execute("SELECT orzero(v) FROM lf.t WHERE k = 0 AND c = 3").one()[0] == 3


def test_an_aggregate_folds_rows_per_partition_and_group(session: Session) -> None:
    session.execute(
        "CREATE FUNCTION lf.acc(s tuple<int, bigint>, v int) CALLED ON NULL INPUT RETURNS tuple<int, bigint> "
        "LANGUAGE lua AS 'if v == nil then return s end return {s[1] + 1, s[2] + v}'"
    )
    session.execute(
        "CREATE FUNCTION lf.mean(s tuple<int, bigint>) RETURNS NULL ON NULL INPUT RETURNS double "
        "LANGUAGE lua AS 'if s[1] == 0 then return nil end return s[2] / s[1]'"
    )
    session.execute(
        "CREATE AGGREGATE lf.average(int) SFUNC acc STYPE tuple<int, bigint> FINALFUNC mean INITCOND (0, 0)"
    )
    assert session.execute("SELECT average(v) AS m FROM lf.t WHERE k = 2").one().m == 21.5
    mixed = session.execute("SELECT count(*), average(v), max(v) FROM lf.t WHERE k = 2")
    assert tuple(mixed.one()) == (4, 21.5, 23)
    as_json = session.execute("SELECT JSON average(v) AS m FROM lf.t WHERE k = 1").one()[0]
    assert as_json == '{"m": 11.5}'
    grouped = list(session.execute("SELECT k, lf.average(v) FROM lf.t GROUP BY k"))
    assert sorted((r[0], r[1]) for r in grouped) == [(0, 1.5), (1, 11.5), (2, 21.5), (9, None)]
    session.execute(
        "CREATE FUNCTION lf.joined(s text, v int) RETURNS NULL ON NULL INPUT RETURNS text "
        "LANGUAGE lua AS 'return s .. v .. \",\"'"
    )
    session.execute("CREATE AGGREGATE lf.csv(int) SFUNC joined STYPE text INITCOND ''")
    assert session.execute("SELECT csv(c) FROM lf.t WHERE k = 0").one()[0] == "0,1,2,3,"


ECHO_TYPES = {
    "tx": ("text", "zażółć"),
    "bl": ("blob", b"\x00\xffraw"),
    "de": ("decimal", Decimal("3.14159265358979323846264338327950288419716939937510")),
    "vi": ("varint", 2**100 + 7),
    "bi": ("bigint", -(2**62)),
    "ti": ("tinyint", -7),
    "db": ("double", 2.5),
    "bo": ("boolean", True),
    "ts": ("timestamp", datetime.datetime(2024, 2, 29, 13, 14, 15, 123000)),
    "da": ("date", Date(datetime.date(1969, 7, 20))),
    "tm": ("time", 45_296_000_000_123),
    "du": ("duration", Duration(1, 2, 3_000_000_000)),
    "uu": ("uuid", uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")),
    "ia": ("inet", ipaddress.ip_address("2001:db8::1")),
    "li": ("list<int>", [3, 1, 2]),
    "se": ("set<text>", SortedSet(["a", "b"])),
    "ma": ("map<text, int>", OrderedMapSerializedKey(None, 0)),
    "tu": ("tuple<int, text>", (1, "x")),
    "ad": ("frozen<addr>", None),
}


def test_every_kind_of_value_goes_to_lua_and_back(session: Session) -> None:
    session.execute("CREATE TYPE lf.addr (street text, zip int)")
    columns = ", ".join(f"{name} {t}" for name, (t, _) in ECHO_TYPES.items())
    session.execute(f"CREATE TABLE lf.kinds (k int PRIMARY KEY, {columns})")
    values = {name: v for name, (_, v) in ECHO_TYPES.items() if v is not None and name != "ma"}
    names = ", ".join(values)
    marks = ", ".join(["?"] * len(values))
    insert = session.prepare(f"INSERT INTO lf.kinds (k, {names}) VALUES (1, {marks})")
    session.execute(insert, list(values.values()))
    session.execute(
        "UPDATE lf.kinds SET ma = {'one': 1, 'two': 2}, ad = {street: 'Main', zip: 12345} WHERE k = 1"
    )
    for name, (t, _) in ECHO_TYPES.items():
        declared = "addr" if name == "ad" else t
        session.execute(
            f"CREATE FUNCTION lf.echo_{name}(a {declared}) RETURNS NULL ON NULL INPUT RETURNS {declared} "
            "LANGUAGE lua AS 'return a'"
        )
    plain = session.execute(f"SELECT {', '.join(ECHO_TYPES)} FROM lf.kinds WHERE k = 1").one()
    echoed = session.execute(
        f"SELECT {', '.join(f'echo_{n}({n})' for n in ECHO_TYPES)} FROM lf.kinds WHERE k = 1"
    ).one()
    assert list(echoed) == list(plain)
    assert plain.de == ECHO_TYPES["de"][1] and plain.vi == 2**100 + 7


def test_lua_sees_scylladb_shapes(session: Session) -> None:
    session.execute("CREATE TABLE lf.shapes (k int PRIMARY KEY, s set<int>, m map<text, int>, ts timestamp)")
    session.execute("INSERT INTO lf.shapes (k, s, m, ts) VALUES (1, {5, 7}, {'a': 1, 'b': 2}, 1000)")
    session.execute(
        "CREATE FUNCTION lf.setsum(s set<int>) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
        "AS 'local n = 0 for e, present in pairs(s) do if present then n = n + e end end return n'"
    )
    session.execute(
        "CREATE FUNCTION lf.keys(m map<text, int>) RETURNS NULL ON NULL INPUT RETURNS set<text> LANGUAGE lua "
        "AS 'local out = {} for key, _ in pairs(m) do out[key .. \"!\"] = true end return out'"
    )
    session.execute(
        "CREATE FUNCTION lf.noon(ts timestamp) RETURNS NULL ON NULL INPUT RETURNS timestamp LANGUAGE lua "
        "AS 'return {year = 2020, month = 1, day = 2}'"
    )
    row = session.execute("SELECT setsum(s), keys(m), noon(ts) FROM lf.shapes WHERE k = 1").one()
    assert row[0] == 12
    assert sorted(row[1]) == ["a!", "b!"]
    assert row[2] == datetime.datetime(2020, 1, 2, 12, 0)


@pytest.mark.parametrize(
    ("body", "returns", "message"),
    [
        ("while true do end", "int", "lua execution timeout"),
        ("while true do pcall(function() while true do end end) end", "int", "lua execution timeout"),
        ('return io.open("/etc/passwd")', "int", "lua execution failed"),
        ("return os.exit(1)", "int", "lua execution failed"),
        ("local t = {} for i = 1, 1e9 do t[i] = i end return 1", "int", "not enough memory"),
        ('return "abc"', "int", "value is not a number"),
        ("return 1.5", "int", "value is not an integer"),
        ("return 300", "tinyint", "out of range"),
        ("return {1, 2}", "text", "unexpected value"),
        ("return 1, 2", "int", "2 values returned, expected 1"),
        ('error("refused by the function")', "int", "refused by the function"),
    ],
)
def test_what_a_function_does_wrong_is_an_invalid_request(
    session: Session, body: str, returns: str, message: str
) -> None:
    name = f"bad_{abs(hash((body, returns)))}"
    session.execute(
        f"CREATE FUNCTION lf.{name}(a int) CALLED ON NULL INPUT RETURNS {returns} LANGUAGE lua AS $${body}$$"
    )
    with pytest.raises(InvalidRequest, match=message):
        session.execute(f"SELECT {name}(v) FROM lf.t WHERE k = 0 AND c = 0")
    assert session.execute("SELECT v FROM lf.t WHERE k = 0 AND c = 1").one().v == 1  # still serving


def test_bad_definitions_are_refused_when_created(session: Session) -> None:
    with pytest.raises(InvalidRequest, match="could not compile"):
        session.execute(
            "CREATE FUNCTION lf.broken(a int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return +'"
        )
    with pytest.raises(InvalidRequest, match="'wasm' is not supported"):
        session.execute(
            "CREATE FUNCTION lf.w(a int) CALLED ON NULL INPUT RETURNS int LANGUAGE wasm AS '(module)'"
        )
    with pytest.raises(InvalidRequest, match="'java' is not supported"):
        session.execute(
            "CREATE FUNCTION lf.j(a int) CALLED ON NULL INPUT RETURNS int LANGUAGE java AS 'return a;'"
        )
    session.execute(
        "CREATE FUNCTION lf.keep(s int, v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return s'"
    )
    with pytest.raises(InvalidRequest, match="INITCOND"):
        session.execute("CREATE AGGREGATE lf.bad_init(int) SFUNC keep STYPE int INITCOND 'abc'")
    with pytest.raises(InvalidRequest, match="none of its type signatures match"):
        session.execute("SELECT keep(v, cast(c AS text)) FROM lf.t WHERE k = 0")


def test_described_functions_and_aggregates_restore_and_compute_the_same(session: Session) -> None:
    session.execute(
        "CREATE FUNCTION lf.weigh(s tuple<int, bigint>, v int, w list<int>) CALLED ON NULL INPUT "
        "RETURNS tuple<int, bigint> LANGUAGE lua "
        "AS $$if v == nil then return s end\nreturn {s[1] + 1, s[2] + v * #w}$$"
    )
    session.execute(
        "CREATE FUNCTION lf.mean2(s tuple<int, bigint>) RETURNS NULL ON NULL INPUT RETURNS double "
        "LANGUAGE lua AS 'return s[2] / s[1]'"
    )
    session.execute(
        "CREATE AGGREGATE lf.wmean(int, list<int>) SFUNC weigh STYPE tuple<int, bigint> FINALFUNC mean2 "
        "INITCOND (0, 0)"
    )
    texts = [
        session.execute(f"DESC {kind} lf.{name}").one().create_statement
        for kind, name in (("FUNCTION", "weigh"), ("FUNCTION", "mean2"), ("AGGREGATE", "wmean"))
    ]
    assert texts[0] == (
        "CREATE FUNCTION lf.weigh(s tuple<int, bigint>, v int, w list<int>)\nCALLED ON NULL INPUT\n"
        "RETURNS tuple<int, bigint>\nLANGUAGE lua\nAS $$\nif v == nil then return s end\n"
        "return {s[1] + 1, s[2] + v * #w}\n$$;\n"
    )
    assert texts[2] == (
        "CREATE AGGREGATE lf.wmean(int, list<int>)\nSFUNC weigh\nSTYPE tuple<int, bigint>\nFINALFUNC mean2\n"
        "INITCOND (0, 0);\n"
    )
    session.execute(
        "CREATE KEYSPACE lf2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
    )
    session.execute("CREATE TABLE lf2.t (k int, c int, v int, PRIMARY KEY (k, c))")
    for c in range(4):
        session.execute("INSERT INTO lf2.t (k, c, v) VALUES (1, %s, %s)", (c, 10 + c))
    for text in texts:
        session.execute(text.replace("lf.", "lf2."))
    again = [
        session.execute(f"DESC {kind} lf2.{name}").one().create_statement
        for kind, name in (("FUNCTION", "weigh"), ("FUNCTION", "mean2"), ("AGGREGATE", "wmean"))
    ]
    assert again == [t.replace("lf.", "lf2.") for t in texts]
    query = "SELECT wmean(v, [1, 2]) FROM {}.t WHERE k = 1"
    assert (
        session.execute(query.format("lf2")).one()[0] == session.execute(query.format("lf")).one()[0] == 23.0
    )
