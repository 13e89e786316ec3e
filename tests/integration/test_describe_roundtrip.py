"""The backup/restore contract (spec/describe.md, last section) on real servers.

DESC SCHEMA WITH INTERNALS AND PASSWORDS on server A, executed statement by statement on a fresh
server B, gives B identical DESC output (table ids included), and every role logs in on B with
its original password.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import scylla_cluster
from tests.harness.node import UDF_OPTIONS, NodeFactory, TestNode

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer", **UDF_OPTIONS}
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
DESC_ALL = "DESC SCHEMA WITH INTERNALS AND PASSWORDS"

SCHEMA = [
    f"CREATE KEYSPACE ks WITH replication = {NTS} AND tablets = {{'enabled': false}}",
    f"CREATE KEYSPACE \"QuotedKs\" WITH replication = {NTS} AND tablets = {{'enabled': true, 'initial': 4}}",
    "CREATE TYPE ks.inner_t (a int, b text)",
    "CREATE TYPE ks.outer_t (i frozen<inner_t>, l list<int>)",
    "CREATE FUNCTION ks.acc(s bigint, x int) RETURNS NULL ON NULL INPUT RETURNS bigint "
    "LANGUAGE lua AS 'return s + x'",
    "CREATE AGGREGATE ks.total(int) SFUNC acc STYPE bigint INITCOND 0",
    "CREATE TABLE ks.base (pk int, ck text, s int STATIC, v frozen<outer_t>, m map<int, text>, "
    "gone int, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC) AND comment = 'it''s'",
    "ALTER TABLE ks.base DROP gone",
    "ALTER TABLE ks.base ADD gone int",
    "CREATE INDEX base_m ON ks.base (keys(m))",
    "CREATE MATERIALIZED VIEW ks.by_ck AS SELECT pk, ck, m FROM ks.base "
    "WHERE pk IS NOT NULL AND ck IS NOT NULL PRIMARY KEY (ck, pk)",
    "CREATE TABLE ks.logged (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'ttl': 600}",
    'CREATE TABLE "QuotedKs"."Select" ("Key" int, "x y" int, PRIMARY KEY (("Key"), "x y"))',
]
ROLES = {"alice": "a-pass", "Bob Quoted": "b'pass"}
AUTH = [
    "CREATE ROLE alice WITH PASSWORD = 'a-pass' AND LOGIN = true",
    "CREATE ROLE \"Bob Quoted\" WITH PASSWORD = 'b''pass' AND LOGIN = true AND SUPERUSER = true",
    "CREATE ROLE readers",
    "CREATE ROLE nested",
    "GRANT readers TO alice",
    "GRANT nested TO readers",
    "GRANT SELECT ON KEYSPACE ks TO readers",
    "GRANT MODIFY ON ks.base TO alice",
    "GRANT ALL ON ALL ROLES TO nested",
    "GRANT EXECUTE ON FUNCTION ks.acc(bigint, int) TO alice",
    "GRANT CREATE ON ALL FUNCTIONS IN KEYSPACE ks TO alice",
    "GRANT ALTER ON ROLE readers TO nested",
    "CREATE SERVICE LEVEL gold WITH TIMEOUT = 2s AND WORKLOAD_TYPE = 'interactive' AND SHARES = 500",
    "CREATE SERVICE LEVEL bronze WITH WORKLOAD_TYPE = 'batch'",
    "ALTER SERVICE LEVEL driver WITH SHARES = 300",
    "ATTACH SERVICE LEVEL gold TO alice",
    "ATTACH SERVICE LEVEL bronze TO readers",
]


@contextmanager
def superuser(node: TestNode) -> Iterator[Any]:
    provider = PlainTextAuthProvider("cassandra", "cassandra")
    with scylla_cluster(node, auth_provider=provider) as cluster:
        yield cluster.connect()


def describe(session: Any, query: str = DESC_ALL) -> list[tuple[str | None, str, str, str]]:
    return [(r.keyspace_name, r.type, r.name, r.create_statement) for r in session.execute(query)]


def restore(session: Any, rows: list[tuple[str | None, str, str, str]]) -> None:
    """Execute every statement DESCRIBE printed, in order (a row may hold several, e.g. a table
    and the ALTERs for its dropped columns, each ending with `;`)."""
    for *_, text in rows:
        for statement in split_statements(text):
            session.execute(statement)


def split_statements(text: str) -> list[str]:
    """Statements separated by `;` at line ends, outside string literals and $$ bodies."""
    out, current, quoted, dollar = [], [], False, False
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "$" and text.startswith("$$", i) and not quoted:
            dollar = not dollar
            current.append("$$")
            i += 2
            continue
        current.append(ch)
        if ch == "'" and not dollar:
            quoted = not quoted
        elif ch == ";" and not quoted and not dollar and (i + 1 == len(text) or text[i + 1] == "\n"):
            out.append("".join(current).strip())
            current = []
        i += 1
    rest = "".join(current).strip()
    return [s for s in [*out, rest] if s and not s.startswith("/*")]


def test_backup_restores_to_identical_describe_and_working_logins(node_factory: NodeFactory) -> None:
    a = node_factory.start_node(options=AUTH_OPTIONS)
    b = node_factory.start_node(options=AUTH_OPTIONS)
    with superuser(a) as s:
        for statement in SCHEMA + AUTH:
            s.execute(statement)
        backup = describe(s)
    kinds = {kind for _, kind, _, _ in backup}
    assert {"keyspace", "type", "function", "aggregate", "table", "index", "view", "role"} <= kinds
    assert {"grant_role", "grant_permission", "service_level", "service_level_attachment"} <= kinds
    assert any("HASHED PASSWORD = '$6$" in text for *_, text in backup)
    with superuser(b) as s:
        restore(s, backup)
        assert describe(s) == backup
    for name, password in ROLES.items():
        with scylla_cluster(b, auth_provider=PlainTextAuthProvider(name, password)) as cluster:
            assert cluster.connect().execute("SELECT key FROM system.local").one().key == "local"
