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
        "SELECT * FROM system_schema.views WHERE keyspace_name = 'k' AND view_name = 't' "
        "USING TIMEOUT 2000ms",
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

DDL: list[tuple[str, type, Check]] = [
    (
        "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': ['r1', 'r2']} "
        "AND durable_writes = true AND tablets = {'enabled': false}",
        ast.CreateKeyspace,
        lambda st: (
            st.options.names() == ("replication", "durable_writes", "tablets")
            and st.options.get("replication").pairs[1] == (s("dc1"), ast.ListLiteral((s("r1"), s("r2"))))
            and st.options.get("durable_writes") == L("boolean", "true")
        ),
    ),
    (
        "CREATE SCHEMA IF NOT EXISTS \"Ks\" WITH REPLICATION = {'class': 'SimpleStrategy', "
        "'replication_factor': 3}",
        ast.CreateKeyspace,
        lambda st: st.name == "Ks" and st.if_not_exists and "replication" in st.options,
    ),
    (
        "ALTER KEYSPACE ks WITH tablets = {'enabled': true, 'initial': 8}",
        ast.AlterKeyspace,
        lambda st: st.options.get("tablets").pairs[1] == (s("initial"), i("8")),
    ),
    ("DROP KEYSPACE IF EXISTS ks", ast.DropKeyspace, lambda st: st == ast.DropKeyspace("ks", True)),
    (
        "CREATE TABLE ks.t (pk int, ck int, s int STATIC, v text, PRIMARY KEY (pk, ck)) "
        "WITH CLUSTERING ORDER BY (ck DESC) AND bloom_filter_fp_chance = 0.01 "
        "AND caching = {'keys': 'ALL'} AND cdc = {'enabled': 'true'} "
        "AND tablets = {'min_tablet_count': '100'}",
        ast.CreateTable,
        lambda st: (
            st.partition_key == ("pk",)
            and st.clustering_key == ("ck",)
            and st.columns[2] == ast.ColumnDef("s", t.INT, True)
            and st.clustering_order == (ast.Ordering("ck", False),)
            and st.options.names() == ("bloom_filter_fp_chance", "caching", "cdc", "tablets")
        ),
    ),
    (
        "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, l list<int>, m map<text, frozen<list<int>>>, "
        "st set<timeuuid>, tu tuple<int, text>, u frozen<myudt>, u2 ks.other, ve vector<float, 3>, "
        "c 'org.apache.cassandra.db.marshal.BytesType', vc varchar)",
        ast.CreateTable,
        lambda st: (
            [c.type for c in st.columns]
            == [
                t.INT,
                t.ListType(t.INT),
                t.MapType(t.TEXT, t.ListType(t.INT, True)),
                t.SetType(t.TIMEUUID),
                t.TupleType((t.INT, t.TEXT)),
                t.UserTypeRef(None, "myudt", True),
                t.UserTypeRef("ks", "other"),
                t.VectorType(t.FLOAT, 3),
                t.CustomType("org.apache.cassandra.db.marshal.BytesType"),
                t.TEXT,
            ]
            and st.partition_key == ("k",)
        ),
    ),
    (
        "CREATE TABLE t (a int, b int, c int, d int, PRIMARY KEY ((a, b), c, d)) WITH COMPACT STORAGE "
        "AND ID = 5c1d4a6e-1f9a-11ee-be56-0242ac120002",
        ast.CreateTable,
        lambda st: (
            st.partition_key == ("a", "b")
            and st.clustering_key == ("c", "d")
            and st.compact_storage
            and st.table_id == "5c1d4a6e-1f9a-11ee-be56-0242ac120002"
            and len(st.options) == 0
        ),
    ),
    (
        "ALTER TABLE ks.t ADD v2 int",
        ast.AlterTable,
        lambda st: st.action == ast.AddColumns((ast.ColumnDef("v2", t.INT),)),
    ),
    (
        "ALTER TABLE t ADD (a int, b set<int> static)",
        ast.AlterTable,
        lambda st: st.action.columns[1] == ast.ColumnDef("b", t.SetType(t.INT), True),
    ),
    (
        "ALTER TABLE ks.t DROP v2 USING TIMESTAMP 1690000000000000",
        ast.AlterTable,
        lambda st: st.action == ast.DropColumns(("v2",), 1690000000000000),
    ),
    ("ALTER TABLE t DROP (a, b)", ast.AlterTable, lambda st: st.action == ast.DropColumns(("a", "b"))),
    (
        "ALTER TABLE t ALTER v TYPE blob",
        ast.AlterTable,
        lambda st: st.action == ast.AlterColumnType("v", t.BLOB),
    ),
    (
        "ALTER TABLE t RENAME a TO b AND c TO d",
        ast.AlterTable,
        lambda st: st.action == ast.RenameColumns((("a", "b"), ("c", "d"))),
    ),
    (
        "ALTER COLUMNFAMILY t WITH comment = 'x' AND gc_grace_seconds = 10",
        ast.AlterTable,
        lambda st: st.action.options.get("gc_grace_seconds") == i("10"),
    ),
    ("DROP TABLE IF EXISTS ks.t", ast.DropTable, lambda st: st.if_exists and st.name == Q("ks", "t")),
    ("TRUNCATE ks.t", ast.TruncateStatement, lambda st: st.table == Q("ks", "t")),
    (
        "TRUNCATE TABLE t USING TIMEOUT 10s",
        ast.TruncateStatement,
        lambda st: st.timeout == L("duration", "10s"),
    ),
    (
        "CREATE TYPE IF NOT EXISTS ks.addr (street text, zip int, tags frozen<set<text>>)",
        ast.CreateType,
        lambda st: st.fields[2] == ("tags", t.SetType(t.TEXT, True)) and st.if_not_exists,
    ),
    ("ALTER TYPE ks.addr ADD city text", ast.AlterType, lambda st: st.action == ast.AddField("city", t.TEXT)),
    (
        "ALTER TYPE addr RENAME zip TO postcode AND street TO road",
        ast.AlterType,
        lambda st: st.action == ast.RenameFields((("zip", "postcode"), ("street", "road"))),
    ),
    ("ALTER TYPE addr ALTER zip TYPE bigint", ast.AlterType, lambda st: st.action.type == t.BIGINT),
    ("DROP TYPE IF EXISTS ks.addr", ast.DropType, lambda st: st.if_exists),
    (
        "CREATE INDEX ON ks.t (v)",
        ast.CreateIndex,
        lambda st: st.name is None and st.targets == (ast.IndexTarget("v"),),
    ),
    (
        "CREATE INDEX IF NOT EXISTS idx ON ks.t(keys(m))",
        ast.CreateIndex,
        lambda st: st.name == "idx" and st.targets == (ast.IndexTarget("m", "keys"),),
    ),
    ("CREATE INDEX ON t (values(l))", ast.CreateIndex, lambda st: st.targets[0].kind == "values"),
    ("CREATE INDEX ON t (entries(m))", ast.CreateIndex, lambda st: st.targets[0].kind == "entries"),
    ("CREATE INDEX ON t (full(f))", ast.CreateIndex, lambda st: st.targets[0].kind == "full"),
    (
        "CREATE INDEX li ON t ((p1, p2), v)",
        ast.CreateIndex,
        lambda st: st.partition_columns == ("p1", "p2") and st.targets == (ast.IndexTarget("v"),),
    ),
    (
        "CREATE CUSTOM INDEX ci ON t (v) USING 'org.apache.cassandra.index.sasi.SASIIndex' "
        "WITH OPTIONS = {'mode': 'CONTAINS'}",
        ast.CreateIndex,
        lambda st: (
            st.custom
            and st.custom_class == "org.apache.cassandra.index.sasi.SASIIndex"
            and "options" in st.options
        ),
    ),
    ("DROP INDEX IF EXISTS ks.idx", ast.DropIndex, lambda st: st.name == Q("ks", "idx")),
    (
        "CREATE MATERIALIZED VIEW ks.v AS SELECT * FROM ks.t WHERE v IS NOT NULL AND pk IS NOT NULL "
        "PRIMARY KEY (v, pk) WITH CLUSTERING ORDER BY (pk ASC) AND comment = 'mv'",
        ast.CreateMaterializedView,
        lambda st: (
            st.base == Q("ks", "t")
            and st.selectors is None
            and st.where[0] == ast.Relation(ast.ColumnRef("v"), "IS NOT", ast.Null())
            and st.partition_key == ("v",)
            and st.clustering_key == ("pk",)
            and st.clustering_order == (ast.Ordering("pk", True),)
            and st.options.get("comment") == s("mv")
        ),
    ),
    (
        "CREATE MATERIALIZED VIEW IF NOT EXISTS v AS SELECT a, b FROM t WHERE a IS NOT NULL "
        "AND b IS NOT NULL PRIMARY KEY ((a, b))",
        ast.CreateMaterializedView,
        lambda st: st.partition_key == ("a", "b") and st.clustering_key == () and len(st.selectors) == 2,
    ),
    (
        "ALTER MATERIALIZED VIEW ks.v WITH comment = 'x'",
        ast.AlterMaterializedView,
        lambda st: "comment" in st.options,
    ),
    ("DROP MATERIALIZED VIEW IF EXISTS ks.v", ast.DropMaterializedView, lambda st: st.if_exists),
    (
        "CREATE OR REPLACE FUNCTION ks.f(a int, b text) CALLED ON NULL INPUT RETURNS text LANGUAGE lua "
        "AS 'return b'",
        ast.CreateFunction,
        lambda st: (
            st.or_replace
            and st.arguments == (("a", t.INT), ("b", t.TEXT))
            and st.called_on_null_input
            and st.language == "lua"
            and st.body == "return b"
        ),
    ),
    (
        "CREATE FUNCTION IF NOT EXISTS f() RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE java "
        "AS $$ return 1; $$",
        ast.CreateFunction,
        lambda st: not st.called_on_null_input and st.body == " return 1; " and st.arguments == (),
    ),
    (
        "DROP FUNCTION IF EXISTS ks.f(int, text)",
        ast.DropFunction,
        lambda st: st.argument_types == (t.INT, t.TEXT),
    ),
    ("DROP FUNCTION f", ast.DropFunction, lambda st: st.argument_types is None),
    (
        "CREATE AGGREGATE ks.agg(int) SFUNC st STYPE tuple<int, bigint> FINALFUNC fin INITCOND (0, 0)",
        ast.CreateAggregate,
        lambda st: (
            st.state_function == "st"
            and st.state_type == t.TupleType((t.INT, t.BIGINT))
            and st.final_function == "fin"
            and st.initial_condition == ast.TupleLiteral((i("0"), i("0")))
        ),
    ),
    (
        "CREATE OR REPLACE AGGREGATE agg(int, text) SFUNC st STYPE int REDUCEFUNC red",
        ast.CreateAggregate,
        lambda st: st.reduce_function == "red" and st.final_function is None,
    ),
    ("DROP AGGREGATE IF EXISTS ks.agg(int)", ast.DropAggregate, lambda st: st.argument_types == (t.INT,)),
    ("USE ks", ast.UseStatement, lambda st: st.keyspace == "ks"),
    ('USE "MyKs"', ast.UseStatement, lambda st: st.keyspace == "MyKs"),
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
        "BEGIN UNLOGGED BATCH USING TIMESTAMP 5 INSERT INTO t (a) VALUES (1) "
        "INSERT INTO t (a) VALUES (2) APPLY BATCH;",
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
        "SELECT * FROM t WHERE a = P1Y2M AND b = PT2H30M AND c = -5s AND d = 0x "
        "AND e = 1mo2w3d4h5m6s7ms8us9ns",
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

AUTH: list[tuple[str, type, Check]] = [
    (
        "CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = 'p' AND LOGIN = true AND SUPERUSER = false",
        ast.CreateRole,
        lambda st: (
            st.options == ast.RoleOptions(password="p", login=True, superuser=False) and st.if_not_exists
        ),
    ),
    (
        "CREATE ROLE r WITH HASHED PASSWORD = '$6$abc$def' AND LOGIN = true AND SUPERUSER = false",
        ast.CreateRole,
        lambda st: st.options.hashed_password == "$6$abc$def" and st.options.password is None,
    ),
    ("CREATE ROLE 'Bob'", ast.CreateRole, lambda st: st.name == "Bob"),
    ('CREATE ROLE "Carol"', ast.CreateRole, lambda st: st.name == "Carol"),
    ("CREATE ROLE Dave", ast.CreateRole, lambda st: st.name == "dave"),
    (
        "CREATE ROLE r WITH OPTIONS = {'a': 'b'}",
        ast.CreateRole,
        lambda st: st.options.options == ast.MapLiteral(((s("a"), s("b")),)),
    ),
    ("ALTER ROLE alice WITH PASSWORD = 'q'", ast.AlterRole, lambda st: st.options.password == "q"),
    ("DROP ROLE IF EXISTS alice", ast.DropRole, lambda st: st.if_exists),
    (
        "CREATE USER IF NOT EXISTS u WITH PASSWORD 'p' SUPERUSER",
        ast.CreateUser,
        lambda st: st.password == "p" and st.superuser is True,
    ),
    ("CREATE USER u2 NOSUPERUSER", ast.CreateUser, lambda st: st.superuser is False and st.password is None),
    ("ALTER USER u WITH PASSWORD 'x'", ast.AlterUser, lambda st: st.password == "x" and st.superuser is None),
    ("DROP USER IF EXISTS u", ast.DropUser, lambda st: st.if_exists),
    ("GRANT r1 TO r2", ast.GrantRole, lambda st: st == ast.GrantRole("r1", "r2")),
    ("REVOKE r1 FROM r2", ast.RevokeRole, lambda st: st == ast.RevokeRole("r1", "r2")),
    ("LIST ROLES", ast.ListRoles, lambda st: st == ast.ListRoles(None, True)),
    ("LIST ROLES OF alice NORECURSIVE", ast.ListRoles, lambda st: st == ast.ListRoles("alice", False)),
    ("LIST USERS", ast.ListUsers, lambda st: True),
    (
        "GRANT SELECT ON ALL KEYSPACES TO r",
        ast.GrantPermissions,
        lambda st: st == ast.GrantPermissions(("SELECT",), ast.AllKeyspaces(), "r"),
    ),
    (
        "GRANT MODIFY PERMISSION ON KEYSPACE ks TO r",
        ast.GrantPermissions,
        lambda st: st.resource == ast.KeyspaceResource("ks"),
    ),
    (
        "GRANT ALL PERMISSIONS ON ks.t TO r",
        ast.GrantPermissions,
        lambda st: st.permissions == ast.PERMISSION_NAMES and st.resource == ast.TableResource(Q("ks", "t")),
    ),
    (
        "GRANT ALL ON TABLE t TO r",
        ast.GrantPermissions,
        lambda st: st.resource == ast.TableResource(Q(None, "t")),
    ),
    ("GRANT AUTHORIZE ON ALL ROLES TO r", ast.GrantPermissions, lambda st: st.resource == ast.AllRoles()),
    ("GRANT ALTER ON ROLE x TO r", ast.GrantPermissions, lambda st: st.resource == ast.RoleResource("x")),
    (
        "GRANT EXECUTE ON ALL FUNCTIONS TO r",
        ast.GrantPermissions,
        lambda st: st.resource == ast.AllFunctions(None),
    ),
    (
        "GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE ks TO r",
        ast.GrantPermissions,
        lambda st: st.resource == ast.AllFunctions("ks"),
    ),
    (
        "GRANT EXECUTE ON FUNCTION ks.f(int, text) TO r",
        ast.GrantPermissions,
        lambda st: st.resource == ast.FunctionResource(Q("ks", "f"), (t.INT, t.TEXT)),
    ),
    (
        "REVOKE DESCRIBE ON ALL ROLES FROM r",
        ast.RevokePermissions,
        lambda st: st == ast.RevokePermissions(("DESCRIBE",), ast.AllRoles(), "r"),
    ),
    ("LIST ALL PERMISSIONS", ast.ListPermissions, lambda st: st.resource is None and st.of is None),
    (
        "LIST ALL PERMISSIONS OF r NORECURSIVE",
        ast.ListPermissions,
        lambda st: st.of == "r" and not st.recursive,
    ),
    (
        "LIST SELECT ON ks.t OF r",
        ast.ListPermissions,
        lambda st: st.permissions == ("SELECT",) and st.resource == ast.TableResource(Q("ks", "t")),
    ),
    (
        "CREATE SERVICE LEVEL sl WITH TIMEOUT = 10ms AND WORKLOAD_TYPE = 'batch' AND SHARES = 1000",
        ast.CreateServiceLevel,
        lambda st: (
            st.options.items
            == (("timeout", L("duration", "10ms")), ("workload_type", s("batch")), ("shares", i("1000")))
        ),
    ),
    ("CREATE SERVICE LEVEL IF NOT EXISTS driver", ast.CreateServiceLevel, lambda st: st.if_not_exists),
    (
        "ALTER SERVICE LEVEL sl WITH timeout = null",
        ast.AlterServiceLevel,
        lambda st: st.options.get("timeout") == ast.Null(),
    ),
    ("DROP SERVICE LEVEL IF EXISTS sl", ast.DropServiceLevel, lambda st: st.if_exists),
    (
        "ATTACH SERVICE LEVEL sl TO r",
        ast.AttachServiceLevel,
        lambda st: st == ast.AttachServiceLevel("sl", "r"),
    ),
    ("DETACH SERVICE LEVEL FROM r", ast.DetachServiceLevel, lambda st: st.role == "r"),
    ("LIST SERVICE LEVEL sl", ast.ListServiceLevels, lambda st: st.name == "sl"),
    ("LIST ALL SERVICE LEVELS", ast.ListServiceLevels, lambda st: st.name is None),
    ("LIST ATTACHED SERVICE LEVEL OF r", ast.ListAttachedServiceLevel, lambda st: st.role == "r"),
    ("LIST ALL ATTACHED SERVICE LEVELS", ast.ListAttachedServiceLevel, lambda st: st.role is None),
    ("LIST EFFECTIVE SERVICE LEVEL OF r", ast.ListEffectiveServiceLevel, lambda st: st.role == "r"),
]

DESCRIBE: list[tuple[str, type, Check]] = [
    (
        text,
        ast.Describe,
        (
            lambda kind, name, internals, passwords: (
                lambda st: (
                    (st.kind, st.name, st.with_internals, st.with_passwords)
                    == (kind, name, internals, passwords)
                )
            )
        )(*expected),
    )
    for text, expected in [
        ("DESCRIBE SCHEMA", ("SCHEMA", None, False, False)),
        ("DESC FULL SCHEMA WITH INTERNALS AND PASSWORDS", ("FULL SCHEMA", None, True, True)),
        ("DESC SCHEMA WITH INTERNALS", ("SCHEMA", None, True, False)),
        ("DESC KEYSPACES", ("KEYSPACES", None, False, False)),
        ("DESC KEYSPACE ks", ("KEYSPACE", Q(None, "ks"), False, False)),
        ("DESC KEYSPACE", ("KEYSPACE", None, False, False)),
        ("DESC TABLES", ("TABLES", None, False, False)),
        ("DESC COLUMNFAMILIES", ("TABLES", None, False, False)),
        ("DESC TABLE ks.t WITH INTERNALS", ("TABLE", Q("ks", "t"), True, False)),
        ("DESC COLUMNFAMILY t", ("TABLE", Q(None, "t"), False, False)),
        ("DESC TYPES", ("TYPES", None, False, False)),
        ("DESC TYPE ks.ty", ("TYPE", Q("ks", "ty"), False, False)),
        ("DESC FUNCTIONS", ("FUNCTIONS", None, False, False)),
        ("DESC FUNCTION ks.f", ("FUNCTION", Q("ks", "f"), False, False)),
        ("DESC AGGREGATES", ("AGGREGATES", None, False, False)),
        ("DESC AGGREGATE ks.a", ("AGGREGATE", Q("ks", "a"), False, False)),
        ("DESC INDEX ks.i", ("INDEX", Q("ks", "i"), False, False)),
        ("DESC MATERIALIZED VIEW ks.v", ("MATERIALIZED VIEW", Q("ks", "v"), False, False)),
        ("DESC CLUSTER", ("CLUSTER", None, False, False)),
        ("DESC ks.t", ("NAME", Q("ks", "t"), False, False)),
        ("describe t;", ("NAME", Q(None, "t"), False, False)),
        ('DESC "Types"', ("NAME", Q(None, "Types"), False, False)),
        ("desc types", ("TYPES", None, False, False)),
    ]
]

CORPUS = DRIVER_QUERIES + DDL + DML + AUTH + DESCRIBE


@pytest.mark.parametrize(("text", "cls", "check"), CORPUS, ids=[c[0][:60] for c in CORPUS])
def test_corpus_statement_parses_to_expected_ast(text: str, cls: type, check: Check) -> None:
    statement = parse_statement(text)
    assert type(statement) is cls
    assert check(statement), statement
    hash(statement)  # immutable all the way down


def test_only_keyspace_flag() -> None:
    statement = parse_statement("DESC ONLY KEYSPACE ks")
    assert isinstance(statement, ast.Describe) and statement.only


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
