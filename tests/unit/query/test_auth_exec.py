"""Role, permission and service-level statements through the auth executor, and the grants that
schema changes carry, against an in-memory group0 store."""

from __future__ import annotations

import asyncio

import pytest

from tabletdb.auth.model import AuthConfig
from tabletdb.auth.resources import Permission
from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest, Unauthorized
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.results import RowsResult
from tabletdb.cql.types import BOOLEAN, TEXT
from tabletdb.query.auth_check import create_default_superuser
from tabletdb.query.auth_exec import AuthExecutor
from tests.unit.query.auth_harness import MemoryStore, schema_decision

ENFORCING = AuthConfig("PasswordAuthenticator", "CassandraAuthorizer")
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"


def setup(config: AuthConfig = ENFORCING) -> tuple[MemoryStore, AuthExecutor]:
    store = MemoryStore()
    asyncio.run(create_default_superuser(store, lambda: store.state, "Test Cluster"))
    return store, AuthExecutor(config, lambda: store.state, store, store.catalog_with_system)


def run(
    executor: AuthExecutor, cql: str, user: str | None = "cassandra", keyspace: str | None = None
) -> object:
    return asyncio.run(executor.execute(parse_statement(cql), user, keyspace))


def ddl(store: MemoryStore, executor: AuthExecutor, cql: str, user: str | None) -> None:
    _, decide = schema_decision(cql)
    asyncio.run(store.change_schema(executor.with_creator_grants(decide, user)))


def test_default_superuser_is_created_once_with_a_salt_fixed_by_the_cluster_name() -> None:
    store, _ = setup()
    role = store.state.auth.role("cassandra")
    assert role is not None and role.is_superuser and role.can_login
    again = MemoryStore()
    asyncio.run(create_default_superuser(again, lambda: again.state, "Test Cluster"))
    assert again.state.auth.role("cassandra") == role
    asyncio.run(create_default_superuser(store, lambda: store.state, "Test Cluster"))
    assert len(store.commands) == 1  # a second start proposes nothing
    other = MemoryStore()
    asyncio.run(create_default_superuser(other, lambda: other.state, "Other Cluster"))
    other_role = other.state.auth.role("cassandra")
    assert other_role is not None and other_role.salted_hash != role.salted_hash


def test_role_statements_change_group0_state() -> None:
    store, ex = setup()
    run(ex, "CREATE ROLE alice WITH PASSWORD = 'pw' AND LOGIN = true")
    run(ex, "CREATE ROLE readers")
    run(ex, "GRANT readers TO alice")
    assert store.state.auth.closure("alice") == ["alice", "readers"]
    run(ex, "REVOKE readers FROM alice")
    assert store.state.auth.closure("alice") == ["alice"]
    with pytest.raises(InvalidRequest, match="already exists"):
        run(ex, "CREATE ROLE alice")
    run(ex, "DROP ROLE alice")
    assert store.state.auth.role("alice") is None


def test_dropping_a_role_detaches_its_service_level_in_the_same_command() -> None:
    store, ex = setup()
    run(ex, "CREATE ROLE r")
    run(ex, "CREATE SERVICE LEVEL sl WITH TIMEOUT = 5ms")
    run(ex, "ATTACH SERVICE LEVEL sl TO r")
    assert store.state.qos.attached("r") == "sl"
    before = len(store.commands)
    run(ex, "DROP ROLE r")
    assert len(store.commands) == before + 1
    assert store.state.qos.attached("r") is None and store.state.qos.level("sl") is not None


def test_non_superuser_cannot_manage_roles_or_levels() -> None:
    _, ex = setup()
    run(ex, "CREATE ROLE plain WITH LOGIN = true AND PASSWORD = 'p'")
    for cql in ("CREATE ROLE x", "CREATE SERVICE LEVEL x", "LIST ALL PERMISSIONS"):
        with pytest.raises(Unauthorized):
            run(ex, cql, user="plain")


def test_creator_grants_ride_with_the_schema_change_and_drops_revoke_them() -> None:
    store, ex = setup()
    run(ex, "CREATE ROLE maker WITH LOGIN = true AND PASSWORD = 'm'")
    run(ex, "GRANT CREATE ON ALL KEYSPACES TO maker")
    ddl(store, ex, f"CREATE KEYSPACE made WITH replication = {NTS}", "maker")
    ddl(store, ex, "CREATE TABLE made.t (k int PRIMARY KEY)", "maker")
    command = store.commands[-1]
    assert command.mutations and command.auth_mutations  # one command, both parts
    auth = store.state.auth
    assert Permission.SELECT in auth.granted("maker", "data/made/t")
    assert Permission.DROP in auth.granted("maker", "data/made")
    assert Permission.EXECUTE in auth.granted("maker", "functions/made")
    ddl(store, ex, "DROP KEYSPACE made", "maker")
    assert [key for key in store.state.auth.grants if "made" in key[1]] == []


def test_superuser_and_anonymous_creators_get_no_grants() -> None:
    store, ex = setup()
    ddl(store, ex, f"CREATE KEYSPACE su WITH replication = {NTS}", "cassandra")
    ddl(store, ex, f"CREATE KEYSPACE anon WITH replication = {NTS}", None)
    assert len(store.state.auth.grants) == 0
    assert store.commands[-1].auth_mutations == ()


def test_grant_on_a_system_table_resolves_with_the_system_keyspaces() -> None:
    store, ex = setup()
    run(ex, "CREATE ROLE r")
    run(ex, "GRANT SELECT ON system.roles TO r")
    assert store.state.auth.granted("r", "data/system/roles") == (Permission.SELECT,)


def test_list_statements_answer_encoded_rows() -> None:
    _, ex = setup()
    run(ex, "CREATE ROLE r")
    result = run(ex, "LIST ROLES")
    assert isinstance(result, RowsResult)
    assert [c.name for c in result.metadata.columns] == ["role", "super", "login", "options"]
    cells = [(row[0], row[1]) for row in result.rows]
    assert all(name is not None and superuser is not None for name, superuser in cells)
    decoded = [(codec.deserialize(TEXT, n or b""), codec.deserialize(BOOLEAN, s or b"")) for n, s in cells]
    assert decoded == [("cassandra", True), ("r", False)]
