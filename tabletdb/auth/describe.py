"""DESCRIBE rows for roles, role grants, permission grants and service levels (WITH INTERNALS).

These rows are the auth half of a backup (spec/describe.md): run in order on an empty cluster
they recreate every role (with its hash, when asked for passwords), membership, grant and
service level. What the node's configuration does not use is not printed: no hashes under
AllowAllAuthenticator, no permission grants under AllowAllAuthorizer.
"""

from __future__ import annotations

from tabletdb.auth import resources
from tabletdb.auth.authorization import require_superuser
from tabletdb.auth.model import DEFAULT_SUPERUSER, AuthConfig, AuthState, Role
from tabletdb.cql.identifiers import quote_identifier as q
from tabletdb.cql.identifiers import quote_string
from tabletdb.qos.describe import describe_levels
from tabletdb.qos.model import QosState
from tabletdb.schema.describe import DescribeRow


def check_may_describe_passwords(state: AuthState, user: str | None) -> None:
    """`... WITH INTERNALS AND PASSWORDS` is for superusers only."""
    require_superuser(
        state, user, "DESCRIBE SCHEMA WITH INTERNALS AND PASSWORDS can only be issued by a superuser"
    )


def role_statement(role: Role, with_password: bool) -> str:
    options = []
    if with_password and role.salted_hash is not None:
        options.append(f"HASHED PASSWORD = {quote_string(role.salted_hash)}")
    options.append(f"LOGIN = {str(role.can_login).lower()}")
    options.append(f"SUPERUSER = {str(role.is_superuser).lower()}")
    head = "CREATE ROLE IF NOT EXISTS" if role.name == DEFAULT_SUPERUSER else "CREATE ROLE"
    return f"{head} {q(role.name)} WITH {' AND '.join(options)};"


def _role_rows(state: AuthState, with_passwords: bool) -> list[DescribeRow]:
    ordered = sorted(state.roles.values(), key=lambda r: r.name)
    return [DescribeRow(None, "role", q(r.name), role_statement(r, with_passwords)) for r in ordered]


def _membership_rows(state: AuthState) -> list[DescribeRow]:
    pairs = sorted((granted, r.name) for r in state.roles.values() for granted in r.member_of)
    return [DescribeRow(None, "grant_role", q(g), f"GRANT {q(g)} TO {q(grantee)};") for g, grantee in pairs]


def _permission_rows(state: AuthState) -> list[DescribeRow]:
    keys = sorted(state.grants, key=lambda k: (k[0], resources.sort_key(k[1])))
    return [
        DescribeRow(
            None, "grant_permission", q(role), f"GRANT {p.value} ON {resources.cql(res)} TO {q(role)};"
        )
        for role, res in keys
        for p in state.granted(role, res)
    ]


def describe_auth(
    state: AuthState, qos: QosState, with_passwords: bool, config: AuthConfig
) -> list[DescribeRow]:
    """Roles by name, role grants, permission grants (one per permission), the `driver`
    service level, other service levels by name, then attachments. `with_passwords` is the
    statement's AND PASSWORDS (check_may_describe_passwords first)."""
    rows = _role_rows(state, with_passwords and config.uses_passwords)
    rows += _membership_rows(state)
    if config.enforces_permissions:
        rows += _permission_rows(state)
    rows += [DescribeRow(None, kind, name, text) for kind, name, text in describe_levels(qos)]
    return rows
