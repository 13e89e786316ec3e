"""Building auth states for tests by running the real decision functions and applying them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from tabletdb.auth.model import AuthConfig, AuthState
from tabletdb.auth.mutations import AuthMutation, apply_auth_mutations
from tabletdb.cql.parser import parse
from tabletdb.cql.types import INT
from tabletdb.schema.model import (
    NTS,
    Catalog,
    ColumnDef,
    ColumnKind,
    FunctionDef,
    KeyspaceDef,
    Replication,
    TableDef,
)
from tabletdb.schema.mutations import PutFunction, PutKeyspace, PutTable, apply_mutations

ENFORCING = AuthConfig("PasswordAuthenticator", "CassandraAuthorizer")
OPEN = AuthConfig()
SALT = "fixedsalt"


def stmt(text: str) -> Any:
    [parsed] = parse(text)
    return parsed


def run(
    state: AuthState, decide: Callable[..., tuple[AuthMutation, ...]], *args: Any, **kwargs: Any
) -> AuthState:
    return apply_auth_mutations(state, decide(state, *args, **kwargs))


def catalog() -> Catalog:
    """Keyspace ks with table t and function f(int)."""
    ks = KeyspaceDef("ks", Replication(NTS, (("dc1", "1"),)))
    table = TableDef(
        "ks",
        "t",
        uuid.UUID(int=1),
        (ColumnDef("pk", INT, ColumnKind.PARTITION_KEY, 0), ColumnDef("v", INT, ColumnKind.REGULAR)),
    )
    fn = FunctionDef("ks", "f", ("x",), (INT,), INT, "lua", "return x", True)
    return apply_mutations(Catalog(), [PutKeyspace(ks), PutTable(table), PutFunction(fn)], uuid.UUID(int=2))


def roles_state(*statements: str, user: str | None = None, config: AuthConfig = ENFORCING) -> AuthState:
    """A state with the default superuser plus whatever role statements say (run as `user`)."""
    from tabletdb.auth import roles

    state = run(AuthState(), roles.default_superuser, SALT)
    deciders: dict[str, Callable[..., tuple[AuthMutation, ...]]] = {
        "CreateRole": roles.create_role,
        "CreateUser": roles.create_user,
        "AlterRole": roles.alter_role,
        "DropRole": roles.drop_role,
        "GrantRole": roles.grant_role,
        "RevokeRole": roles.revoke_role,
    }
    for text in statements:
        parsed = stmt(text)
        decide = deciders[type(parsed).__name__]
        if type(parsed).__name__ in ("CreateRole", "CreateUser", "AlterRole"):
            state = run(state, decide, parsed, user, config, SALT)
        else:
            state = run(state, decide, parsed, user, config)
    return state
