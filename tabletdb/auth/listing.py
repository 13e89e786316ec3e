"""LIST ROLES and LIST USERS result rows, with Cassandra's columns and visibility rules.

Without `OF`, a caller sees every role only if it is a superuser or holds DESCRIBE on ALL
ROLES; otherwise it sees the roles it has itself (its own closure).
"""

from __future__ import annotations

from tabletdb.auth import resources
from tabletdb.auth.authorization import has_permission, is_super
from tabletdb.auth.model import AuthConfig, AuthState, Role
from tabletdb.auth.resources import Permission
from tabletdb.auth.roles import require_role
from tabletdb.cql import ast_auth as ast
from tabletdb.cql.errors import Unauthorized
from tabletdb.cql.types import BOOLEAN, TEXT, MapType
from tabletdb.qos.listing import Listing

ROLE_COLUMNS = (("role", TEXT), ("super", BOOLEAN), ("login", BOOLEAN), ("options", MapType(TEXT, TEXT)))
USER_COLUMNS = (("name", TEXT), ("super", BOOLEAN))


def _may_describe_all(state: AuthState, user: str | None, config: AuthConfig) -> bool:
    if is_super(state, user) or not config.enforces_permissions:
        return True
    assert user is not None
    return has_permission(state, user, Permission.DESCRIBE, resources.ROLES_ROOT)


def _visible(state: AuthState, user: str | None, config: AuthConfig) -> list[Role]:
    if _may_describe_all(state, user, config):
        return sorted(state.roles.values(), key=lambda r: r.name)
    assert user is not None
    return sorted((r for n in state.closure(user) if (r := state.role(n)) is not None), key=lambda r: r.name)


def list_roles(state: AuthState, stmt: ast.ListRoles, user: str | None, config: AuthConfig) -> Listing:
    """LIST ROLES [OF r [NORECURSIVE]]: `OF r` shows r and the roles granted to it (all of
    them, transitively, unless NORECURSIVE)."""
    if stmt.of is None:
        chosen = _visible(state, user, config)
    else:
        of = require_role(state, stmt.of)
        if (
            not _may_describe_all(state, user, config)
            and user is not None
            and stmt.of not in state.closure(user)
        ):
            raise Unauthorized(f"You are not authorized to view roles granted to {stmt.of}")
        names = state.closure(stmt.of) if stmt.recursive else [stmt.of, *of.member_of]
        chosen = sorted((r for n in set(names) if (r := state.role(n)) is not None), key=lambda r: r.name)
    return Listing(ROLE_COLUMNS, tuple((r.name, r.is_superuser, r.can_login, {}) for r in chosen))


def list_users(state: AuthState, user: str | None, config: AuthConfig) -> Listing:
    """LIST USERS: the visible roles that can log in, with their (inherited) superuser status."""
    rows = tuple((r.name, state.is_superuser(r.name)) for r in _visible(state, user, config) if r.can_login)
    return Listing(USER_COLUMNS, rows)
