"""Role, permission, service-level and DESCRIBE statements (import them from `tabletdb.cql.ast`).

Role and service-level names follow CQL's rule for them: an unquoted name is lower-cased, a
double-quoted name or a single-quoted string literal keeps its case.
"""

from __future__ import annotations

from dataclasses import dataclass

from tabletdb.cql.ast_statements import Statement
from tabletdb.cql.ast_terms import NO_PROPERTIES, MapLiteral, Properties, QualifiedName
from tabletdb.cql.types import CqlType

# ------------------------------------------------------------------------------------- roles


@dataclass(frozen=True)
class RoleOptions:
    """`WITH PASSWORD = '...' AND LOGIN = true ...`; None for options not written."""

    password: str | None = None
    hashed_password: str | None = None
    login: bool | None = None
    superuser: bool | None = None
    options: MapLiteral | None = None


NO_ROLE_OPTIONS = RoleOptions()


@dataclass(frozen=True)
class CreateRole(Statement):
    name: str
    options: RoleOptions = NO_ROLE_OPTIONS
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterRole(Statement):
    name: str
    options: RoleOptions


@dataclass(frozen=True)
class DropRole(Statement):
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class CreateUser(Statement):
    """Legacy `CREATE USER`: a role with LOGIN = true."""

    name: str
    password: str | None = None
    hashed_password: str | None = None
    superuser: bool | None = None
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterUser(Statement):
    name: str
    password: str | None = None
    hashed_password: str | None = None
    superuser: bool | None = None


@dataclass(frozen=True)
class DropUser(Statement):
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class GrantRole(Statement):
    """`GRANT role TO grantee`."""

    role: str
    grantee: str


@dataclass(frozen=True)
class RevokeRole(Statement):
    """`REVOKE role FROM revokee`."""

    role: str
    revokee: str


@dataclass(frozen=True)
class ListRoles(Statement):
    of: str | None = None
    recursive: bool = True


@dataclass(frozen=True)
class ListUsers(Statement):
    pass


# ------------------------------------------------------------------------------- permissions

PERMISSION_NAMES = (
    "CREATE",
    "ALTER",
    "DROP",
    "SELECT",
    "MODIFY",
    "AUTHORIZE",
    "DESCRIBE",
    "EXECUTE",
)


@dataclass(frozen=True)
class AllKeyspaces:
    pass


@dataclass(frozen=True)
class KeyspaceResource:
    keyspace: str


@dataclass(frozen=True)
class TableResource:
    """keyspace None: the keyspace in USE."""

    name: QualifiedName


@dataclass(frozen=True)
class AllRoles:
    pass


@dataclass(frozen=True)
class RoleResource:
    role: str


@dataclass(frozen=True)
class AllFunctions:
    """`ALL FUNCTIONS` (keyspace None) or `ALL FUNCTIONS IN KEYSPACE ks`."""

    keyspace: str | None = None


@dataclass(frozen=True)
class FunctionResource:
    name: QualifiedName
    argument_types: tuple[CqlType, ...]


Resource = (
    AllKeyspaces
    | KeyspaceResource
    | TableResource
    | AllRoles
    | RoleResource
    | AllFunctions
    | FunctionResource
)


@dataclass(frozen=True)
class GrantPermissions(Statement):
    """`permissions` upper-case names from PERMISSION_NAMES; `ALL [PERMISSIONS]` expands to all."""

    permissions: tuple[str, ...]
    resource: Resource
    grantee: str


@dataclass(frozen=True)
class RevokePermissions(Statement):
    permissions: tuple[str, ...]
    resource: Resource
    revokee: str


@dataclass(frozen=True)
class ListPermissions(Statement):
    permissions: tuple[str, ...]
    resource: Resource | None = None
    of: str | None = None
    recursive: bool = True


# ---------------------------------------------------------------------------- service levels


@dataclass(frozen=True)
class CreateServiceLevel(Statement):
    """`options` holds timeout (duration literal or Null), workload_type, shares as written."""

    name: str
    options: Properties = NO_PROPERTIES
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterServiceLevel(Statement):
    name: str
    options: Properties


@dataclass(frozen=True)
class DropServiceLevel(Statement):
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class AttachServiceLevel(Statement):
    level: str
    role: str


@dataclass(frozen=True)
class DetachServiceLevel(Statement):
    role: str


@dataclass(frozen=True)
class ListServiceLevels(Statement):
    """`LIST SERVICE LEVEL x` (name set) or `LIST ALL SERVICE LEVELS` (name None)."""

    name: str | None = None


@dataclass(frozen=True)
class ListAttachedServiceLevel(Statement):
    """`LIST ATTACHED SERVICE LEVEL OF r` or `LIST ALL ATTACHED SERVICE LEVELS` (role None)."""

    role: str | None = None


@dataclass(frozen=True)
class ListEffectiveServiceLevel(Statement):
    role: str


# ---------------------------------------------------------------------------------- DESCRIBE

DESCRIBE_KINDS = frozenset(
    {
        "SCHEMA",
        "FULL SCHEMA",
        "KEYSPACES",
        "KEYSPACE",
        "TABLES",
        "TABLE",
        "TYPES",
        "TYPE",
        "FUNCTIONS",
        "FUNCTION",
        "AGGREGATES",
        "AGGREGATE",
        "INDEX",
        "MATERIALIZED VIEW",
        "CLUSTER",
        "NAME",
    }
)


@dataclass(frozen=True)
class Describe(Statement):
    """DESC[RIBE] in all forms.

    `kind` is one of DESCRIBE_KINDS ('NAME' is the generic `DESC name`; COLUMNFAMILY and
    COLUMNFAMILIES map to TABLE and TABLES). `name` is the target (None for listings, schema,
    cluster and a bare `DESC KEYSPACE`, which means the keyspace in USE); for KEYSPACE the
    keyspace is `name.name` (with `name.keyspace` None). `only` is `DESC ONLY KEYSPACE`.
    """

    kind: str
    name: QualifiedName | None = None
    with_internals: bool = False
    with_passwords: bool = False
    only: bool = False

    def __post_init__(self) -> None:
        if self.kind not in DESCRIBE_KINDS:
            raise ValueError(f"unknown DESCRIBE kind {self.kind!r}")


__all__ = [
    "DESCRIBE_KINDS",
    "PERMISSION_NAMES",
    "AllFunctions",
    "AllKeyspaces",
    "AllRoles",
    "AlterRole",
    "AlterServiceLevel",
    "AlterUser",
    "AttachServiceLevel",
    "CreateRole",
    "CreateServiceLevel",
    "CreateUser",
    "Describe",
    "DetachServiceLevel",
    "DropRole",
    "DropServiceLevel",
    "DropUser",
    "FunctionResource",
    "GrantPermissions",
    "GrantRole",
    "KeyspaceResource",
    "ListAttachedServiceLevel",
    "ListEffectiveServiceLevel",
    "ListPermissions",
    "ListRoles",
    "ListServiceLevels",
    "ListUsers",
    "Resource",
    "RevokePermissions",
    "RevokeRole",
    "RoleOptions",
    "RoleResource",
    "TableResource",
]
