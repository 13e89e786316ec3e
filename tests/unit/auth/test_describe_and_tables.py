"""Golden DESCRIBE text for auth, the system tables rendered from the state, and serialization."""

from __future__ import annotations

import msgpack
import pytest

from tabletdb.auth.describe import check_may_describe_passwords, describe_auth
from tabletdb.auth.model import AuthConfig
from tabletdb.auth.mutations import PutRole, RevokeAllOn, apply_auth_mutations
from tabletdb.auth.permissions import grant_permissions
from tabletdb.auth.serialize import AuthDecodeError, from_plain, to_plain
from tabletdb.auth.system_tables import (
    AUTH_TABLES,
    LEGACY_KEYSPACE,
    LEGACY_TABLES,
    ROLE_PERMISSIONS,
    ROLES,
    render,
)
from tabletdb.cql.errors import Unauthorized
from tabletdb.qos import QosState, apply_qos_mutations
from tabletdb.qos.model import ServiceLevel
from tabletdb.qos.mutations import Attach, PutLevel
from tests.unit.auth.helpers import ENFORCING, catalog, roles_state, stmt

CATALOG = catalog()


def sample():  # type: ignore[no-untyped-def]
    state = roles_state(
        "CREATE ROLE app WITH LOGIN = true AND PASSWORD = 'pw'",
        'CREATE ROLE "Readers"',
        "CREATE ROLE ops WITH SUPERUSER = true",
        'GRANT "Readers" TO app',
    )
    for text in (
        'GRANT SELECT ON KEYSPACE ks TO "Readers"',
        "GRANT ALL ON ks.t TO app",
        "GRANT EXECUTE ON FUNCTION ks.f(int) TO app",
        "GRANT DESCRIBE ON ALL ROLES TO app",
    ):
        state = apply_auth_mutations(state, grant_permissions(state, CATALOG, stmt(text), None, ENFORCING))
    qos = apply_qos_mutations(
        QosState(), [PutLevel(ServiceLevel("gold", 20, None, 500)), Attach("app", "gold")]
    )
    return state, qos


def test_describe_auth_golden() -> None:
    state, qos = sample()
    app_hash = state.role("app").salted_hash
    cassandra_hash = state.role("cassandra").salted_hash
    rows = [
        (r.keyspace_name, r.type, r.name, r.create_statement)
        for r in describe_auth(state, qos, True, ENFORCING)
    ]
    assert rows == [
        (None, "role", '"Readers"', 'CREATE ROLE "Readers" WITH LOGIN = false AND SUPERUSER = false;'),
        (
            None,
            "role",
            "app",
            f"CREATE ROLE app WITH HASHED PASSWORD = '{app_hash}' AND LOGIN = true AND SUPERUSER = false;",
        ),
        (
            None,
            "role",
            "cassandra",
            f"CREATE ROLE IF NOT EXISTS cassandra WITH HASHED PASSWORD = '{cassandra_hash}'"
            " AND LOGIN = true AND SUPERUSER = true;",
        ),
        (None, "role", "ops", "CREATE ROLE ops WITH LOGIN = false AND SUPERUSER = true;"),
        (None, "grant_role", '"Readers"', 'GRANT "Readers" TO app;'),
        (None, "grant_permission", '"Readers"', 'GRANT SELECT ON KEYSPACE ks TO "Readers";'),
        (None, "grant_permission", "app", "GRANT ALTER ON ks.t TO app;"),
        (None, "grant_permission", "app", "GRANT DROP ON ks.t TO app;"),
        (None, "grant_permission", "app", "GRANT SELECT ON ks.t TO app;"),
        (None, "grant_permission", "app", "GRANT MODIFY ON ks.t TO app;"),
        (None, "grant_permission", "app", "GRANT AUTHORIZE ON ks.t TO app;"),
        (None, "grant_permission", "app", "GRANT DESCRIBE ON ALL ROLES TO app;"),
        (None, "grant_permission", "app", "GRANT EXECUTE ON FUNCTION ks.f(int) TO app;"),
        (
            None,
            "service_level",
            "driver",
            "CREATE SERVICE LEVEL IF NOT EXISTS driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 200;",
        ),
        (
            None,
            "service_level",
            "driver",
            "ALTER SERVICE LEVEL driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 200;",
        ),
        (None, "service_level", "gold", "CREATE SERVICE LEVEL gold WITH TIMEOUT = 20ms AND SHARES = 500;"),
        (None, "service_level_attachment", "gold", "ATTACH SERVICE LEVEL gold TO app;"),
    ]


def test_describe_follows_the_configuration() -> None:
    state, qos = sample()
    no_passwords = describe_auth(state, qos, False, ENFORCING)
    assert no_passwords[1].create_statement == "CREATE ROLE app WITH LOGIN = true AND SUPERUSER = false;"
    open_config = describe_auth(state, qos, True, AuthConfig())
    assert not any("HASHED PASSWORD" in r.create_statement for r in open_config)
    assert not any(r.type == "grant_permission" for r in open_config)


def test_describe_passwords_is_superuser_only() -> None:
    state, _ = sample()
    check_may_describe_passwords(state, "ops")
    check_may_describe_passwords(state, None)
    with pytest.raises(Unauthorized, match="superuser"):
        check_may_describe_passwords(state, "app")


def test_describe_output_replays_to_the_same_state() -> None:
    """The backup contract, at this layer: the statements recreate equal roles and grants."""
    state, _ = sample()
    statements = [
        r.create_statement
        for r in describe_auth(state, QosState(), True, ENFORCING)
        if r.type.startswith(("role", "grant"))
    ]
    from tabletdb.auth import roles
    from tabletdb.auth.model import AuthState
    from tabletdb.auth.roles import grant_role

    replayed = AuthState()
    for text in statements:
        parsed = stmt(text.strip())
        kind = type(parsed).__name__
        if kind == "CreateRole":
            muts = roles.create_role(replayed, parsed, None, ENFORCING)
        elif kind == "GrantRole":
            muts = grant_role(replayed, parsed, None, ENFORCING)
        else:
            muts = grant_permissions(replayed, CATALOG, parsed, None, ENFORCING)
        replayed = apply_auth_mutations(replayed, muts)
    assert replayed == state


def test_system_tables() -> None:
    state, qos = sample()
    assert [t.name for t in AUTH_TABLES] == ["roles", "role_members", "role_permissions", "role_attributes"]
    assert [c.name for c in ROLES.columns] == [
        "role",
        "can_login",
        "is_superuser",
        "member_of",
        "salted_hash",
    ]
    assert [c.name for c in ROLE_PERMISSIONS.primary_key] == ["role", "resource"]
    roles_rows = render("roles", state, qos)
    assert roles_rows is not None
    app = next(r for r in roles_rows if r["role"] == "app")
    assert app["member_of"] == ("Readers",) and app["can_login"] and app["salted_hash"].startswith("$6$")
    assert render("role_members", state, qos) == [{"role": "Readers", "member": "app"}]
    perms = render("role_permissions", state, qos)
    assert {
        "role": "app",
        "resource": "data/ks/t",
        "permissions": ("ALTER", "AUTHORIZE", "DROP", "MODIFY", "SELECT"),
    } in perms
    assert render("role_attributes", state, qos) == [
        {"role": "app", "attribute_name": "service_level", "attribute_value": "gold"}
    ]
    assert render("peers", state, qos) is None


def test_serialization_round_trips_through_msgpack() -> None:
    state, qos = sample()
    for value in (state, qos, (PutRole(state.role("app")), RevokeAllOn("data/ks")), (Attach("r", "gold"),)):
        wire = msgpack.packb(to_plain(value), use_bin_type=True)
        assert from_plain(msgpack.unpackb(wire, raw=False)) == value
    assert msgpack.packb(to_plain(state)) == msgpack.packb(to_plain(from_plain(to_plain(state))))
    with pytest.raises(AuthDecodeError):
        from_plain({"@": "Nope"})


def test_legacy_system_auth_tables_mirror_the_system_ones_under_their_own_ids() -> None:
    by_name = {t.name: t for t in AUTH_TABLES}
    assert [t.name for t in LEGACY_TABLES] == ["roles", "role_members", "role_permissions"]
    for legacy in LEGACY_TABLES:
        current = by_name[legacy.name]
        assert legacy.keyspace == LEGACY_KEYSPACE == "system_auth"
        assert legacy.columns == current.columns and legacy.id != current.id
