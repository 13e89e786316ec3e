"""A corpus of CQL statements (every construct the grammar covers, plus the exact queries drivers
and cqlsh send) parsed to the expected AST; malformed ones must fail with `line L:C`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tabletdb.cql import ast
from tabletdb.cql import types as t
from tabletdb.cql.errors import CqlSyntaxError, InvalidRequest
from tabletdb.cql.parser import parse, parse_statement

Q = ast.QualifiedName
L = ast.Literal
B = ast.BindMarker


def i(text: str) -> ast.Literal:
    return L("integer", text)


def s(text: str) -> ast.Literal:
    return L("string", text)


Check = Callable[[Any], Any]
T = " USING TIMEOUT 2000ms"  # what scylla-driver appends to its system queries

# (statement text, expected class, check returning a truthy value / raising on mismatch)
DRIVER_QUERIES: list[tuple[str, type, Check]] = [
    (
        "SELECT peer, data_center, host_id, rack, release_version, rpc_address, schema_version, tokens "
        "FROM system.peers USING TIMEOUT 2000ms",
        ast.SelectStatement,
        lambda st: (
            st.table == Q("system", "peers")
            and len(st.selectors) == 8
            and st.timeout == L("duration", "2000ms")
        ),
    ),
    (
        "SELECT broadcast_address, cluster_name, data_center, host_id, listen_address, partitioner, rack, "
        "release_version, rpc_address, schema_version, tokens FROM system.local WHERE key='local' "
        "USING TIMEOUT 2000ms",
        ast.SelectStatement,
        lambda st: (
            st.where == (ast.Relation(ast.ColumnRef("key"), "=", s("local")),)
            and st.timeout == L("duration", "2000ms")
        ),
    ),
    (
        "SELECT host_id, peer, data_center, rack, rpc_address, rpc_address, release_version, schema_version "
        "FROM system.peers",
        ast.SelectStatement,
        lambda st: [x.expr.name for x in st.selectors].count("rpc_address") == 2,
    ),
    (
        "SELECT * FROM system_schema.keyspaces USING TIMEOUT 5000ms",
        ast.SelectStatement,
        lambda st: st.selectors is None and st.timeout == L("duration", "5000ms"),
    ),
    (
        "SELECT keyspace_name, consistency FROM system_schema.scylla_keyspaces USING TIMEOUT 2000ms",
        ast.SelectStatement,
        lambda st: (
            [x.expr for x in st.selectors] == [ast.ColumnRef("keyspace_name"), ast.ColumnRef("consistency")]
        ),
    ),
    (
        "SELECT * FROM system_schema.functions WHERE keyspace_name = 'k' AND function_name = 'f' "
        "AND argument_types = ['int', 'text'] USING TIMEOUT 2000ms",
        ast.SelectStatement,
        lambda st: st.where[2].rhs == ast.ListLiteral((s("int"), s("text"))),
    ),
    (
        "SELECT * FROM system_schema.views WHERE keyspace_name = 'k' AND view_name = 't'" + T,
        ast.SelectStatement,
        lambda st: [r.lhs.name for r in st.where] == ["keyspace_name", "view_name"],
    ),
    (
        "SELECT * FROM system_traces.sessions WHERE session_id = 5c1d4a6e-1f9a-11ee-be56-0242ac120002 "
        "USING TIMEOUT 2000ms",
        ast.SelectStatement,
        lambda st: st.where[0].rhs == L("uuid", "5c1d4a6e-1f9a-11ee-be56-0242ac120002"),
    ),
    (
        "SELECT schema_version FROM system.local WHERE key='local' USING TIMEOUT 5000ms",
        ast.SelectStatement,
        lambda st: st.table.name == "local",
    ),
    (
        "select * from system.local where key = 'local'",
        ast.SelectStatement,
        lambda st: st.where[0].rhs == s("local"),
    ),
    ("SELECT * FROM system.versions WHERE key = 'local'", ast.SelectStatement, lambda st: True),
    ("SELECT * FROM system.peers_v2", ast.SelectStatement, lambda st: st.table == Q("system", "peers_v2")),
    ("DESC TABLE ks.t;", ast.Describe, lambda st: st.kind == "TABLE" and st.name == Q("ks", "t")),
    (
        "DESC SCHEMA WITH INTERNALS AND PASSWORDS",
        ast.Describe,
        lambda st: st.kind == "SCHEMA" and st.with_internals and st.with_passwords,
    ),
]

DML: list[tuple[str, type, Check]] = [
    (
        "INSERT INTO ks.t (pk, ck, v) VALUES (1, -2, 'it''s') IF NOT EXISTS USING TTL 10 AND TIMESTAMP 123",
        ast.InsertStatement,
        lambda st: (
            st.values == (i("1"), i("-2"), s("it's"))
            and st.if_not_exists
            and st.attributes == ast.Attributes(i("10"), i("123"))
        ),
    ),
    (
        "INSERT INTO t JSON '{\"a\": 1}' DEFAULT UNSET",
        ast.InsertStatement,
        lambda st: st.json == s('{"a": 1}') and st.json_default_unset and st.columns == (),
    ),
    (
        "INSERT INTO t JSON ? DEFAULT NULL USING TIMEOUT 1s",
        ast.InsertStatement,
        lambda st: (
            st.json == B(0) and not st.json_default_unset and st.attributes.timeout == L("duration", "1s")
        ),
    ),
    (
        "INSERT INTO t (a, b, c, d, e, f, g, h) "
        "VALUES (NaN, Infinity, -Infinity, 0xCAFE, 1.5e-3, true, null, 1h30m)",
        ast.InsertStatement,
        lambda st: (
            st.values
            == (
                L("float", "NaN"),
                L("float", "Infinity"),
                L("float", "-Infinity"),
                L("hex", "0xCAFE"),
                L("float", "1.5e-3"),
                L("boolean", "true"),
                ast.Null(),
                L("duration", "1h30m"),
            )
        ),
    ),
    (
        "INSERT INTO t (a, b, c, d, e) VALUES ({}, {1, 2}, {'a': 1}, {street: 'x', zip: 1}, [])",
        ast.InsertStatement,
        lambda st: (
            st.values
            == (
                ast.MapLiteral(()),
                ast.SetLiteral((i("1"), i("2"))),
                ast.MapLiteral(((s("a"), i("1")),)),
                ast.UdtLiteral((("street", s("x")), ("zip", i("1")))),
                ast.ListLiteral(()),
            )
        ),
    ),
    (
        "INSERT INTO t (a, b, c) VALUES ((int) ?, (1, 'x'), (text) 'y')",
        ast.InsertStatement,
        lambda st: (
            st.values
            == (
                ast.TypeCast(t.INT, B(0)),
                ast.TupleLiteral((i("1"), s("x"))),
                ast.TypeCast(t.TEXT, s("y")),
            )
        ),
    ),
    (
        "INSERT INTO t (a, b, c) VALUES (now(), uuid(), ks.f(1, ?))",
        ast.InsertStatement,
        lambda st: (
            st.values
            == (
                ast.FunctionCall(None, "now", ()),
                ast.FunctionCall(None, "uuid", ()),
                ast.FunctionCall("ks", "f", (i("1"), B(0))),
            )
        ),
    ),
    (
        "UPDATE ks.t USING TTL 5 SET l = l + [1], l = [0] + l, m['k'] = 'v', l[2] = 4, s = s - {1}, "
        "c = c + 1, u.f = 3 WHERE pk = 1 AND ck IN (1, 2) IF a = 1 AND b IN (1, 2)",
        ast.UpdateStatement,
        lambda st: (
            st.assignments
            == (
                ast.AddToColumn("l", ast.ListLiteral((i("1"),))),
                ast.PrependToColumn("l", ast.ListLiteral((i("0"),))),
                ast.SetElement("m", s("k"), s("v")),
                ast.SetElement("l", i("2"), i("4")),
                ast.SubtractFromColumn("s", ast.SetLiteral((i("1"),))),
                ast.AddToColumn("c", i("1")),
                ast.SetField("u", "f", i("3")),
            )
            and st.where[1] == ast.Relation(ast.ColumnRef("ck"), "IN", ast.InValues((i("1"), i("2"))))
            and st.conditions[1].op == "IN"
            and st.attributes.ttl == i("5")
        ),
    ),
    (
        "UPDATE t SET c += 1, d -= 2 WHERE k = ? IF EXISTS",
        ast.UpdateStatement,
        lambda st: (
            st.assignments == (ast.AddToColumn("c", i("1")), ast.SubtractFromColumn("d", i("2")))
            and st.if_exists
            and st.conditions == ()
        ),
    ),
    (
        "UPDATE t SET v = 1 WHERE k = 1 IF m['k'] = ? AND u.f > 3 AND x != null",
        ast.UpdateStatement,
        lambda st: (
            st.conditions
            == (
                ast.Relation(ast.ElementRef("m", s("k")), "=", B(0)),
                ast.Relation(ast.FieldRef("u", "f"), ">", i("3")),
                ast.Relation(ast.ColumnRef("x"), "!=", ast.Null()),
            )
        ),
    ),
    ("DELETE FROM t WHERE k = 1", ast.DeleteStatement, lambda st: st.targets == ()),
    (
        "DELETE m['k'], l[1], v, u.f FROM ks.t USING TIMESTAMP 10 WHERE k = 1 IF EXISTS",
        ast.DeleteStatement,
        lambda st: (
            st.targets
            == (
                ast.ElementRef("m", s("k")),
                ast.ElementRef("l", i("1")),
                ast.DeleteColumn("v"),
                ast.FieldRef("u", "f"),
            )
            and st.attributes.timestamp == i("10")
            and st.if_exists
        ),
    ),
    (
        "BEGIN BATCH INSERT INTO t (a) VALUES (?); UPDATE t SET b = ? WHERE a = ?; "
        "DELETE FROM t WHERE a = :last; APPLY BATCH",
        ast.BatchStatement,
        lambda st: (
            st.kind == "LOGGED"
            and [type(x) for x in st.statements]
            == [ast.InsertStatement, ast.UpdateStatement, ast.DeleteStatement]
            and st.bind_markers == (B(0), B(1), B(2), B(3, "last"))
            and st.statements[2].bind_markers == (B(3, "last"),)
        ),
    ),
    (
        "BEGIN UNLOGGED BATCH USING TIMESTAMP 5 INSERT INTO t (a) VALUES (1) INSERT INTO t (a) VALUES (2) "
        "APPLY BATCH;",
        ast.BatchStatement,
        lambda st: st.kind == "UNLOGGED" and st.attributes.timestamp == i("5") and len(st.statements) == 2,
    ),
    (
        "BEGIN COUNTER BATCH UPDATE t SET c = c + 1 WHERE k = 1; APPLY BATCH",
        ast.BatchStatement,
        lambda st: st.kind == "COUNTER",
    ),
    (
        "SELECT JSON DISTINCT pk FROM t",
        ast.SelectStatement,
        lambda st: st.json and st.distinct and st.selectors == (ast.Selector(ast.ColumnRef("pk")),),
    ),
    (
        "SELECT a AS x, writetime(b), ttl(c), cast(d as text), count(*), COUNT(1), token(pk), ks.f(a, 'x'), "
        "now(), u.f, m['k'] FROM t WHERE pk = ? AND ck > 3 AND ck <= 10 GROUP BY pk, ck ORDER BY ck DESC "
        "PER PARTITION LIMIT 2 LIMIT 100 ALLOW FILTERING BYPASS CACHE USING TIMEOUT 500ms",
        ast.SelectStatement,
        lambda st: (
            [x.expr for x in st.selectors]
            == [
                ast.ColumnRef("a"),
                ast.FunctionCall(None, "writetime", (ast.ColumnRef("b"),)),
                ast.FunctionCall(None, "ttl", (ast.ColumnRef("c"),)),
                ast.Cast(ast.ColumnRef("d"), t.TEXT),
                ast.CountRows(),
                ast.FunctionCall(None, "count", (i("1"),)),
                ast.FunctionCall(None, "token", (ast.ColumnRef("pk"),)),
                ast.FunctionCall("ks", "f", (ast.ColumnRef("a"), s("x"))),
                ast.FunctionCall(None, "now", ()),
                ast.FieldRef("u", "f"),
                ast.ElementRef("m", s("k")),
            ]
            and st.selectors[0].alias == "x"
            and st.group_by == ("pk", "ck")
            and st.order_by == (ast.Ordering("ck", False),)
            and st.per_partition_limit == i("2")
            and st.limit == i("100")
            and st.allow_filtering
            and st.bypass_cache
            and st.timeout == L("duration", "500ms")
        ),
    ),
    (
        "SELECT * FROM t WHERE (a, b) > (1, 2) AND (a, b) < ? AND (a, b) IN ((1, 2), (3, 4)) AND (a, b) IN ? "
        "AND token(a, b) > ? AND token(a, b) <= token(1, 2)",
        ast.SelectStatement,
        lambda st: (
            st.where
            == (
                ast.Relation(ast.ColumnTuple(("a", "b")), ">", ast.TupleLiteral((i("1"), i("2")))),
                ast.Relation(ast.ColumnTuple(("a", "b")), "<", B(0)),
                ast.Relation(
                    ast.ColumnTuple(("a", "b")),
                    "IN",
                    ast.InValues((ast.TupleLiteral((i("1"), i("2"))), ast.TupleLiteral((i("3"), i("4"))))),
                ),
                ast.Relation(ast.ColumnTuple(("a", "b")), "IN", B(1)),
                ast.Relation(ast.TokenOf(("a", "b")), ">", B(2)),
                ast.Relation(
                    ast.TokenOf(("a", "b")), "<=", ast.FunctionCall(None, "token", (i("1"), i("2")))
                ),
            )
        ),
    ),
    (
        "SELECT * FROM t WHERE tags CONTAINS 'x' AND m CONTAINS KEY 'k' AND m['a'] = 1 AND name LIKE 'a%' "
        "ALLOW FILTERING",
        ast.SelectStatement,
        lambda st: (
            [r.op for r in st.where] == ["CONTAINS", "CONTAINS KEY", "=", "LIKE"]
            and st.where[2].lhs == ast.ElementRef("m", s("a"))
        ),
    ),
    (
        "SELECT * FROM t WHERE a = :first AND b IN (?, ?) AND c = :first",
        ast.SelectStatement,
        lambda st: st.bind_markers == (B(0, "first"), B(1), B(2), B(3, "first")),
    ),
    ("SELECT * FROM t WHERE a IN ()", ast.SelectStatement, lambda st: st.where[0].rhs == ast.InValues(())),
    (
        "SELECT * FROM t ORDER BY v ANN OF [0.1, 0.2] LIMIT 3",
        ast.SelectStatement,
        lambda st: st.order_by[0].ann_of == ast.ListLiteral((L("float", "0.1"), L("float", "0.2"))),
    ),
    (
        "SELECT * FROM t WHERE a = P1Y2M AND b = PT2H30M AND c = -5s AND d = 0x AND "
        "e = 1mo2w3d4h5m6s7ms8us9ns",
        ast.SelectStatement,
        lambda st: (
            [r.rhs for r in st.where]
            == [
                L("duration", "P1Y2M"),
                L("duration", "PT2H30M"),
                L("duration", "-5s"),
                L("hex", "0x"),
                L("duration", "1mo2w3d4h5m6s7ms8us9ns"),
            ]
        ),
    ),
    (
        "SELECT * FROM t WHERE a > -3.5E+10 AND b = 1e3 AND c = -0 AND d = 1.",
        ast.SelectStatement,
        lambda st: (
            [r.rhs for r in st.where]
            == [L("float", "-3.5E+10"), L("float", "1e3"), i("-0"), L("float", "1.")]
        ),
    ),
    (
        "SELECT * FROM t WHERE a = $$it's\n-- not a comment$$",
        ast.SelectStatement,
        lambda st: st.where[0].rhs == s("it's\n-- not a comment"),
    ),
    (
        'SeLeCt "MyCol", "a""b" FrOm "MyKs"."MyTable"',
        ast.SelectStatement,
        lambda st: (
            st.table == Q("MyKs", "MyTable") and [x.expr.name for x in st.selectors] == ["MyCol", 'a"b']
        ),
    ),
    (
        "SELECT /* block\ncomment */ a -- line comment\nFROM t // another\nWHERE a = 1",
        ast.SelectStatement,
        lambda st: st.where[0].rhs == i("1"),
    ),
    (
        "SELECT json FROM t",
        ast.SelectStatement,
        lambda st: st.selectors[0].expr == ast.ColumnRef("json") and not st.json,
    ),
    ("SELECT distinct FROM t", ast.SelectStatement, lambda st: not st.distinct),
    ("SELECT distinct, json FROM t", ast.SelectStatement, lambda st: len(st.selectors) == 2 and not st.json),
    (
        "SELECT DISTINCT(pk) FROM t",
        ast.SelectStatement,
        lambda st: st.distinct and st.selectors == (ast.Selector(ast.ColumnRef("pk")),),
    ),
    (
        'SELECT "json" AS j, (b) AS c FROM t',
        ast.SelectStatement,
        lambda st: (
            st.selectors == (ast.Selector(ast.ColumnRef("json"), "j"), ast.Selector(ast.ColumnRef("b"), "c"))
        ),
    ),
    (
        "SELECT f((int) ?, (text) :x, 1) FROM t",
        ast.SelectStatement,
        lambda st: (
            st.selectors[0].expr.args == (ast.TypeCast(t.INT, B(0)), ast.TypeCast(t.TEXT, B(1, "x")), i("1"))
        ),
    ),
    (
        "SELECT key, type, values, ttl, timestamp, writetime, count FROM t WHERE key = 1",
        ast.SelectStatement,
        lambda st: (
            [x.expr.name for x in st.selectors]
            == ["key", "type", "values", "ttl", "timestamp", "writetime", "count"]
        ),
    ),
]

# Every other query text spec/clients.md 3.2-3.5 lists, exactly as the drivers build them.
MORE_DRIVER_QUERIES = [
    *(
        f"SELECT * FROM system_schema.{table}{suffix}"
        for table in ("tables", "columns", "types", "functions", "aggregates", "indexes", "views", "triggers")
        for suffix in ("", T)
    ),
    "SELECT * FROM system_schema.keyspaces WHERE keyspace_name = 'k'" + T,
    "SELECT keyspace_name, consistency FROM system_schema.scylla_keyspaces WHERE keyspace_name = 'k'" + T,
    "SELECT * FROM system_schema.tables WHERE keyspace_name = 'k' AND table_name = 't'" + T,
    "SELECT * FROM system_schema.columns WHERE keyspace_name = 'k' AND table_name = 't'" + T,
    "SELECT * FROM system_schema.indexes WHERE keyspace_name = 'k' AND table_name = 't'" + T,
    "SELECT * FROM system_schema.triggers WHERE keyspace_name = 'k' AND table_name = 't'",
    "SELECT * FROM system_schema.types WHERE keyspace_name = 'k' AND type_name = 'ty'" + T,
    "SELECT * FROM system_schema.aggregates WHERE keyspace_name = 'k' AND aggregate_name = 'a' "
    "AND argument_types = ['int', 'text']" + T,
    "SELECT peer, host_id, rpc_address, schema_version FROM system.peers" + T,
    "SELECT peer, host_id, rpc_address, schema_version FROM system.peers",
    "SELECT schema_version FROM system.local WHERE key='local'",
    "SELECT release_version FROM system.local WHERE key='local'" + T,
    "SELECT dse_version FROM system.local WHERE key='local'" + T,
    "SELECT * FROM system_traces.events WHERE session_id = 5c1d4a6e-1f9a-11ee-be56-0242ac120002" + T,
    "SELECT * FROM system.local WHERE key='local'",
    "SELECT * FROM system.peers",
]


@pytest.mark.parametrize("text", MORE_DRIVER_QUERIES)
def test_every_driver_query_parses(text: str) -> None:
    statement = parse_statement(text)
    assert isinstance(statement, ast.SelectStatement)
    assert statement.table.keyspace in ("system", "system_schema", "system_traces")
    assert (statement.timeout is not None) == text.endswith(T)


@pytest.mark.parametrize(
    "text",
    ["DESC KEYSPACE ks; DESC TABLE ks.t; DESC TYPE ks.ty", "DESC A; DESC B; DESC C"],
)
def test_cqlsh_multi_statement_describe_string(text: str) -> None:
    """scylla-cqlsh sends `-e "DESC A; DESC B"` as one query text (spec/clients.md 4)."""
    statements = parse(text)
    assert len(statements) == 3 and all(isinstance(x, ast.Describe) for x in statements)


CORPUS = DRIVER_QUERIES + DML


@pytest.mark.parametrize(("text", "cls", "check"), CORPUS, ids=[c[0][:60] for c in CORPUS])
def test_corpus_statement_parses_to_expected_ast(text: str, cls: type, check: Check) -> None:
    statement = parse_statement(text)
    assert type(statement) is cls
    assert check(statement), statement
    hash(statement)  # immutable all the way down


def test_columns_may_be_named_by_unreserved_keywords() -> None:
    names = [
        *("key", "type", "name", "keys", "values", "options", "role", "roles", "users", "login"),
        *("password", "superuser", "static", "ttl", "timestamp", "writetime", "count", "exists"),
        *("json", "distinct", "list", "map", "frozen", "tuple", "filtering", "custom", "clustering"),
        *("compact", "storage", "level", "service", "timeout", "function", "aggregate", "cluster"),
        *("internals", "passwords", "partition", "text", "int", "counter", "as", "all", "contains"),
    ]
    text = "CREATE TABLE t (" + ", ".join(f"{n} int" for n in names) + ", PRIMARY KEY (key))"
    statement = parse_statement(text)
    assert isinstance(statement, ast.CreateTable)
    assert [c.name for c in statement.columns] == names


def test_several_statements_and_markers_restart_per_statement() -> None:
    statements = parse(";SELECT * FROM t WHERE a = ?;; UPDATE t SET b = ? WHERE a = ?;")
    assert [type(x) for x in statements] == [ast.SelectStatement, ast.UpdateStatement]
    assert statements[0].bind_markers == (B(0),)
    assert statements[1].bind_markers == (B(0), B(1))


def test_positions_of_markers_follow_text_order_not_field_order() -> None:
    statement = parse_statement("UPDATE t USING TTL ? SET v = ? WHERE k = ? IF c = ?")
    assert isinstance(statement, ast.UpdateStatement)
    assert statement.attributes.ttl == B(0)
    assert statement.assignments == (ast.SetColumn("v", B(1)),)
    assert statement.where[0].rhs == B(2)
    assert statement.conditions[0].rhs == B(3)


MALFORMED = [
    "SELECT * FORM t",
    "SELECT * FROM t WHERE",
    "SELECT a FROM t WHERE a = 1 #",
    "CREATE TABLE from (a int PRIMARY KEY)",
    "SELECT * FROM t WHERE a == 1",
    "SELECT * FROM t SELECT * FROM u",
    "INSERT INTO t (a) VALUES (1) USING TTL 1 AND TTL 2",
    "DELETE FROM t USING TTL 4 WHERE a = 1",
    "UPDATE t SET a = b + 1 WHERE k = 1",
    "SELECT foo(*) FROM t",
    "CREATE ROLE r WITH LOGIN = true AND LOGIN = false",
    "SELECT * FROM t WHERE a = 'unterminated",
    "CREATE TABLE t (a frozen<int> PRIMARY KEY)",
    "CREATE TABLE t (a vector<float, 0> PRIMARY KEY)",
    "CREATE KEYSPACE ks WITH a = 1 AND a = 2",
    "CREATE CUSTOM INDEX ON t (v)",
    "CREATE INDEX ON t (v) USING 'x'",
    "CREATE OR REPLACE FUNCTION IF NOT EXISTS f() CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'x'",
    "SELECT * FROM t LIMIT",
    "BEGIN BATCH SELECT * FROM t APPLY BATCH",
    "",
    "  ;; ",
    "-- only a comment",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_statement_reports_line_and_column(text: str) -> None:
    with pytest.raises(CqlSyntaxError) as info:
        parse(text)
    assert re.match(r"line \d+:\d+ ", info.value.message), info.value.message


def test_error_points_at_the_offending_token() -> None:
    with pytest.raises(CqlSyntaxError) as info:
        parse("SELECT * FORM t")
    assert info.value.message == "line 1:9 no viable alternative at input 'FORM'"
    with pytest.raises(CqlSyntaxError) as info:
        parse("SELECT *\n  FROM t\n  WHERE a == 1")
    assert info.value.message.startswith("line 3:11 ")
    assert "'='" in info.value.message


def test_reserved_keyword_needs_quotes() -> None:
    with pytest.raises(CqlSyntaxError, match=r"line 1:13 .*'from'"):
        parse("CREATE TABLE from (a int PRIMARY KEY)")
    assert parse_statement('CREATE TABLE "from" (a int PRIMARY KEY)').name == Q(None, "from")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("INSERT INTO t (a, b) VALUES (1)", "Unmatched column names/values"),
        ("CREATE TABLE t (a int, b int)", "No PRIMARY KEY specifed"),
        ("CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))", "Multiple PRIMARY KEYs"),
    ],
)
def test_semantic_errors_found_while_parsing_are_invalid_requests(text: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        parse(text)


def test_parse_statement_rejects_several() -> None:
    with pytest.raises(CqlSyntaxError, match=r"line 1:\d+ expected exactly one statement"):
        parse_statement("USE a; USE b")
