"""The backup/restore contract for random schemas, roles, grants and service levels.

Two servers serve every example (a server start per example would dominate the run); after
each example both are emptied again: user keyspaces, roles other than cassandra, and service
levels other than driver are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from cassandra.auth import PlainTextAuthProvider
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory
from tests.integration.test_describe_roundtrip import AUTH_OPTIONS, DESC_ALL, NTS, describe, restore

NAMES = st.sampled_from(["a", "b_1", "Mixed", "select", "key", "x y", "T2", "token"])
TABLE_NAMES = st.sampled_from(["a", "b_1", "Mixed", "select", "key", "T2", "token"])
TYPES = st.sampled_from(["int", "text", "bigint", "uuid", "frozen<list<int>>", "map<int, text>", "set<text>"])
KEY_TYPES = st.sampled_from(["int", "text", "bigint", "uuid", "timestamp"])


def q(name: str) -> str:
    return (
        name
        if name.isidentifier() and name.islower() and name not in ("select", "key", "token")
        else ('"' + name.replace('"', '""') + '"')
    )


def _first(column: tuple[str, str]) -> str:
    return column[0]


@dataclass
class Example:
    statements: list[str]
    passwords: dict[str, str]


@st.composite
def examples(draw: st.DrawFn) -> Example:
    stmts: list[str] = []
    tables: list[str] = []
    keyspaces = draw(st.lists(st.sampled_from(["ks1", "Ks2", "third"]), min_size=1, max_size=2, unique=True))
    for ks in keyspaces:
        tablets = draw(st.sampled_from(["{'enabled': false}", "{'enabled': true}"]))
        stmts.append(f"CREATE KEYSPACE {q(ks)} WITH replication = {NTS} AND tablets = {tablets}")
        for table in draw(st.lists(TABLE_NAMES, min_size=1, max_size=2, unique=True)):
            pk, ck = draw(KEY_TYPES), draw(st.none() | KEY_TYPES)
            drawn: list[tuple[str, str]] = draw(
                st.lists(st.tuples(NAMES, TYPES), max_size=3, unique_by=_first)
            )
            cols = [(f"c_{n}", t) for n, t in drawn]
            body = [f"pk {pk}"] + ([f"ck {ck}"] if ck else []) + [f"{q(n)} {t}" for n, t in cols]
            key = "PRIMARY KEY (pk, ck)" if ck else "PRIMARY KEY (pk)"
            full = f"{q(ks)}.{q(table)}"
            comment = draw(st.sampled_from(["", "it''s", "plain"]))  # already CQL-quoted
            stmts.append(f"CREATE TABLE {full} ({', '.join(body)}, {key}) WITH comment = '{comment}'")
            drop_first = draw(st.booleans())
            if cols and drop_first:
                stmts.append(f"ALTER TABLE {full} DROP {q(cols[0][0])}")
            tables.append(full)
    roles = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    passwords: dict[str, str] = {}
    for role in roles:
        login, superuser = draw(st.booleans()), draw(st.booleans())
        options = [f"LOGIN = {str(login).lower()}", f"SUPERUSER = {str(superuser).lower()}"]
        if login:
            passwords[role] = draw(st.sampled_from(["pw", "it's", "ünï", "long password 123"]))
            options.insert(0, "PASSWORD = '" + passwords[role].replace("'", "''") + "'")
        stmts.append(f"CREATE ROLE {q(role)} WITH {' AND '.join(options)}")
    for i, role in enumerate(roles):  # grants only to later roles: never a cycle
        for other in roles[i + 1 :]:
            if draw(st.booleans()):
                stmts.append(f"GRANT {q(role)} TO {q(other)}")
    data = ["CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE", "ALL"]
    choices = [
        ("ALL KEYSPACES", data),
        ("ALL ROLES", ["CREATE", "ALTER", "DROP", "AUTHORIZE", "DESCRIBE", "ALL"]),
    ]
    choices += [(f"KEYSPACE {q(k)}", data) for k in keyspaces]
    choices += [(t, data[1:]) for t in tables]
    choices += [(f"ROLE {q(r)}", ["ALTER", "DROP", "AUTHORIZE", "ALL"]) for r in roles]
    for _ in range(draw(st.integers(0, 4))):
        resource, allowed = draw(st.sampled_from(choices))
        permission = draw(st.sampled_from(allowed))
        stmts.append(f"GRANT {permission} ON {resource} TO {q(draw(st.sampled_from(roles)))}")
    for level in draw(st.lists(st.sampled_from(["sl_a", "Sl B", "gold"]), max_size=2, unique=True)):
        opts = []
        if draw(st.booleans()):
            opts.append(f"TIMEOUT = {draw(st.sampled_from(['10ms', '1s', '250ms']))}")
        if draw(st.booleans()):
            opts.append(f"WORKLOAD_TYPE = '{draw(st.sampled_from(['batch', 'interactive']))}'")
        stmts.append(f"CREATE SERVICE LEVEL {q(level)}" + (" WITH " + " AND ".join(opts) if opts else ""))
        if draw(st.booleans()):
            stmts.append(f"ATTACH SERVICE LEVEL {q(level)} TO {q(draw(st.sampled_from(roles)))}")
    return Example(stmts, passwords)


@pytest.fixture(scope="module")
def servers(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("roundtrip"))
    try:
        nodes = [factory.start_node(options=AUTH_OPTIONS) for _ in range(2)]
        provider = PlainTextAuthProvider("cassandra", "cassandra")
        with (
            scylla_cluster(nodes[0], auth_provider=provider) as ca,
            scylla_cluster(nodes[1], auth_provider=provider) as cb,
        ):
            yield (nodes[0], ca.connect()), (nodes[1], cb.connect())
    finally:
        assert not factory.cleanup()


def empty(session: Any) -> None:
    for row in session.execute("DESC KEYSPACES"):
        if not row.keyspace_name.startswith("system"):
            session.execute(f"DROP KEYSPACE {row.keyspace_name}")
    for row in session.execute("LIST ROLES"):
        if row.role != "cassandra":
            session.execute(f"DROP ROLE {q(row.role)}")
    for row in session.execute("LIST ALL SERVICE LEVELS"):
        if row.service_level != "driver":
            session.execute(f"DROP SERVICE LEVEL {q(row.service_level)}")


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(example=examples())
def test_random_backups_restore_identically(servers: tuple[Any, Any], example: Example) -> None:
    (_, a), (b_node, b) = servers
    try:
        for statement in example.statements:
            a.execute(statement)
        backup = describe(a, DESC_ALL)
        restore(b, backup)
        assert describe(b, DESC_ALL) == backup
        for name, password in example.passwords.items():
            with scylla_cluster(b_node, auth_provider=PlainTextAuthProvider(name, password)) as cluster:
                cluster.connect()
    finally:
        empty(a)
        empty(b)
