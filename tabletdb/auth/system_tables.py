"""system.roles, system.role_members, system.role_permissions and system.role_attributes
(and the same first three in the legacy `system_auth` keyspace).

Like every metadata table (DESIGN.md decision 2) these store nothing: rows are rendered from
the replicated auth and service-level state. The layout is ScyllaDB's (auth kept in the
`system` keyspace, managed by group0). Set values are sorted tuples and an empty set is null,
as in the rest of our system tables.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tabletdb.auth.model import AuthState
from tabletdb.cql.types import BOOLEAN, TEXT, CqlType, SetType
from tabletdb.qos.model import QosState
from tabletdb.schema.model import ClusteringOrder, ColumnDef, ColumnKind, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema_defs import legacy_table_id

SYSTEM = "system"
SERVICE_LEVEL_ATTRIBUTE = "service_level"
Row = dict[str, Any]


def _define(name: str, pk: str, ck: str | None, columns: dict[str, CqlType], comment: str) -> TableDef:
    cols = [ColumnDef(pk, columns[pk], ColumnKind.PARTITION_KEY, 0)]
    if ck is not None:
        cols.append(ColumnDef(ck, columns[ck], ColumnKind.CLUSTERING, 0, ClusteringOrder.ASC))
    cols += [ColumnDef(n, t, ColumnKind.REGULAR) for n, t in columns.items() if n not in (pk, ck)]
    return TableDef(
        SYSTEM, name, legacy_table_id(SYSTEM, name), order_columns(cols), TableOptions(comment=comment)
    )


ROLES = _define(
    "roles",
    "role",
    None,
    {
        "role": TEXT,
        "can_login": BOOLEAN,
        "is_superuser": BOOLEAN,
        "member_of": SetType(TEXT),
        "salted_hash": TEXT,
    },
    "roles for authentication and RBAC",
)
ROLE_MEMBERS = _define(
    "role_members",
    "role",
    "member",
    {"role": TEXT, "member": TEXT},
    "joins users and their granted roles in RBAC",
)
ROLE_PERMISSIONS = _define(
    "role_permissions",
    "role",
    "resource",
    {"role": TEXT, "resource": TEXT, "permissions": SetType(TEXT)},
    "permissions granted to db roles",
)
ROLE_ATTRIBUTES = _define(
    "role_attributes",
    "role",
    "attribute_name",
    {"role": TEXT, "attribute_name": TEXT, "attribute_value": TEXT},
    "role attributes (the attached service level) in RBAC",
)
AUTH_TABLES = (ROLES, ROLE_MEMBERS, ROLE_PERMISSIONS, ROLE_ATTRIBUTES)

LEGACY_KEYSPACE = "system_auth"
LEGACY_TABLES = tuple(
    replace(t, keyspace=LEGACY_KEYSPACE, id=legacy_table_id(LEGACY_KEYSPACE, t.name))
    for t in (ROLES, ROLE_MEMBERS, ROLE_PERMISSIONS)
)
"""`system_auth.roles`, `role_members` and `role_permissions`: the layout auth had before it
moved into `system` (Cassandra's, and ScyllaDB's before auth v2), which tools written against
it still read. Read-only and rendered from the same state as the `system` tables, so the two
always agree; writes go through CREATE/ALTER/GRANT as everywhere else."""


def roles_rows(state: AuthState) -> list[Row]:
    return [
        {
            "role": r.name,
            "can_login": r.can_login,
            "is_superuser": r.is_superuser,
            "member_of": r.member_of or None,
            "salted_hash": r.salted_hash,
        }
        for r in sorted(state.roles.values(), key=lambda r: r.name)
    ]


def role_members_rows(state: AuthState) -> list[Row]:
    """One row per (granted role, member): `role` is the granted role, as in Cassandra."""
    pairs = sorted((granted, r.name) for r in state.roles.values() for granted in r.member_of)
    return [{"role": granted, "member": member} for granted, member in pairs]


def role_permissions_rows(state: AuthState) -> list[Row]:
    return [
        {"role": role, "resource": resource, "permissions": tuple(sorted(p.value for p in perms))}
        for (role, resource), perms in sorted(state.grants.items())
    ]


def role_attributes_rows(qos: QosState) -> list[Row]:
    return [
        {"role": role, "attribute_name": SERVICE_LEVEL_ATTRIBUTE, "attribute_value": level}
        for role, level in qos.attachments
    ]


def render(table: str, state: AuthState, qos: QosState) -> list[Row] | None:
    """Rows of the named auth table, or None if `table` is not one of ours."""
    if table == "roles":
        return roles_rows(state)
    if table == "role_members":
        return role_members_rows(state)
    if table == "role_permissions":
        return role_permissions_rows(state)
    if table == "role_attributes":
        return role_attributes_rows(qos)
    return None
