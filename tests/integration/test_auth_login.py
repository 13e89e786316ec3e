"""Password login, roles and the auth system tables on a real node (PasswordAuthenticator +
CassandraAuthorizer), through scylla-driver's PlainTextAuthProvider."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from cassandra import ReadTimeout, Unauthorized, WriteTimeout
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from tests.harness.clients import run_cqlsh, scylla_cluster
from tests.harness.node import NodeFactory, TestNode

NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer"}


@contextmanager
def login(node: TestNode, user: str, password: str) -> Iterator[Any]:
    with scylla_cluster(node, auth_provider=PlainTextAuthProvider(user, password)) as cluster:
        yield cluster.connect()


@pytest.fixture(scope="module")
def auth_node(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNode]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("authnode"))
    try:
        yield factory.start_node(options=AUTH_OPTIONS)
    finally:
        assert not factory.cleanup()


def test_default_superuser_logs_in_and_sees_itself(auth_node: TestNode) -> None:
    with login(auth_node, "cassandra", "cassandra") as s:
        rows = s.execute("SELECT role, can_login, is_superuser, salted_hash FROM system.roles").all()
        assert [(r.role, r.can_login, r.is_superuser) for r in rows] == [("cassandra", True, True)]
        assert rows[0].salted_hash.startswith("$6$")
        assert [(r.role, r.super) for r in s.execute("LIST ROLES")] == [("cassandra", True)]


def test_bad_password_and_unknown_user_are_refused_alike(auth_node: TestNode) -> None:
    for user, password in (("cassandra", "wrong"), ("nobody", "cassandra")):
        with (
            pytest.raises(NoHostAvailable, match="Username and/or password are incorrect"),
            login(auth_node, user, password),
        ):
            pass


def test_role_without_login_is_refused(auth_node: TestNode) -> None:
    with login(auth_node, "cassandra", "cassandra") as s:
        s.execute("CREATE ROLE IF NOT EXISTS nologin WITH PASSWORD = 'pw' AND LOGIN = false")
    with pytest.raises(NoHostAvailable, match="not permitted to log in"), login(auth_node, "nologin", "pw"):
        pass


def test_password_change_takes_effect_for_new_logins(auth_node: TestNode) -> None:
    with login(auth_node, "cassandra", "cassandra") as s:
        s.execute("CREATE ROLE IF NOT EXISTS changer WITH PASSWORD = 'one' AND LOGIN = true")
    with login(auth_node, "changer", "one") as s:
        s.execute("ALTER ROLE changer WITH PASSWORD = 'two'")
    with pytest.raises(NoHostAvailable, match="incorrect"), login(auth_node, "changer", "one"):
        pass
    with login(auth_node, "changer", "two") as s:
        assert s.execute("SELECT release_version FROM system.local").one() is not None


def test_auth_tables_render_grants_memberships_and_attachments(auth_node: TestNode) -> None:
    with login(auth_node, "cassandra", "cassandra") as s:
        s.execute("CREATE KEYSPACE IF NOT EXISTS tabs WITH replication = " + NTS)
        s.execute("CREATE ROLE IF NOT EXISTS reader")
        s.execute("CREATE ROLE IF NOT EXISTS member WITH LOGIN = true AND PASSWORD = 'm'")
        s.execute("GRANT reader TO member")
        s.execute("GRANT SELECT ON KEYSPACE tabs TO reader")
        s.execute("CREATE SERVICE LEVEL IF NOT EXISTS tabsl WITH TIMEOUT = 50ms")
        s.execute("ATTACH SERVICE LEVEL tabsl TO member")
        members = {(r.role, r.member) for r in s.execute("SELECT * FROM system.role_members")}
        assert ("reader", "member") in members
        rows = s.execute("SELECT * FROM system.role_permissions")
        perms = {(r.role, r.resource): r.permissions for r in rows}
        assert perms[("reader", "data/tabs")] == {"SELECT"}
        rows = s.execute("SELECT * FROM system.role_attributes")
        attrs = [(r.role, r.attribute_name, r.attribute_value) for r in rows]
        assert ("member", "service_level", "tabsl") in attrs
        listed = [(r.role, r.resource, r.permission) for r in s.execute("LIST ALL PERMISSIONS OF reader")]
        assert listed == [("reader", "<keyspace tabs>", "SELECT")]
        levels = [r.service_level for r in s.execute("LIST ALL SERVICE LEVELS")]
        assert "tabsl" in levels and "driver" in levels
    with login(auth_node, "member", "m") as s:
        with pytest.raises(Unauthorized):
            s.execute("SELECT * FROM system.roles")
        with pytest.raises(Unauthorized):
            s.execute("CREATE ROLE sneaky")


def test_creator_gets_grants_and_drop_revokes_them(auth_node: TestNode) -> None:
    with login(auth_node, "cassandra", "cassandra") as s:
        s.execute("CREATE ROLE IF NOT EXISTS creator WITH LOGIN = true AND PASSWORD = 'c'")
        s.execute("GRANT CREATE ON ALL KEYSPACES TO creator")
    with login(auth_node, "creator", "c") as s:
        s.execute("CREATE KEYSPACE crks WITH replication = " + NTS)
        s.execute("CREATE TABLE crks.t (k int PRIMARY KEY, v int)")
    with login(auth_node, "cassandra", "cassandra") as s:
        resources = {r.resource for r in s.execute("LIST ALL PERMISSIONS OF creator NORECURSIVE")}
        created = {"<keyspace crks>", "<table crks.t>", "<all functions in crks>"}
        assert {"<all keyspaces>", *created} <= resources
        s.execute("DROP KEYSPACE crks")
        resources = {r.resource for r in s.execute("LIST ALL PERMISSIONS OF creator NORECURSIVE")}
        assert resources == {"<all keyspaces>"}


def test_cdc_log_grants_follow_the_base(auth_node: TestNode) -> None:
    """Enabling CDC creates the log in the same command, so its creator is granted the log as
    it is the base; dropping the base drops the log and forgets both grants."""
    with login(auth_node, "cassandra", "cassandra") as s:
        s.execute("CREATE ROLE IF NOT EXISTS logger WITH LOGIN = true AND PASSWORD = 'l'")
        s.execute("CREATE KEYSPACE cdcks WITH replication = " + NTS)
        s.execute("GRANT CREATE ON KEYSPACE cdcks TO logger")
    with login(auth_node, "logger", "l") as s:
        s.execute("CREATE TABLE cdcks.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
        s.execute("INSERT INTO cdcks.t (k, v) VALUES (1, 2)")
        assert [r.v for r in s.execute("SELECT v FROM cdcks.t_scylla_cdc_log")] == [2]
    with login(auth_node, "cassandra", "cassandra") as s:
        resources = {r.resource for r in s.execute("LIST ALL PERMISSIONS OF logger NORECURSIVE")}
        assert {"<table cdcks.t>", "<table cdcks.t_scylla_cdc_log>"} <= resources
    with login(auth_node, "logger", "l") as s:
        s.execute("DROP TABLE cdcks.t")
    with login(auth_node, "cassandra", "cassandra") as s:
        resources = {r.resource for r in s.execute("LIST ALL PERMISSIONS OF logger NORECURSIVE")}
        assert resources == {"<keyspace cdcks>"}
        s.execute("DROP KEYSPACE cdcks")


def test_service_level_timeout_is_enforced(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options={**AUTH_OPTIONS, "test_statement_delay_ms": 300})
    with login(node, "cassandra", "cassandra") as s:
        s.execute("CREATE KEYSPACE slks WITH replication = " + NTS)
        s.execute("CREATE TABLE slks.t (k int PRIMARY KEY, v int)")
        s.execute("CREATE ROLE hurried WITH LOGIN = true AND PASSWORD = 'h'")
        s.execute("GRANT ALL ON KEYSPACE slks TO hurried")
        s.execute("CREATE SERVICE LEVEL quick WITH TIMEOUT = 1ms")
        s.execute("ATTACH SERVICE LEVEL quick TO hurried")
        s.execute("SELECT * FROM slks.t")  # no level attached: the delay alone is no error
    with login(node, "hurried", "h") as s:
        with pytest.raises(ReadTimeout) as read_err:
            s.execute("SELECT * FROM slks.t")
        assert read_err.value.received_responses == 0 and read_err.value.required_responses == 1
        with pytest.raises(WriteTimeout) as write_err:
            s.execute("INSERT INTO slks.t (k, v) VALUES (1, 1)")
        assert write_err.value.write_type == 0  # SIMPLE
        assert s.execute("SELECT release_version FROM system.local").one() is not None


def test_cqlsh_logs_in_and_lists_roles(auth_node: TestNode) -> None:
    """cqlsh -u/-p: a role statement and LIST ROLES (printed through cqlsh's system_auth
    lookup), and a refused login."""
    result = run_cqlsh(
        auth_node,
        "CREATE ROLE IF NOT EXISTS from_cqlsh; LIST ROLES;",
        args=["-u", "cassandra", "-p", "cassandra"],
    )
    assert result.returncode == 0, result.stderr
    listed = [line.split("|")[0].strip() for line in result.stdout.splitlines() if "|" in line]
    assert listed[0] == "role" and {"cassandra", "from_cqlsh"} <= set(listed[1:])
    refused = run_cqlsh(auth_node, "LIST ROLES;", args=["-u", "cassandra", "-p", "nope"])
    assert refused.returncode != 0
    assert "Username and/or password are incorrect" in refused.stdout + refused.stderr
