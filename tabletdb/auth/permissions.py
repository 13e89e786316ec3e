"""GRANT / REVOKE / LIST PERMISSIONS: validation as Cassandra does it, mutations, result rows.

Granting needs AUTHORIZE on the resource and the granted permission itself (nobody hands out
what they do not hold); `ALL` means every permission that applies to the resource kind, while
naming a permission that does not apply (SELECT on a role) is an error.
"""

from __future__ import annotations

from tabletdb.auth import resources
from tabletdb.auth.authorization import authorize, is_super
from tabletdb.auth.model import AuthConfig, AuthState
from tabletdb.auth.mutations import AddPermissions, AuthMutation, RemovePermissions
from tabletdb.auth.resources import Permission, sort_permissions
from tabletdb.cql import ast_auth as ast
from tabletdb.cql.errors import InvalidRequest, Unauthorized
from tabletdb.cql.types import TEXT
from tabletdb.qos.listing import Listing
from tabletdb.schema.model import Catalog

PERMISSION_COLUMNS = (("role", TEXT), ("username", TEXT), ("resource", TEXT), ("permission", TEXT))
_KIND_NAMES = {
    resources.DATA_ROOT: "DataResource",
    resources.ROLES_ROOT: "RoleResource",
    resources.FUNCTIONS_ROOT: "FunctionResource",
}


def resource_exists(state: AuthState, catalog: Catalog, name: str) -> bool:
    parts = resources.split_name(name)
    if len(parts) == 1:
        return True
    if parts[0] == resources.ROLES_ROOT:
        return state.role(parts[1]) is not None
    ks = catalog.keyspace(parts[1])
    if ks is None or len(parts) == 2:
        return ks is not None
    if parts[0] == resources.DATA_ROOT:
        return catalog.table_or_view(parts[1], parts[2]) is not None
    key = resources.signature(parts[2])
    return key in ks.functions or key in ks.aggregates


def _require_authorizer(config: AuthConfig, operation: str) -> None:
    if not config.enforces_permissions:
        raise InvalidRequest(f"{operation} operation is not supported by AllowAllAuthorizer")


def _requested(names: tuple[str, ...], resource: str) -> tuple[Permission, ...]:
    """The permissions a GRANT/REVOKE names, checked against what the resource supports."""
    supported = resources.applicable(resource)
    if resources.means_all(names):
        return sort_permissions(supported)
    wanted = resources.parse_permissions(names)
    unsupported = wanted - supported
    if unsupported:
        kind = _KIND_NAMES[resources.split_name(resource)[0]]
        listed = ", ".join(p.value for p in sort_permissions(unsupported))
        raise InvalidRequest(f"Resource type {kind} does not support the requested permissions: {listed}")
    return sort_permissions(wanted)


def _target(
    state: AuthState,
    catalog: Catalog,
    resource: ast.Resource,
    role: str,
    current_keyspace: str | None,
) -> str:
    if state.role(role) is None:
        raise InvalidRequest(f"Role {role} doesn't exist")
    name = resources.from_ast(resource, current_keyspace)
    if not resource_exists(state, catalog, name):
        raise InvalidRequest(f"Resource {resources.display(name)} doesn't exist")
    return name


def _authorize_granting(
    state: AuthState, config: AuthConfig, user: str | None, perms: tuple[Permission, ...], resource: str
) -> None:
    authorize(state, config, user, Permission.AUTHORIZE, resource)
    for permission in perms:
        authorize(state, config, user, permission, resource)


def grant_permissions(
    state: AuthState,
    catalog: Catalog,
    stmt: ast.GrantPermissions,
    user: str | None,
    config: AuthConfig,
    current_keyspace: str | None = None,
) -> tuple[AuthMutation, ...]:
    _require_authorizer(config, "GRANT")
    resource = _target(state, catalog, stmt.resource, stmt.grantee, current_keyspace)
    perms = _requested(stmt.permissions, resource)
    _authorize_granting(state, config, user, perms, resource)
    missing = tuple(p for p in perms if p not in state.granted(stmt.grantee, resource))
    return (AddPermissions(stmt.grantee, resource, missing),) if missing else ()


def revoke_permissions(
    state: AuthState,
    catalog: Catalog,
    stmt: ast.RevokePermissions,
    user: str | None,
    config: AuthConfig,
    current_keyspace: str | None = None,
) -> tuple[AuthMutation, ...]:
    """Revoking a permission that was never granted is a silent no-op, as in Cassandra."""
    _require_authorizer(config, "REVOKE")
    resource = _target(state, catalog, stmt.resource, stmt.revokee, current_keyspace)
    perms = _requested(stmt.permissions, resource)
    _authorize_granting(state, config, user, perms, resource)
    present = tuple(p for p in perms if p in state.granted(stmt.revokee, resource))
    return (RemovePermissions(stmt.revokee, resource, present),) if present else ()


def _authorize_listing(state: AuthState, user: str | None, of: str | None) -> None:
    if is_super(state, user):
        return
    assert user is not None
    if of is None:
        raise Unauthorized("You are not authorized to view everyone's permissions")
    if of not in state.closure(user):
        raise Unauthorized(f"You are not authorized to view {of}'s permissions")


def list_permissions(
    state: AuthState,
    catalog: Catalog,
    stmt: ast.ListPermissions,
    user: str | None,
    config: AuthConfig,
    current_keyspace: str | None = None,
) -> Listing:
    """Rows (role, username, resource, permission): one per permission a role holds directly,
    for the role (and, recursively, the roles it inherits) and the resource (and, recursively,
    its parents); sorted by role, resource, then permission order."""
    _require_authorizer(config, "LIST PERMISSIONS")
    if stmt.of is not None and state.role(stmt.of) is None:
        raise InvalidRequest(f"Role {stmt.of} doesn't exist")
    _authorize_listing(state, user, stmt.of)
    wanted = resources.parse_permissions(stmt.permissions)
    roles: set[str] | None = None
    if stmt.of is not None:
        roles = set(state.closure(stmt.of)) if stmt.recursive else {stmt.of}
    targets: set[str] | None = None
    if stmt.resource is not None:
        name = resources.from_ast(stmt.resource, current_keyspace)
        if not resource_exists(state, catalog, name):
            raise InvalidRequest(f"Resource {resources.display(name)} doesn't exist")
        targets = set(resources.chain(name)) if stmt.recursive else {name}
    rows: list[tuple[str, str, Permission]] = []
    for (role, resource), granted in state.grants.items():
        if (roles is None or role in roles) and (targets is None or resource in targets):
            rows.extend((role, resource, p) for p in granted if p in wanted)
    rows.sort(key=lambda r: (r[0], resources.sort_key(r[1]), resources.ALL_PERMISSIONS.index(r[2])))
    return Listing(
        PERMISSION_COLUMNS,
        tuple((role, role, resources.display(res), p.value) for role, res, p in rows),
    )
