"""Role statements: validate like Cassandra/ScyllaDB, return the mutations to replicate.

`user` is the session's logged-in role, None for an anonymous session (AllowAllAuthenticator),
which may do anything. Passwords are hashed here, once, by the deciding node; the hash (not the
password) is what gets replicated.
"""

from __future__ import annotations

from dataclasses import replace

from tabletdb.auth import resources
from tabletdb.auth.authorization import authorize, creator_grants, is_super, require_superuser
from tabletdb.auth.model import (
    DEFAULT_SUPERUSER,
    DEFAULT_SUPERUSER_PASSWORD,
    AuthConfig,
    AuthState,
    Role,
)
from tabletdb.auth.mutations import AddMembership, AuthMutation, PutRole, RemoveMembership, RemoveRole
from tabletdb.auth.passwords import hash_password
from tabletdb.auth.resources import Permission
from tabletdb.cql import ast_auth as ast
from tabletdb.cql.errors import InvalidRequest, Unauthorized

Mutations = tuple[AuthMutation, ...]


def default_superuser(state: AuthState, salt: str | None = None) -> Mutations:
    """Create cassandra/cassandra once per cluster: only while no role exists at all, so a
    dropped or renamed default superuser is never resurrected."""
    if len(state.roles):
        return ()
    hashed = hash_password(DEFAULT_SUPERUSER_PASSWORD, salt)
    return (PutRole(Role(DEFAULT_SUPERUSER, can_login=True, is_superuser=True, salted_hash=hashed)),)


def require_role(state: AuthState, name: str) -> Role:
    found = state.role(name)
    if found is None:
        raise InvalidRequest(f"{name} doesn't exist")
    return found


def _check_name(name: str) -> None:
    if not name:
        raise InvalidRequest("Role name can't be an empty string")


def _password_hash(
    options: ast.RoleOptions, state: AuthState, config: AuthConfig, user: str | None, salt: str | None
) -> str | None:
    """The hash to store, or None when the statement sets no password."""
    if options.options is not None:
        raise InvalidRequest("Custom OPTIONS are not supported by the role manager")
    if options.password is None and options.hashed_password is None:
        return None
    if options.password is not None and options.hashed_password is not None:
        raise InvalidRequest("PASSWORD and HASHED PASSWORD cannot be used together")
    if not config.uses_passwords:
        written = "PASSWORD" if options.password is not None else "HASHED PASSWORD"
        raise InvalidRequest(f"{config.authenticator} does not support the {written} option")
    if options.hashed_password is not None:
        require_superuser(state, user, "Only superusers can set a HASHED PASSWORD")
        return options.hashed_password
    assert options.password is not None
    if not options.password:
        raise InvalidRequest("Password must not be empty")
    return hash_password(options.password, salt)


def create_role(
    state: AuthState, stmt: ast.CreateRole, user: str | None, config: AuthConfig, salt: str | None = None
) -> Mutations:
    _check_name(stmt.name)
    if state.role(stmt.name) is not None:
        if stmt.if_not_exists:
            return ()
        raise InvalidRequest(f"{stmt.name} already exists")
    authorize(state, config, user, Permission.CREATE, resources.ROLES_ROOT)
    opts = stmt.options
    if opts.superuser and not is_super(state, user):
        raise Unauthorized("Only superusers can create a role with superuser status")
    hashed = _password_hash(opts, state, config, user, salt)
    role = Role(stmt.name, bool(opts.login), bool(opts.superuser), hashed)
    return (PutRole(role), *creator_grants(state, config, user, resources.role(stmt.name)))


def create_user(
    state: AuthState, stmt: ast.CreateUser, user: str | None, config: AuthConfig, salt: str | None = None
) -> Mutations:
    """Legacy CREATE USER: a role that can log in."""
    options = ast.RoleOptions(stmt.password, stmt.hashed_password, True, stmt.superuser)
    return create_role(state, ast.CreateRole(stmt.name, options, stmt.if_not_exists), user, config, salt)


def _authorize_alter(
    state: AuthState, target: Role, opts: ast.RoleOptions, user: str | None, config: AuthConfig
) -> None:
    if opts.superuser is not None:
        if user == target.name:
            raise Unauthorized("You aren't allowed to alter your own superuser status")
        require_superuser(state, user, "Only superusers are allowed to alter superuser status")
    if is_super(state, user):
        return
    if target.is_superuser:
        raise Unauthorized("Only superusers are allowed to alter a superuser role")
    if user == target.name:
        if opts.login is not None:
            raise Unauthorized("You aren't allowed to alter your own LOGIN status")
        return  # changing one's own password needs no permission
    authorize(state, config, user, Permission.ALTER, resources.role(target.name))


def alter_role(
    state: AuthState, stmt: ast.AlterRole, user: str | None, config: AuthConfig, salt: str | None = None
) -> Mutations:
    target = require_role(state, stmt.name)
    opts = stmt.options
    _authorize_alter(state, target, opts, user, config)
    hashed = _password_hash(opts, state, config, user, salt)
    updated = replace(
        target,
        can_login=target.can_login if opts.login is None else opts.login,
        is_superuser=target.is_superuser if opts.superuser is None else opts.superuser,
        salted_hash=target.salted_hash if hashed is None else hashed,
    )
    return () if updated == target else (PutRole(updated),)


def alter_user(
    state: AuthState, stmt: ast.AlterUser, user: str | None, config: AuthConfig, salt: str | None = None
) -> Mutations:
    options = ast.RoleOptions(stmt.password, stmt.hashed_password, None, stmt.superuser)
    return alter_role(state, ast.AlterRole(stmt.name, options), user, config, salt)


def drop_role(state: AuthState, stmt: ast.DropRole, user: str | None, config: AuthConfig) -> Mutations:
    """Also drops the role's memberships and grants; append qos.forget_role's mutations too."""
    target = state.role(stmt.name)
    if target is None:
        if stmt.if_exists:
            return ()
        raise InvalidRequest(f"{stmt.name} doesn't exist")
    if user == stmt.name:
        raise InvalidRequest("Cannot DROP primary role for current login")
    if target.is_superuser and not is_super(state, user):
        raise Unauthorized("Only superusers can drop a role with superuser status")
    authorize(state, config, user, Permission.DROP, resources.role(stmt.name))
    return (RemoveRole(stmt.name),)


def drop_user(state: AuthState, stmt: ast.DropUser, user: str | None, config: AuthConfig) -> Mutations:
    return drop_role(state, ast.DropRole(stmt.name, stmt.if_exists), user, config)


def grant_role(state: AuthState, stmt: ast.GrantRole, user: str | None, config: AuthConfig) -> Mutations:
    require_role(state, stmt.role)
    grantee = require_role(state, stmt.grantee)
    authorize(state, config, user, Permission.AUTHORIZE, resources.role(stmt.role))
    if stmt.role in grantee.member_of:
        raise InvalidRequest(f"{stmt.grantee} already includes role {stmt.role}.")
    if stmt.grantee in state.closure(stmt.role):
        # Granting would close a cycle: the granted role already inherits the grantee.
        raise InvalidRequest(f"{stmt.grantee} is a member of {stmt.role}")
    return (AddMembership(stmt.role, stmt.grantee),)


def revoke_role(state: AuthState, stmt: ast.RevokeRole, user: str | None, config: AuthConfig) -> Mutations:
    require_role(state, stmt.role)
    revokee = require_role(state, stmt.revokee)
    authorize(state, config, user, Permission.AUTHORIZE, resources.role(stmt.role))
    if stmt.role not in revokee.member_of:
        raise InvalidRequest(f"{stmt.revokee} was not granted role {stmt.role}, so it cannot be revoked.")
    return (RemoveMembership(stmt.role, stmt.revokee),)
