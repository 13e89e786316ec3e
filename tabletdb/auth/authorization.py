"""The permission check, and the grants that follow creating or dropping a resource.

A role holds a permission on a resource if it, or any role it inherits, was granted that
permission on the resource or on one of its parents (table -> keyspace -> all keyspaces,
role -> all roles, function -> keyspace functions -> all functions). Superusers hold every
permission. Everything here is a pure function of the AuthState.
"""

from __future__ import annotations

from tabletdb.auth import resources
from tabletdb.auth.model import AuthConfig, AuthState
from tabletdb.auth.mutations import AddPermissions, AuthMutation, RevokeAllOn
from tabletdb.auth.resources import Permission, sort_permissions
from tabletdb.cql.errors import Unauthorized

# Every session may read these (drivers load metadata from them right after login), except
# the auth tables, which hold password hashes.
READABLE_SYSTEM_KEYSPACES = frozenset({"system", "system_schema"})
PROTECTED_SYSTEM_TABLES = frozenset({"roles", "role_members", "role_permissions", "role_attributes"})


def _always_readable(permission: Permission, resource: str) -> bool:
    if permission is not Permission.SELECT:
        return False
    parts = resources.split_name(resource)
    return (
        len(parts) == 3
        and parts[0] == resources.DATA_ROOT
        and parts[1] in READABLE_SYSTEM_KEYSPACES
        and not (parts[1] == "system" and parts[2] in PROTECTED_SYSTEM_TABLES)
    )


def has_permission(state: AuthState, role: str, permission: Permission, resource: str) -> bool:
    if state.is_superuser(role) or _always_readable(permission, resource):
        return True
    chain = resources.chain(resource)
    return any(permission in state.granted(r, res) for r in state.closure(role) for res in chain)


def check_permission(state: AuthState, role: str, permission: Permission, resource: str) -> None:
    """Raise Unauthorized unless `role` holds `permission` on `resource` (see module doc)."""
    if not has_permission(state, role, permission, resource):
        raise Unauthorized(
            f"User {role} has no {permission.value} permission on {resources.display(resource)} "
            "or any of its parents"
        )


def authorize(
    state: AuthState, config: AuthConfig, user: str | None, permission: Permission, resource: str
) -> None:
    """check_permission as the node applies it: AllowAllAuthorizer and the anonymous user
    (AllowAllAuthenticator, `user` None) allow everything."""
    if config.enforces_permissions and user is not None:
        check_permission(state, user, permission, resource)


def is_super(state: AuthState, user: str | None) -> bool:
    """Anonymous sessions (authentication off) act with full rights."""
    return user is None or state.is_superuser(user)


def require_superuser(state: AuthState, user: str | None, message: str) -> None:
    if not is_super(state, user):
        raise Unauthorized(message)


def creator_grants(
    state: AuthState, config: AuthConfig, user: str | None, resource: str
) -> tuple[AuthMutation, ...]:
    """Mutations giving the creator every applicable permission on a resource it just created.

    Superusers (and anonymous sessions) get nothing: they need nothing, and a restore run as a
    superuser must leave no grants behind that the backup did not have."""
    if not config.enforces_permissions or is_super(state, user) or user is None or state.role(user) is None:
        return ()
    return (AddPermissions(user, resource, sort_permissions(resources.applicable(resource))),)


def keyspace_creator_grants(
    state: AuthState, config: AuthConfig, user: str | None, keyspace: str
) -> tuple[AuthMutation, ...]:
    """CREATE KEYSPACE gives its creator the keyspace and the functions in it (as Cassandra)."""
    return creator_grants(state, config, user, resources.keyspace(keyspace)) + creator_grants(
        state, config, user, resources.functions_in(keyspace)
    )


def keyspace_dropped(keyspace: str) -> tuple[AuthMutation, ...]:
    """Grants on the keyspace, its tables and its functions go with it."""
    return RevokeAllOn(resources.keyspace(keyspace)), RevokeAllOn(resources.functions_in(keyspace))


def table_dropped(keyspace: str, table: str) -> tuple[AuthMutation, ...]:
    return (RevokeAllOn(resources.table(keyspace, table)),)


def function_dropped(keyspace: str, name: str, argument_types: tuple[str, ...]) -> tuple[AuthMutation, ...]:
    """`argument_types` as CQL type strings (FunctionDef.signature's second half)."""
    return (RevokeAllOn(resources.function(keyspace, name, argument_types)),)
