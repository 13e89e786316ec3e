"""Roles, grants and service levels are group0 state: every member sees them, and a restarted
node still has them (replayed from its log)."""

from __future__ import annotations

from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import pinned_cluster
from tests.harness.node import NodeFactory

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer"}
DESC = "DESC SCHEMA WITH INTERNALS AND PASSWORDS"


def test_auth_state_is_replicated_and_durable(node_factory: NodeFactory) -> None:
    first, second = node_factory.start_cluster(2, options=AUTH_OPTIONS)
    admin = PlainTextAuthProvider("cassandra", "cassandra")
    with pinned_cluster(first, auth_provider=admin) as cluster:
        s = cluster.connect()
        s.execute("CREATE ROLE replicated WITH LOGIN = true AND PASSWORD = 'everywhere'")
        s.execute("GRANT SELECT ON ALL KEYSPACES TO replicated")
        s.execute("CREATE SERVICE LEVEL rl WITH TIMEOUT = 30ms")
        s.execute("ATTACH SERVICE LEVEL rl TO replicated")
        expected = [tuple(r) for r in s.execute(DESC)]
    # The second node applied the same commands; the default superuser exists once, from the founder.
    # Pinned sessions: the barrier and the checks must run on the node under test, not round-robin.
    with pinned_cluster(second, auth_provider=admin) as cluster:
        s = cluster.connect()
        s.execute("CREATE ROLE barrier")  # a group0 change from this node: it has caught up
        s.execute("DROP ROLE barrier")
        assert [tuple(r) for r in s.execute(DESC)] == expected
    user = PlainTextAuthProvider("replicated", "everywhere")
    with pinned_cluster(second, auth_provider=user) as cluster:
        assert cluster.connect().execute("LIST EFFECTIVE SERVICE LEVEL OF replicated").all()
    first.stop()
    first.start()
    with pinned_cluster(first, auth_provider=user) as cluster:
        rows = cluster.connect().execute("LIST ATTACHED SERVICE LEVEL OF replicated").all()
        assert [(r.role, r.service_level) for r in rows] == [("replicated", "rl")]
