"""Permissions and the resources they are granted on.

A resource is kept as Cassandra's internal name (`data`, `data/ks`, `data/ks/t`, `roles`,
`roles/r`, `functions`, `functions/ks`, `functions/ks/f[int^text]`): a plain string orders,
hashes and replicates trivially, and its parent is a prefix of it, which is what the
permission check walks (table -> keyspace -> all keyspaces).
"""

from __future__ import annotations

from enum import StrEnum

from tabletdb.cql import ast_auth as ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.identifiers import quote_identifier


class Permission(StrEnum):
    """In Cassandra's declaration order, which LIST PERMISSIONS and DESCRIBE follow."""

    CREATE = "CREATE"
    ALTER = "ALTER"
    DROP = "DROP"
    SELECT = "SELECT"
    MODIFY = "MODIFY"
    AUTHORIZE = "AUTHORIZE"
    DESCRIBE = "DESCRIBE"
    EXECUTE = "EXECUTE"


ALL_PERMISSIONS = tuple(Permission)
_ORDER = {p: i for i, p in enumerate(ALL_PERMISSIONS)}

DATA_ROOT = "data"
ROLES_ROOT = "roles"
FUNCTIONS_ROOT = "functions"
ROOTS = (DATA_ROOT, ROLES_ROOT, FUNCTIONS_ROOT)

P = Permission
_KEYSPACE_LEVEL = frozenset({P.CREATE, P.ALTER, P.DROP, P.SELECT, P.MODIFY, P.AUTHORIZE})
_TABLE_LEVEL = frozenset({P.ALTER, P.DROP, P.SELECT, P.MODIFY, P.AUTHORIZE})
_ALL_ROLES_LEVEL = frozenset({P.CREATE, P.ALTER, P.DROP, P.AUTHORIZE, P.DESCRIBE})
_ROLE_LEVEL = frozenset({P.ALTER, P.DROP, P.AUTHORIZE})
_FUNCTIONS_LEVEL = frozenset({P.CREATE, P.ALTER, P.DROP, P.AUTHORIZE, P.EXECUTE})
_FUNCTION_LEVEL = frozenset({P.ALTER, P.DROP, P.AUTHORIZE, P.EXECUTE})


def sort_permissions(perms: frozenset[Permission] | set[Permission]) -> tuple[Permission, ...]:
    return tuple(sorted(perms, key=_ORDER.__getitem__))


def parse_permissions(names: tuple[str, ...]) -> frozenset[Permission]:
    try:
        return frozenset(Permission(n.upper()) for n in names)
    except ValueError as e:
        raise InvalidRequest(f"Unknown permission in {', '.join(names)}") from e


def means_all(names: tuple[str, ...]) -> bool:
    """The parser expands `ALL [PERMISSIONS]` to every name; a single permission is written alone."""
    return len(set(names)) == len(ALL_PERMISSIONS)


# ---------------------------------------------------------------------------- construction


def keyspace(ks: str) -> str:
    return f"{DATA_ROOT}/{ks}"


def table(ks: str, name: str) -> str:
    return f"{DATA_ROOT}/{ks}/{name}"


def role(name: str) -> str:
    return f"{ROLES_ROOT}/{name}"


def functions_in(ks: str) -> str:
    return f"{FUNCTIONS_ROOT}/{ks}"


def function(ks: str, name: str, argument_types: tuple[str, ...]) -> str:
    """`argument_types` as CQL type strings (what FunctionDef.signature holds)."""
    return f"{FUNCTIONS_ROOT}/{ks}/{name}[{'^'.join(argument_types)}]"


def from_ast(resource: ast.Resource, current_keyspace: str | None) -> str:
    """The resource name a statement refers to; unqualified tables and functions use the
    keyspace in USE."""

    def ks_of(explicit: str | None) -> str:
        chosen = explicit or current_keyspace
        if chosen is None:
            raise InvalidRequest(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"
            )
        return chosen

    if isinstance(resource, ast.AllKeyspaces):
        return DATA_ROOT
    if isinstance(resource, ast.KeyspaceResource):
        return keyspace(resource.keyspace)
    if isinstance(resource, ast.TableResource):
        return table(ks_of(resource.name.keyspace), resource.name.name)
    if isinstance(resource, ast.AllRoles):
        return ROLES_ROOT
    if isinstance(resource, ast.RoleResource):
        return role(resource.role)
    if isinstance(resource, ast.AllFunctions):
        return FUNCTIONS_ROOT if resource.keyspace is None else functions_in(resource.keyspace)
    return function(
        ks_of(resource.name.keyspace), resource.name.name, tuple(t.cql() for t in resource.argument_types)
    )


# ------------------------------------------------------------------------------- inspection


def _parts(name: str) -> list[str]:
    """Split into root, keyspace (or role) and leaf; everything after the keyspace is the leaf."""
    root, _, rest = name.partition("/")
    if root not in ROOTS:
        raise ValueError(f"unknown resource name {name!r}")
    if not rest:
        return [root]
    if root == ROLES_ROOT:  # a role name may hold any character, `/` included
        return [root, rest]
    ks, _, leaf = rest.partition("/")
    return [root, ks] if not leaf else [root, ks, leaf]


def parent(name: str) -> str | None:
    parts = _parts(name)
    return None if len(parts) == 1 else "/".join(parts[:-1])


def chain(name: str) -> list[str]:
    """The resource and its ancestors, most specific first (the permission check's walk)."""
    out = [name]
    while (up := parent(out[-1])) is not None:
        out.append(up)
    return out


def is_within(name: str, ancestor: str) -> bool:
    return name == ancestor or name.startswith(ancestor + "/")


def applicable(name: str) -> frozenset[Permission]:
    """Which permissions mean something on this resource (as Cassandra: no SELECT on a role)."""
    parts = _parts(name)
    if parts[0] == DATA_ROOT:
        return _TABLE_LEVEL if len(parts) == 3 else _KEYSPACE_LEVEL
    if parts[0] == ROLES_ROOT:
        return _ROLE_LEVEL if len(parts) == 2 else _ALL_ROLES_LEVEL
    return _FUNCTION_LEVEL if len(parts) == 3 else _FUNCTIONS_LEVEL


def split_name(name: str) -> list[str]:
    """Root, then keyspace (or role), then table or function leaf, as far as the name goes."""
    return _parts(name)


def signature(leaf: str) -> tuple[str, tuple[str, ...]]:
    """(function name, argument type strings) from a function resource's leaf `f[int^text]`."""
    fname, _, args = leaf.partition("[")
    inner = args[:-1]
    return fname, tuple(inner.split("^")) if inner else ()


def display(name: str) -> str:
    """`<table ks.t>` and friends, as LIST PERMISSIONS and error messages print resources."""
    parts = _parts(name)
    q = quote_identifier
    if parts[0] == DATA_ROOT:
        if len(parts) == 1:
            return "<all keyspaces>"
        if len(parts) == 2:
            return f"<keyspace {q(parts[1])}>"
        return f"<table {q(parts[1])}.{q(parts[2])}>"
    if parts[0] == ROLES_ROOT:
        return "<all roles>" if len(parts) == 1 else f"<role {q(parts[1])}>"
    if len(parts) == 1:
        return "<all functions>"
    if len(parts) == 2:
        return f"<all functions in {q(parts[1])}>"
    fname, args = signature(parts[2])
    return f"<function {q(parts[1])}.{q(fname)}({', '.join(args)})>"


def cql(name: str) -> str:
    """The resource as written in GRANT (`ALL KEYSPACES`, `KEYSPACE ks`, `ks.t`, ...)."""
    parts = _parts(name)
    q = quote_identifier
    if parts[0] == DATA_ROOT:
        if len(parts) == 1:
            return "ALL KEYSPACES"
        return f"KEYSPACE {q(parts[1])}" if len(parts) == 2 else f"{q(parts[1])}.{q(parts[2])}"
    if parts[0] == ROLES_ROOT:
        return "ALL ROLES" if len(parts) == 1 else f"ROLE {q(parts[1])}"
    if len(parts) == 1:
        return "ALL FUNCTIONS"
    if len(parts) == 2:
        return f"ALL FUNCTIONS IN KEYSPACE {q(parts[1])}"
    fname, args = signature(parts[2])
    return f"FUNCTION {q(parts[1])}.{q(fname)}({', '.join(args)})"


def sort_key(name: str) -> tuple[int, tuple[str, ...]]:
    """Roots in Cassandra's order (data, roles, functions), then by path."""
    parts = _parts(name)
    return ROOTS.index(parts[0]), tuple(parts[1:])
