"""Grammar callbacks for roles, permissions, service levels and DESCRIBE (see parse_terms)."""

from __future__ import annotations

from typing import Any

from lark import Token

from tabletdb.cql import ast
from tabletdb.cql import types as t
from tabletdb.cql.grammar.errors import fail
from tabletdb.cql.grammar.schema import SchemaCallbacks
from tabletdb.cql.grammar.terms import present, unquote_string

_ROLE_OPTION_FIELDS = ("password", "hashed_password", "login", "superuser", "options")


def build_role_options(items: tuple[tuple[str, Any], ...]) -> ast.RoleOptions:
    found: dict[str, Any] = {}
    for name, value in items:
        if name in found:
            fail(f"Multiple definition for property {name.upper()}")
        found[name] = value
    if "password" in found and "hashed_password" in found:
        fail("Cannot specify both PASSWORD and HASHED PASSWORD")
    return ast.RoleOptions(**{name: found.get(name) for name in _ROLE_OPTION_FIELDS})


class AuthCallbacks(SchemaCallbacks):
    # ----------------------------------------------------------------------------- roles

    def password_option(self, token: Token) -> tuple[str, Any]:
        return ("password", unquote_string(token))

    def hashed_password_option(self, token: Token) -> tuple[str, Any]:
        return ("hashed_password", unquote_string(token))

    def boolean(self, token: Token) -> bool:
        return token.lower() == "true"

    def login_option(self, value: bool) -> tuple[str, Any]:
        return ("login", value)

    def superuser_option(self, value: bool) -> tuple[str, Any]:
        return ("superuser", value)

    def options_option(self, value: ast.MapLiteral) -> tuple[str, Any]:
        return ("options", value)

    def create_role(self, if_not_exists: bool | None, name: str, *options: Any) -> ast.CreateRole:
        return ast.CreateRole(name, build_role_options(present(options)), bool(if_not_exists))

    def alter_role(self, name: str, *options: tuple[str, Any]) -> ast.AlterRole:
        return ast.AlterRole(name, build_role_options(options))

    def drop_role(self, if_exists: bool | None, name: str) -> ast.DropRole:
        return ast.DropRole(name, bool(if_exists))

    def user_password(self, token: Token) -> tuple[str, str]:
        return ("password", unquote_string(token))

    def user_hashed_password(self, token: Token) -> tuple[str, str]:
        return ("hashed_password", unquote_string(token))

    def user_superuser(self, token: Token) -> bool:
        return token.upper() == "SUPERUSER"

    def create_user(
        self,
        if_not_exists: bool | None,
        name: str,
        password: tuple[str, str] | None,
        superuser: bool | None,
    ) -> ast.CreateUser:
        plain, hashed = _split_password(password)
        return ast.CreateUser(name, plain, hashed, superuser, bool(if_not_exists))

    def alter_user(
        self, name: str, password: tuple[str, str] | None, superuser: bool | None
    ) -> ast.AlterUser:
        plain, hashed = _split_password(password)
        return ast.AlterUser(name, plain, hashed, superuser)

    def drop_user(self, if_exists: bool | None, name: str) -> ast.DropUser:
        return ast.DropUser(name, bool(if_exists))

    def grant_role(self, role: str, grantee: str) -> ast.GrantRole:
        return ast.GrantRole(role, grantee)

    def revoke_role(self, role: str, revokee: str) -> ast.RevokeRole:
        return ast.RevokeRole(role, revokee)

    def norecursive(self) -> bool:
        return True

    def list_roles(self, of: str | None, norecursive: bool | None) -> ast.ListRoles:
        return ast.ListRoles(of, not norecursive)

    def list_users(self) -> ast.ListUsers:
        return ast.ListUsers()

    # ----------------------------------------------------------------------- permissions

    def all_permissions(self) -> tuple[str, ...]:
        return ast.PERMISSION_NAMES

    def permission(self, token: Token) -> str:
        return token.upper()

    def one_permission(self, permission: str) -> tuple[str, ...]:
        return (permission,)

    def all_keyspaces(self) -> ast.Resource:
        return ast.AllKeyspaces()

    def keyspace_resource(self, keyspace: str) -> ast.Resource:
        return ast.KeyspaceResource(keyspace)

    def table_resource(self, name: ast.QualifiedName) -> ast.Resource:
        return ast.TableResource(name)

    def all_roles(self) -> ast.Resource:
        return ast.AllRoles()

    def role_resource(self, role: str) -> ast.Resource:
        return ast.RoleResource(role)

    def all_functions(self, keyspace: str | None) -> ast.Resource:
        return ast.AllFunctions(keyspace)

    def function_resource(self, name: ast.QualifiedName, signature: tuple[t.CqlType, ...]) -> ast.Resource:
        return ast.FunctionResource(name, signature)

    def grant_permissions(
        self, permissions: tuple[str, ...], resource: ast.Resource, grantee: str
    ) -> ast.GrantPermissions:
        return ast.GrantPermissions(permissions, resource, grantee)

    def revoke_permissions(
        self, permissions: tuple[str, ...], resource: ast.Resource, revokee: str
    ) -> ast.RevokePermissions:
        return ast.RevokePermissions(permissions, resource, revokee)

    def list_permissions(
        self,
        permissions: tuple[str, ...],
        resource: ast.Resource | None,
        of: str | None,
        norecursive: bool | None,
    ) -> ast.ListPermissions:
        return ast.ListPermissions(permissions, resource, of, not norecursive)

    # -------------------------------------------------------------------- service levels

    def create_service_level(
        self, if_not_exists: bool | None, name: str, options: ast.Properties | None
    ) -> ast.CreateServiceLevel:
        return ast.CreateServiceLevel(name, options or ast.Properties(), bool(if_not_exists))

    def alter_service_level(self, name: str, options: ast.Properties) -> ast.AlterServiceLevel:
        return ast.AlterServiceLevel(name, options)

    def drop_service_level(self, if_exists: bool | None, name: str) -> ast.DropServiceLevel:
        return ast.DropServiceLevel(name, bool(if_exists))

    def attach_service_level(self, level: str, role: str) -> ast.AttachServiceLevel:
        return ast.AttachServiceLevel(level, role)

    def detach_service_level(self, role: str) -> ast.DetachServiceLevel:
        return ast.DetachServiceLevel(role)

    def list_one_service_level(self, name: str) -> ast.ListServiceLevels:
        return ast.ListServiceLevels(name)

    def list_all_service_levels(self) -> ast.ListServiceLevels:
        return ast.ListServiceLevels(None)

    def list_attached_of(self, role: str) -> ast.ListAttachedServiceLevel:
        return ast.ListAttachedServiceLevel(role)

    def list_all_attached(self) -> ast.ListAttachedServiceLevel:
        return ast.ListAttachedServiceLevel(None)

    def list_effective_service_level(self, role: str) -> ast.ListEffectiveServiceLevel:
        return ast.ListEffectiveServiceLevel(role)

    # -------------------------------------------------------------------------- DESCRIBE

    def describe_schema(self, full: Token | None) -> ast.Describe:
        return ast.Describe("FULL SCHEMA" if full is not None else "SCHEMA")

    def describe_keyspaces(self) -> ast.Describe:
        return ast.Describe("KEYSPACES")

    def describe_keyspace(self, only: Token | None, keyspace: str | None) -> ast.Describe:
        name = None if keyspace is None else ast.QualifiedName(None, keyspace)
        return ast.Describe("KEYSPACE", name, only=only is not None)

    def describe_tables(self) -> ast.Describe:
        return ast.Describe("TABLES")

    def describe_table(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("TABLE", name)

    def describe_types(self) -> ast.Describe:
        return ast.Describe("TYPES")

    def describe_type(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("TYPE", name)

    def describe_functions(self) -> ast.Describe:
        return ast.Describe("FUNCTIONS")

    def describe_function(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("FUNCTION", name)

    def describe_aggregates(self) -> ast.Describe:
        return ast.Describe("AGGREGATES")

    def describe_aggregate(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("AGGREGATE", name)

    def describe_index(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("INDEX", name)

    def describe_view(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("MATERIALIZED VIEW", name)

    def describe_cluster(self) -> ast.Describe:
        return ast.Describe("CLUSTER")

    def describe_name(self, name: ast.QualifiedName) -> ast.Describe:
        return ast.Describe("NAME", name)

    def with_internals(self) -> tuple[bool, bool]:
        return (True, False)

    def with_internals_and_passwords(self) -> tuple[bool, bool]:
        return (True, True)

    def describe_stmt(self, target: ast.Describe, flags: tuple[bool, bool] | None) -> ast.Describe:
        if flags is None:
            return target
        return ast.Describe(target.kind, target.name, flags[0], flags[1], target.only)


def _split_password(password: tuple[str, str] | None) -> tuple[str | None, str | None]:
    if password is None:
        return None, None
    kind, value = password
    return (value, None) if kind == "password" else (None, value)
