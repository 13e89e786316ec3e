"""Corpus of schema, role, permission, service-level and DESCRIBE statements parsed to the
expected AST (queries and malformed input: test_grammar_corpus.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tabletdb.cql import ast
from tabletdb.cql import types as t
from tabletdb.cql.parser import parse_statement

Q = ast.QualifiedName
L = ast.Literal
B = ast.BindMarker


def i(text: str) -> ast.Literal:
    return L("integer", text)


def s(text: str) -> ast.Literal:
    return L("string", text)


Check = Callable[[Any], Any]

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
        'CREATE SCHEMA IF NOT EXISTS "Ks" WITH REPLICATION = '
        + "{'class': 'SimpleStrategy', 'replication_factor': 3}",
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
        "CREATE OR REPLACE FUNCTION ks.f(a int, b text) CALLED ON NULL INPUT RETURNS text "
        + "LANGUAGE lua AS 'return b'",
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
        "CREATE FUNCTION IF NOT EXISTS f() RETURNS NULL ON NULL INPUT RETURNS int "
        + "LANGUAGE java AS $$ return 1; $$",
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

# DESCRIBE text -> (kind, name, with_internals, with_passwords)
DESCRIBE: list[tuple[str, tuple[str, ast.QualifiedName | None, bool, bool]]] = [
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

CORPUS = DDL + AUTH


@pytest.mark.parametrize(("text", "cls", "check"), CORPUS, ids=[c[0][:60] for c in CORPUS])
def test_corpus_statement_parses_to_expected_ast(text: str, cls: type, check: Check) -> None:
    statement = parse_statement(text)
    assert type(statement) is cls
    assert check(statement), statement
    hash(statement)  # immutable all the way down


@pytest.mark.parametrize(("text", "expected"), DESCRIBE, ids=[d[0] for d in DESCRIBE])
def test_describe_forms(text: str, expected: tuple[str, ast.QualifiedName | None, bool, bool]) -> None:
    statement = parse_statement(text)
    assert isinstance(statement, ast.Describe)
    assert (statement.kind, statement.name, statement.with_internals, statement.with_passwords) == expected


def test_only_keyspace_flag() -> None:
    statement = parse_statement("DESC ONLY KEYSPACE ks")
    assert isinstance(statement, ast.Describe) and statement.only
