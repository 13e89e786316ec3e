"""Roles, password hashes, permissions and DESCRIBE of auth (layer 1, pure).

Modelled on tabletdb.schema: `AuthState` is an immutable value in the group0 state; decision
functions (roles, permissions, service_levels) validate a statement against it and return
`AuthMutation`s (or qos mutations) for group0 to replicate; `apply_auth_mutations` applies them
on every node. Nothing here does I/O; password hashing is CPU-heavy and meant to run off the
event loop.

Entry points:
- roles: create_role/alter_role/drop_role, create_user/alter_user/drop_user, grant_role/revoke_role,
  default_superuser; listing: list_roles, list_users
- permissions: grant_permissions/revoke_permissions/list_permissions; authorization:
  check_permission, authorize, creator_grants, keyspace_creator_grants,
  keyspace_dropped/table_dropped/function_dropped
- login: authenticate (PasswordAuthenticator), passwords: hash_password/verify_password
- service_levels: decide_service_level, list_service_levels, effective_timeout_ms
- statement_access: required_permissions (data/schema statements -> (permission, resource))
- describe: describe_auth; system_tables: AUTH_TABLES, render; serialize: to_plain/from_plain
"""

from tabletdb.auth.authorization import (
    authorize,
    check_permission,
    creator_grants,
    function_dropped,
    has_permission,
    keyspace_creator_grants,
    keyspace_dropped,
    table_dropped,
)
from tabletdb.auth.describe import check_may_describe_passwords, describe_auth
from tabletdb.auth.listing import list_roles, list_users
from tabletdb.auth.login import BAD_CREDENTIALS, authenticate
from tabletdb.auth.model import (
    ALLOW_ALL_AUTHENTICATOR,
    ALLOW_ALL_AUTHORIZER,
    CASSANDRA_AUTHORIZER,
    PASSWORD_AUTHENTICATOR,
    AuthConfig,
    AuthState,
    Role,
)
from tabletdb.auth.mutations import AuthMutation, apply_auth_mutations
from tabletdb.auth.passwords import hash_password, verify_password
from tabletdb.auth.permissions import grant_permissions, list_permissions, revoke_permissions
from tabletdb.auth.resources import Permission
from tabletdb.auth.roles import (
    alter_role,
    alter_user,
    create_role,
    create_user,
    default_superuser,
    drop_role,
    drop_user,
    grant_role,
    revoke_role,
)
from tabletdb.auth.service_levels import decide_service_level, effective_timeout_ms, list_service_levels

__all__ = [
    "ALLOW_ALL_AUTHENTICATOR",
    "ALLOW_ALL_AUTHORIZER",
    "BAD_CREDENTIALS",
    "CASSANDRA_AUTHORIZER",
    "PASSWORD_AUTHENTICATOR",
    "AuthConfig",
    "AuthMutation",
    "AuthState",
    "Permission",
    "Role",
    "alter_role",
    "alter_user",
    "apply_auth_mutations",
    "authenticate",
    "authorize",
    "check_may_describe_passwords",
    "check_permission",
    "create_role",
    "create_user",
    "creator_grants",
    "decide_service_level",
    "default_superuser",
    "describe_auth",
    "drop_role",
    "drop_user",
    "effective_timeout_ms",
    "function_dropped",
    "grant_permissions",
    "grant_role",
    "has_permission",
    "hash_password",
    "keyspace_creator_grants",
    "keyspace_dropped",
    "list_permissions",
    "list_roles",
    "list_service_levels",
    "list_users",
    "revoke_permissions",
    "revoke_role",
    "table_dropped",
    "verify_password",
]
