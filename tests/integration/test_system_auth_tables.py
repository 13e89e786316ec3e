"""`system_auth.roles`, `role_members` and `role_permissions`: readable in the legacy layout,
agreeing row for row with the `system` auth tables, protected like them, never writable."""

from __future__ import annotations

from typing import Any

import pytest
from cassandra import InvalidRequest, Unauthorized
from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer"}
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"


def _rows(session: Any, query: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in session.execute(query))


def test_system_auth_tables_show_the_roles_grants_and_memberships(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options=AUTH_OPTIONS)
    with scylla_cluster(node, auth_provider=PlainTextAuthProvider("cassandra", "cassandra")) as cluster:
        admin: Any = cluster.connect()
        admin.execute(f"CREATE KEYSPACE sa WITH replication = {NTS}")
        admin.execute("CREATE ROLE reader")
        admin.execute("CREATE ROLE alice WITH LOGIN = true AND PASSWORD = 'a'")
        admin.execute("GRANT reader TO alice")
        admin.execute("GRANT SELECT ON KEYSPACE sa TO reader")
        roles = {r.role: r for r in admin.execute("SELECT * FROM system_auth.roles")}
        assert set(roles) == {"cassandra", "reader", "alice"}
        assert roles["alice"].can_login and not roles["alice"].is_superuser
        assert roles["alice"].member_of == {"reader"} and roles["alice"].salted_hash.startswith("$")
        assert roles["cassandra"].is_superuser
        assert _rows(admin, "SELECT role, member FROM system_auth.role_members") == [("reader", "alice")]
        assert _rows(admin, "SELECT * FROM system_auth.role_permissions WHERE role = 'reader'") == [
            ("reader", "data/sa", {"SELECT"})
        ]
        for table in ("roles", "role_members", "role_permissions"):
            assert _rows(admin, f"SELECT * FROM system_auth.{table}") == _rows(
                admin, f"SELECT * FROM system.{table}"
            )
        listed = admin.execute(
            "SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'system_auth'"
        )
        assert sorted(r.table_name for r in listed) == ["role_members", "role_permissions", "roles"]
        with pytest.raises(InvalidRequest, match="Cannot modify the system keyspace system_auth"):
            admin.execute("INSERT INTO system_auth.roles (role, is_superuser) VALUES ('mallory', true)")
        assert "mallory" not in {r.role for r in admin.execute("SELECT role FROM system.roles")}
    with scylla_cluster(node, auth_provider=PlainTextAuthProvider("alice", "a")) as cluster:
        alice: Any = cluster.connect()
        with pytest.raises(Unauthorized):  # password hashes: as protected as system.roles
            alice.execute("SELECT * FROM system_auth.roles")
