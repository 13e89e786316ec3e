"""Role statements: creation, alteration, drop, memberships, logins and LIST ROLES/USERS."""

from __future__ import annotations

import contextlib
import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.auth import roles
from tabletdb.auth.listing import list_roles, list_users
from tabletdb.auth.login import authenticate
from tabletdb.auth.model import AuthConfig, AuthState
from tabletdb.auth.mutations import AddPermissions, apply_auth_mutations
from tabletdb.auth.resources import Permission
from tabletdb.cql import ast_auth as ast
from tabletdb.cql.errors import BadCredentials, InvalidRequest, Unauthorized
from tests.unit.auth.helpers import ENFORCING, OPEN, SALT, roles_state, run, stmt


def test_default_superuser_created_once() -> None:
    state = roles_state()
    cassandra = state.role("cassandra")
    assert cassandra is not None and cassandra.is_superuser and cassandra.can_login
    assert authenticate(state, "cassandra", "cassandra") == "cassandra"
    assert roles.default_superuser(state) == ()
    dropped = run(
        roles_state("CREATE ROLE admin WITH SUPERUSER = true"),
        roles.drop_role,
        stmt("DROP ROLE cassandra"),
        "admin",
        ENFORCING,
    )
    assert roles.default_superuser(dropped) == ()


def test_create_role_defaults_and_password_hash() -> None:
    state = roles_state("CREATE ROLE r WITH PASSWORD = 'pw' AND LOGIN = true")
    r = state.role("r")
    assert r is not None and r.can_login and not r.is_superuser
    assert r.salted_hash is not None and r.salted_hash.startswith(f"$6${SALT}$")
    assert authenticate(state, "r", "pw") == "r"
    plain = roles_state("CREATE ROLE q")
    q = plain.role("q")
    assert q is not None and not q.can_login and q.salted_hash is None


def test_create_user_is_a_login_role() -> None:
    state = roles_state("CREATE USER u WITH PASSWORD 'pw' SUPERUSER")
    u = state.role("u")
    assert u is not None and u.can_login and u.is_superuser


def test_create_existing_role() -> None:
    state = roles_state("CREATE ROLE r")
    with pytest.raises(InvalidRequest, match="r already exists"):
        roles.create_role(state, stmt("CREATE ROLE r"), None, ENFORCING)
    assert roles.create_role(state, stmt("CREATE ROLE IF NOT EXISTS r"), None, ENFORCING) == ()


def test_password_options_need_the_password_authenticator() -> None:
    with pytest.raises(InvalidRequest, match="AllowAllAuthenticator does not support the PASSWORD option"):
        roles.create_role(AuthState(), stmt("CREATE ROLE r WITH PASSWORD = 'x'"), None, OPEN)
    both = ast.CreateRole("r", ast.RoleOptions(password="x", hashed_password="y"))
    with pytest.raises(InvalidRequest, match="cannot be used together"):
        roles.create_role(AuthState(), both, None, ENFORCING)
    with pytest.raises(InvalidRequest, match="OPTIONS"):
        roles.create_role(AuthState(), stmt("CREATE ROLE r WITH OPTIONS = {'a': 'b'}"), None, ENFORCING)


def test_hashed_password_is_stored_verbatim_and_superuser_only() -> None:
    state = roles_state("CREATE ROLE r WITH HASHED PASSWORD = '$6$abc$xyz' AND LOGIN = true")
    r = state.role("r")
    assert r is not None and r.salted_hash == "$6$abc$xyz"
    state = roles_state("CREATE ROLE plain WITH LOGIN = true AND PASSWORD = 'pw'")
    state = apply_auth_mutations(state, [AddPermissions("plain", "roles", (Permission.CREATE,))])
    with pytest.raises(Unauthorized, match="HASHED PASSWORD"):
        roles.create_role(state, stmt("CREATE ROLE y WITH HASHED PASSWORD = '$6$a$b'"), "plain", ENFORCING)


def test_non_superuser_needs_create_permission_and_cannot_make_superusers() -> None:
    state = roles_state("CREATE ROLE plain WITH LOGIN = true AND PASSWORD = 'pw'")
    with pytest.raises(
        Unauthorized, match="User plain has no CREATE permission on <all roles> or any of its parents"
    ):
        roles.create_role(state, stmt("CREATE ROLE x"), "plain", ENFORCING)
    state = apply_auth_mutations(state, [AddPermissions("plain", "roles", (Permission.CREATE,))])
    with pytest.raises(Unauthorized, match="Only superusers can create a role with superuser status"):
        roles.create_role(state, stmt("CREATE ROLE x WITH SUPERUSER = true"), "plain", ENFORCING)
    created = run(state, roles.create_role, stmt("CREATE ROLE x"), "plain", ENFORCING)
    # The creator gets every permission that applies to a role.
    assert created.granted("plain", "roles/x") == (Permission.ALTER, Permission.DROP, Permission.AUTHORIZE)
    # A superuser creator gets none (a restore must not add grants).
    by_super = run(state, roles.create_role, stmt("CREATE ROLE z"), "cassandra", ENFORCING)
    assert by_super.granted("cassandra", "roles/z") == ()


def test_alter_role_rules() -> None:
    state = roles_state("CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'old'", "CREATE ROLE other")
    changed = run(state, roles.alter_role, stmt("ALTER ROLE u WITH PASSWORD = 'new'"), "u", ENFORCING, SALT)
    assert authenticate(changed, "u", "new") == "u"
    with pytest.raises(BadCredentials, match="Username and/or password are incorrect"):
        authenticate(changed, "u", "old")
    with pytest.raises(Unauthorized, match="your own superuser status"):
        roles.alter_role(state, stmt("ALTER ROLE u WITH SUPERUSER = true"), "u", ENFORCING)
    with pytest.raises(Unauthorized, match="Only superusers are allowed to alter superuser status"):
        roles.alter_role(state, stmt("ALTER ROLE other WITH SUPERUSER = true"), "u", ENFORCING)
    with pytest.raises(Unauthorized, match="your own LOGIN"):
        roles.alter_role(state, stmt("ALTER ROLE u WITH LOGIN = false"), "u", ENFORCING)
    with pytest.raises(Unauthorized, match="no ALTER permission on <role other>"):
        roles.alter_role(state, stmt("ALTER ROLE other WITH LOGIN = true"), "u", ENFORCING)
    with pytest.raises(InvalidRequest, match="nobody doesn't exist"):
        roles.alter_role(state, stmt("ALTER ROLE nobody WITH LOGIN = true"), None, ENFORCING)
    promoted = run(
        state, roles.alter_role, stmt("ALTER ROLE other WITH SUPERUSER = true"), "cassandra", ENFORCING
    )
    assert promoted.is_superuser("other")
    assert roles.alter_role(state, stmt("ALTER ROLE other WITH LOGIN = false"), None, ENFORCING) == ()


def test_drop_role_rules_and_cleanup() -> None:
    state = roles_state(
        "CREATE ROLE a WITH LOGIN = true AND PASSWORD = 'pw'",
        "CREATE ROLE b",
        "CREATE ROLE sup WITH SUPERUSER = true",
        "GRANT b TO a",
    )
    state = apply_auth_mutations(
        state,
        [
            AddPermissions("b", "data", (Permission.SELECT,)),
            AddPermissions("a", "roles/b", (Permission.DROP,)),
        ],
    )
    with pytest.raises(InvalidRequest, match="Cannot DROP primary role for current login"):
        roles.drop_role(state, stmt("DROP ROLE a"), "a", ENFORCING)
    with pytest.raises(Unauthorized, match="Only superusers can drop a role with superuser status"):
        roles.drop_role(state, stmt("DROP ROLE sup"), "a", ENFORCING)
    with pytest.raises(InvalidRequest, match="zz doesn't exist"):
        roles.drop_role(state, stmt("DROP ROLE zz"), None, ENFORCING)
    assert roles.drop_role(state, stmt("DROP ROLE IF EXISTS zz"), None, ENFORCING) == ()
    after = run(state, roles.drop_role, stmt("DROP ROLE b"), "a", ENFORCING)
    assert after.role("b") is None
    a = after.role("a")
    assert a is not None and a.member_of == ()
    assert after.granted("b", "data") == () and after.granted("a", "roles/b") == ()


def test_grant_and_revoke_role() -> None:
    state = roles_state("CREATE ROLE a", "CREATE ROLE b", "CREATE ROLE c", "GRANT b TO a", "GRANT c TO b")
    assert state.closure("a") == ["a", "b", "c"]
    with pytest.raises(InvalidRequest, match="a already includes role b"):
        roles.grant_role(state, stmt("GRANT b TO a"), None, ENFORCING)
    with pytest.raises(InvalidRequest, match="c is a member of a"):
        roles.grant_role(state, stmt("GRANT a TO c"), None, ENFORCING)
    with pytest.raises(InvalidRequest, match="a is a member of a"):
        roles.grant_role(state, stmt("GRANT a TO a"), None, ENFORCING)
    with pytest.raises(InvalidRequest, match="nope doesn't exist"):
        roles.grant_role(state, stmt("GRANT nope TO a"), None, ENFORCING)
    with pytest.raises(InvalidRequest, match="a was not granted role c, so it cannot be revoked"):
        roles.revoke_role(state, stmt("REVOKE c FROM a"), None, ENFORCING)
    revoked = run(state, roles.revoke_role, stmt("REVOKE b FROM a"), None, ENFORCING)
    assert revoked.closure("a") == ["a"]


def test_superuser_status_is_inherited() -> None:
    state = roles_state("CREATE ROLE boss WITH SUPERUSER = true", "CREATE ROLE u", "GRANT boss TO u")
    assert state.is_superuser("u")


def test_login_failures_say_nothing_specific() -> None:
    state = roles_state(
        "CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'pw'", "CREATE ROLE nl WITH PASSWORD = 'pw'"
    )
    for user, password in (("u", "bad"), ("ghost", "pw"), ("cassandra", "")):
        with pytest.raises(BadCredentials) as info:
            authenticate(state, user, password)
        assert str(info.value) == "Username and/or password are incorrect"
    with pytest.raises(BadCredentials, match="nl is not permitted to log in"):
        authenticate(state, "nl", "pw")


def test_list_roles_and_users() -> None:
    state = roles_state(
        "CREATE ROLE a WITH LOGIN = true AND PASSWORD = 'pw'",
        "CREATE ROLE b",
        "CREATE ROLE c",
        "GRANT b TO a",
        "GRANT c TO b",
    )
    everything = list_roles(state, stmt("LIST ROLES"), None, ENFORCING)
    assert everything.column_names == ("role", "super", "login", "options")
    assert [r[0] for r in everything.rows] == ["a", "b", "c", "cassandra"]
    assert everything.rows[3] == ("cassandra", True, True, {})
    assert [r[0] for r in list_roles(state, stmt("LIST ROLES OF a"), None, ENFORCING).rows] == ["a", "b", "c"]
    assert [r[0] for r in list_roles(state, stmt("LIST ROLES OF a NORECURSIVE"), None, ENFORCING).rows] == [
        "a",
        "b",
    ]
    # A non-superuser without DESCRIBE on ALL ROLES sees only its own roles.
    assert [r[0] for r in list_roles(state, stmt("LIST ROLES"), "a", ENFORCING).rows] == ["a", "b", "c"]
    with pytest.raises(Unauthorized, match="cassandra"):
        list_roles(state, stmt("LIST ROLES OF cassandra"), "a", ENFORCING)
    users = list_users(state, None, ENFORCING)
    assert users.column_names == ("name", "super")
    assert users.rows == (("a", False), ("cassandra", True))


@functools.cache
def _five_roles() -> AuthState:
    return roles_state(*(f"CREATE ROLE {n}" for n in "abcde"))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde"), st.booleans()), max_size=25))
def test_grants_never_form_a_cycle(ops: list[tuple[str, str, bool]]) -> None:
    """Whatever GRANT/REVOKE ROLE sequence runs, the membership graph stays acyclic, and every
    refused statement changes nothing."""
    state = _five_roles()
    for granted, grantee, is_grant in ops:
        text = f"GRANT {granted} TO {grantee}" if is_grant else f"REVOKE {granted} FROM {grantee}"
        decide = roles.grant_role if is_grant else roles.revoke_role
        with contextlib.suppress(InvalidRequest):
            state = run(state, decide, stmt(text), None, ENFORCING)
    for name in "abcde":
        r = state.role(name)
        assert r is not None
        for granted in r.member_of:
            assert name not in state.closure(granted)


def test_config_accepts_short_class_names() -> None:
    config = AuthConfig("PasswordAuthenticator", "CassandraAuthorizer")
    assert config.authenticator == "org.apache.cassandra.auth.PasswordAuthenticator"
    assert config.uses_passwords and config.enforces_permissions
    assert not AuthConfig().uses_passwords
    with pytest.raises(ValueError, match="unknown authenticator"):
        AuthConfig("LdapAuthenticator")
