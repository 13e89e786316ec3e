"""Roles, password hashes, permissions and DESCRIBE of auth (layer 1, pure).

Modelled on tabletdb.schema: `AuthState` is an immutable value in the group0 state; decision
functions (roles, permissions, service_levels) validate a statement against it and return
`AuthMutation`s (or qos mutations) for group0 to replicate; `apply_auth_mutations` applies them
on every node. Nothing here does I/O; password hashing is CPU-heavy and meant to run off the
event loop.

The package itself imports nothing (import from the module that owns a name): its modules import
one another, and a package that re-exported them would sit in every one of those import cycles.

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
