"""GRANT/REVOKE/LIST PERMISSIONS and the permission check (with a brute-force model)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.auth import resources as res
from tabletdb.auth.authorization import (
    check_permission,
    creator_grants,
    has_permission,
    keyspace_creator_grants,
    keyspace_dropped,
    table_dropped,
)
from tabletdb.auth.model import AuthState, Role
from tabletdb.auth.mutations import AddMembership, AddPermissions, AuthMutation, PutRole, apply_auth_mutations
from tabletdb.auth.permissions import grant_permissions, list_permissions, revoke_permissions
from tabletdb.auth.resources import Permission
from tabletdb.cql.errors import InvalidRequest, Unauthorized
from tests.unit.auth.helpers import ENFORCING, OPEN, catalog, roles_state, stmt

CATALOG = catalog()


def grant(state: AuthState, text: str, user: str | None = None, ks: str | None = None) -> AuthState:
    return apply_auth_mutations(state, grant_permissions(state, CATALOG, stmt(text), user, ENFORCING, ks))


def test_resource_names_and_display() -> None:
    cases = [
        ("ALL KEYSPACES", "data", "<all keyspaces>"),
        ("KEYSPACE ks", "data/ks", "<keyspace ks>"),
        ("ks.t", "data/ks/t", "<table ks.t>"),
        ("ALL ROLES", "roles", "<all roles>"),
        ("ROLE r", "roles/r", "<role r>"),
        ("ALL FUNCTIONS", "functions", "<all functions>"),
        ("ALL FUNCTIONS IN KEYSPACE ks", "functions/ks", "<all functions in ks>"),
        ("FUNCTION ks.f(int, text)", "functions/ks/f[int^text]", "<function ks.f(int, text)>"),
    ]
    for written, name, shown in cases:
        parsed = stmt(f"GRANT ALTER ON {written} TO r")
        assert res.from_ast(parsed.resource, None) == name
        assert res.display(name) == shown
        assert res.cql(name) == written
    assert res.chain("data/ks/t") == ["data/ks/t", "data/ks", "data"]
    assert res.chain("functions/ks/f[int]") == ["functions/ks/f[int]", "functions/ks", "functions"]
    assert res.chain("roles/a/b") == ["roles/a/b", "roles"]
    assert res.display("data/Ks/T") == '<table "Ks"."T">'
    with pytest.raises(InvalidRequest, match="No keyspace has been specified"):
        res.from_ast(stmt("GRANT SELECT ON t TO r").resource, None)
    assert res.from_ast(stmt("GRANT SELECT ON t TO r").resource, "ks") == "data/ks/t"


def test_grant_all_expands_to_the_applicable_permissions() -> None:
    state = roles_state("CREATE ROLE r")
    state = grant(state, "GRANT ALL ON ks.t TO r")
    assert state.granted("r", "data/ks/t") == (
        Permission.ALTER,
        Permission.DROP,
        Permission.SELECT,
        Permission.MODIFY,
        Permission.AUTHORIZE,
    )
    state = grant(state, "GRANT ALL ON ALL ROLES TO r")
    assert Permission.DESCRIBE in state.granted("r", "roles")
    state = grant(state, "GRANT ALL ON FUNCTION ks.f(int) TO r")
    assert state.granted("r", "functions/ks/f[int]") == (
        Permission.ALTER,
        Permission.DROP,
        Permission.AUTHORIZE,
        Permission.EXECUTE,
    )


def test_inapplicable_permission_is_refused() -> None:
    state = roles_state("CREATE ROLE r")
    with pytest.raises(
        InvalidRequest, match="RoleResource does not support the requested permissions: SELECT"
    ):
        grant(state, "GRANT SELECT ON ROLE r TO r")
    with pytest.raises(
        InvalidRequest, match="DataResource does not support the requested permissions: EXECUTE"
    ):
        grant(state, "GRANT EXECUTE ON KEYSPACE ks TO r")
    with pytest.raises(
        InvalidRequest, match="DataResource does not support the requested permissions: CREATE"
    ):
        grant(state, "GRANT CREATE ON ks.t TO r")


def test_grant_checks_targets_and_authorizer() -> None:
    state = roles_state("CREATE ROLE r")
    with pytest.raises(InvalidRequest, match="Role ghost doesn't exist"):
        grant(state, "GRANT SELECT ON ks.t TO ghost")
    with pytest.raises(InvalidRequest, match=r"Resource <table ks\.nope> doesn't exist"):
        grant(state, "GRANT SELECT ON ks.nope TO r")
    with pytest.raises(InvalidRequest, match="Resource <keyspace other> doesn't exist"):
        grant(state, "GRANT SELECT ON KEYSPACE other TO r")
    with pytest.raises(InvalidRequest, match="GRANT operation is not supported by AllowAllAuthorizer"):
        grant_permissions(state, CATALOG, stmt("GRANT SELECT ON ks.t TO r"), None, OPEN)
    assert grant(state, "GRANT SELECT ON ks.t TO r", ks=None).granted("r", "data/ks/t") == (
        Permission.SELECT,
    )


def test_granting_needs_authorize_and_the_permission_itself() -> None:
    state = roles_state("CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'pw'", "CREATE ROLE r")
    with pytest.raises(
        Unauthorized, match=r"User u has no AUTHORIZE permission on <table ks\.t> or any of its parents"
    ):
        grant(state, "GRANT SELECT ON ks.t TO r", user="u")
    state = grant(state, "GRANT AUTHORIZE ON KEYSPACE ks TO u")
    with pytest.raises(Unauthorized, match=r"User u has no SELECT permission on <table ks\.t>"):
        grant(state, "GRANT SELECT ON ks.t TO r", user="u")
    state = grant(state, "GRANT SELECT ON ALL KEYSPACES TO u")
    assert grant(state, "GRANT SELECT ON ks.t TO r", user="u").granted("r", "data/ks/t") == (
        Permission.SELECT,
    )


def test_revoke() -> None:
    state = grant(roles_state("CREATE ROLE r"), "GRANT ALL ON KEYSPACE ks TO r")
    revoked = apply_auth_mutations(
        state,
        revoke_permissions(state, CATALOG, stmt("REVOKE SELECT ON KEYSPACE ks FROM r"), None, ENFORCING),
    )
    assert Permission.SELECT not in revoked.granted("r", "data/ks")
    assert (
        revoke_permissions(revoked, CATALOG, stmt("REVOKE SELECT ON KEYSPACE ks FROM r"), None, ENFORCING)
        == ()
    )
    everything = apply_auth_mutations(
        state, revoke_permissions(state, CATALOG, stmt("REVOKE ALL ON KEYSPACE ks FROM r"), None, ENFORCING)
    )
    assert ("r", "data/ks") not in everything.grants


def test_check_permission_hierarchy_inheritance_and_superuser() -> None:
    state = roles_state(
        "CREATE ROLE u", "CREATE ROLE reader", "GRANT reader TO u", "CREATE ROLE boss WITH SUPERUSER = true"
    )
    with pytest.raises(Unauthorized) as info:
        check_permission(state, "u", Permission.SELECT, "data/ks/t")
    assert str(info.value) == "User u has no SELECT permission on <table ks.t> or any of its parents"
    state = grant(state, "GRANT SELECT ON KEYSPACE ks TO reader")
    check_permission(state, "u", Permission.SELECT, "data/ks/t")
    with pytest.raises(Unauthorized, match="no MODIFY permission"):
        check_permission(state, "u", Permission.MODIFY, "data/ks/t")
    with pytest.raises(Unauthorized, match="<keyspace other>"):
        check_permission(state, "u", Permission.SELECT, "data/other")
    check_permission(state, "boss", Permission.DROP, "data/ks/t")
    state = grant(state, "GRANT EXECUTE ON ALL FUNCTIONS TO u")
    check_permission(state, "u", Permission.EXECUTE, "functions/ks/f[int]")


def test_creator_grants_and_drop_revocations() -> None:
    state = roles_state("CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'pw'")
    muts = creator_grants(state, ENFORCING, "u", res.keyspace("ks"))
    state = apply_auth_mutations(state, muts)
    assert len(state.granted("u", "data/ks")) == 6
    assert creator_grants(state, ENFORCING, "cassandra", res.keyspace("ks")) == ()
    assert creator_grants(state, OPEN, "u", res.keyspace("ks")) == ()
    assert creator_grants(state, ENFORCING, None, res.keyspace("ks")) == ()
    state = grant(state, "GRANT SELECT ON ks.t TO u")
    state = grant(state, "GRANT EXECUTE ON FUNCTION ks.f(int) TO u")
    state = apply_auth_mutations(state, [AddPermissions("u", "data/ks2", (Permission.SELECT,))])
    assert ("u", "data/ks/t") not in apply_auth_mutations(state, table_dropped("ks", "t")).grants
    dropped = apply_auth_mutations(state, keyspace_dropped("ks"))
    assert [k for k in dropped.grants if k[0] == "u"] == [("u", "data/ks2")]


def test_list_permissions_rows() -> None:
    state = roles_state("CREATE ROLE u", "CREATE ROLE base", "GRANT base TO u")
    state = grant(state, "GRANT SELECT ON ALL KEYSPACES TO base")
    state = grant(state, "GRANT MODIFY ON ks.t TO u")
    state = grant(state, "GRANT ALTER ON KEYSPACE ks TO u")
    listing = list_permissions(state, CATALOG, stmt("LIST ALL PERMISSIONS OF u"), None, ENFORCING)
    assert listing.column_names == ("role", "username", "resource", "permission")
    assert listing.rows == (
        ("base", "base", "<all keyspaces>", "SELECT"),
        ("u", "u", "<keyspace ks>", "ALTER"),
        ("u", "u", "<table ks.t>", "MODIFY"),
    )
    direct = list_permissions(state, CATALOG, stmt("LIST ALL PERMISSIONS OF u NORECURSIVE"), None, ENFORCING)
    assert [r[0] for r in direct.rows] == ["u", "u"]
    on_table = list_permissions(state, CATALOG, stmt("LIST ALL ON ks.t"), None, ENFORCING)
    assert [r[2] for r in on_table.rows] == ["<all keyspaces>", "<keyspace ks>", "<table ks.t>"]
    exact = list_permissions(state, CATALOG, stmt("LIST ALL ON ks.t NORECURSIVE"), None, ENFORCING)
    assert exact.rows == (("u", "u", "<table ks.t>", "MODIFY"),)
    only_select = list_permissions(state, CATALOG, stmt("LIST SELECT OF u"), None, ENFORCING)
    assert only_select.rows == (("base", "base", "<all keyspaces>", "SELECT"),)
    with pytest.raises(Unauthorized, match="everyone's permissions"):
        list_permissions(state, CATALOG, stmt("LIST ALL PERMISSIONS"), "u", ENFORCING)
    with pytest.raises(Unauthorized, match="cassandra's permissions"):
        list_permissions(state, CATALOG, stmt("LIST ALL PERMISSIONS OF cassandra"), "u", ENFORCING)
    assert list_permissions(state, CATALOG, stmt("LIST ALL PERMISSIONS OF base"), "u", ENFORCING).rows


# ------------------------------------------------------------------- brute-force model

ROLE_NAMES = ["r0", "r1", "r2", "r3", "r4"]
RESOURCES = [
    "data",
    "data/system/local",
    "data/system/roles",
    "data/ks",
    "data/ks/t",
    "data/ks/u",
    "data/ks2",
    "roles",
    "roles/r1",
    "functions",
    "functions/ks",
    "functions/ks/f[int]",
]


def _model_allows(state: AuthState, role: str, perm: Permission, resource: str) -> bool:
    """Reachability by repeated relaxation, independent of AuthState.closure and resources.chain."""
    reach = {role}
    changed = True
    while changed:
        changed = False
        for name in list(reach):
            r = state.role(name)
            for granted in r.member_of if r else ():
                if granted not in reach:
                    reach.add(granted)
                    changed = True
    if any((r := state.role(n)) is not None and r.is_superuser for n in reach):
        return True
    protected = ("roles", "role_members", "role_permissions", "role_attributes")
    if (
        perm is Permission.SELECT
        and resource.startswith(("data/system_schema/", "data/system/"))
        and resource.rsplit("/", 1)[1] not in protected
    ):
        return True
    covering = [x for x in RESOURCES if resource == x or resource.startswith(x + "/")]
    return any(perm in state.granted(n, x) for n in reach for x in covering)


@settings(max_examples=150, deadline=None)
@given(
    superusers=st.sets(st.sampled_from(ROLE_NAMES), max_size=1),
    edges=st.lists(st.tuples(st.sampled_from(ROLE_NAMES), st.sampled_from(ROLE_NAMES)), max_size=8),
    grants=st.lists(
        st.tuples(st.sampled_from(ROLE_NAMES), st.sampled_from(RESOURCES), st.sampled_from(list(Permission))),
        max_size=10,
    ),
    query=st.tuples(
        st.sampled_from(ROLE_NAMES), st.sampled_from(list(Permission)), st.sampled_from(RESOURCES)
    ),
)
def test_check_permission_matches_brute_force(
    superusers: set[str],
    edges: list[tuple[str, str]],
    grants: list[tuple[str, str, Permission]],
    query: tuple[str, Permission, str],
) -> None:
    # Membership graphs may even be cyclic here (apply does not validate); the check must cope.
    muts: list[AuthMutation] = [PutRole(Role(n, is_superuser=n in superusers)) for n in ROLE_NAMES]
    muts += [AddMembership(granted, grantee) for granted, grantee in edges]
    muts += [AddPermissions(role, resource, (perm,)) for role, resource, perm in grants]
    state = apply_auth_mutations(AuthState(), muts)
    role, perm, resource = query
    expected = _model_allows(state, role, perm, resource)
    assert has_permission(state, role, perm, resource) == expected
    if expected:
        check_permission(state, role, perm, resource)
    else:
        with pytest.raises(Unauthorized, match=f"User {role} has no {perm.value} permission on"):
            check_permission(state, role, perm, resource)


def test_system_tables_are_readable_except_auth_tables() -> None:
    state = roles_state("CREATE ROLE u")
    check_permission(state, "u", Permission.SELECT, "data/system_schema/tables")
    check_permission(state, "u", Permission.SELECT, "data/system/local")
    with pytest.raises(Unauthorized, match=r"<table system\.roles>"):
        check_permission(state, "u", Permission.SELECT, "data/system/roles")
    with pytest.raises(Unauthorized, match="MODIFY"):
        check_permission(state, "u", Permission.MODIFY, "data/system/local")


def test_keyspace_creator_gets_keyspace_and_its_functions() -> None:
    state = roles_state("CREATE ROLE u WITH LOGIN = true AND PASSWORD = 'pw'")
    state = apply_auth_mutations(state, keyspace_creator_grants(state, ENFORCING, "u", "ks"))
    assert sorted(k[1] for k in state.grants) == ["data/ks", "functions/ks"]
