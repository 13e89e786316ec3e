"""Role, permission and service-level statements, executed through group0.

Each statement becomes a decision over the group0 state: the auth/qos packages validate it and
return mutations, which the metadata store commits in one command (and re-decides if another
change won the race). LIST statements read this node's applied state and answer with rows.
Schema DDL also passes through here (`with_creator_grants`) so that creating a resource grants
its creator every permission on it and dropping one forgets its grants, in the same command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabletdb.auth import resources, roles
from tabletdb.auth.authorization import (
    creator_grants,
    function_dropped,
    keyspace_creator_grants,
    keyspace_dropped,
    table_dropped,
)
from tabletdb.auth.listing import list_roles, list_users
from tabletdb.auth.model import AuthConfig
from tabletdb.auth.mutations import AuthMutation
from tabletdb.auth.permissions import grant_permissions, list_permissions, revoke_permissions
from tabletdb.auth.service_levels import decide_service_level, list_service_levels
from tabletdb.cql import ast, codec
from tabletdb.cql.results import ColumnSpec, Result, RowsMetadata, RowsResult, VoidResult
from tabletdb.group0.auth_state import AuthOutcome
from tabletdb.group0.state import Group0State
from tabletdb.qos.ddl import forget_role
from tabletdb.qos.listing import Listing
from tabletdb.qos.mutations import QosMutation
from tabletdb.query.metadata_store import Decision, MetadataStore
from tabletdb.schema import mutations as sm
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.model import Catalog

ROLE_STATEMENTS = (
    ast.CreateRole,
    ast.AlterRole,
    ast.DropRole,
    ast.CreateUser,
    ast.AlterUser,
    ast.DropUser,
    ast.GrantRole,
    ast.RevokeRole,
    ast.GrantPermissions,
    ast.RevokePermissions,
)
LEVEL_STATEMENTS = (
    ast.CreateServiceLevel,
    ast.AlterServiceLevel,
    ast.DropServiceLevel,
    ast.AttachServiceLevel,
    ast.DetachServiceLevel,
)
LISTINGS = (
    ast.ListRoles,
    ast.ListUsers,
    ast.ListPermissions,
    ast.ListServiceLevels,
    ast.ListAttachedServiceLevel,
    ast.ListEffectiveServiceLevel,
)
AUTH_STATEMENTS = ROLE_STATEMENTS + LEVEL_STATEMENTS + LISTINGS

State = Callable[[], Group0State]


class AuthExecutor:
    def __init__(
        self, config: AuthConfig, state: State, store: MetadataStore, catalog: Callable[[], Catalog]
    ) -> None:
        """`catalog`: the schema with the system keyspaces, in which grants name resources."""
        self.config = config
        self._state = state
        self._store = store
        self._catalog = catalog

    async def execute(self, stmt: ast.Statement, user: str | None, keyspace: str | None) -> Result:
        if isinstance(stmt, LISTINGS):
            return rows_result(self.listing(stmt, user, keyspace))
        await self._store.change_schema(self._decision(stmt, user, keyspace))
        return VoidResult()

    def _decision(self, stmt: ast.Statement, user: str | None, keyspace: str | None) -> Decision:
        """Decide on the state current when the store runs the decision (after its barrier)."""

        def decide(catalog: Catalog) -> DdlOutcome:
            state = self._state()
            if isinstance(stmt, LEVEL_STATEMENTS):
                return AuthOutcome(
                    qos_mutations=decide_service_level(state.auth, state.qos, stmt, user, self.config)
                )
            auth_mutations = self._role_mutations(state, self._catalog(), stmt, user, keyspace)
            qos_mutations: tuple[QosMutation, ...] = ()
            if isinstance(stmt, ast.DropRole | ast.DropUser) and auth_mutations:
                qos_mutations = forget_role(state.qos, stmt.name)
            return AuthOutcome(auth_mutations=auth_mutations, qos_mutations=qos_mutations)

        return decide

    def _role_mutations(
        self,
        state: Group0State,
        catalog: Catalog,
        stmt: ast.Statement,
        user: str | None,
        keyspace: str | None,
    ) -> tuple[AuthMutation, ...]:
        auth, config = state.auth, self.config
        if isinstance(stmt, ast.CreateRole):
            return roles.create_role(auth, stmt, user, config)
        if isinstance(stmt, ast.AlterRole):
            return roles.alter_role(auth, stmt, user, config)
        if isinstance(stmt, ast.DropRole):
            return roles.drop_role(auth, stmt, user, config)
        if isinstance(stmt, ast.CreateUser):
            return roles.create_user(auth, stmt, user, config)
        if isinstance(stmt, ast.AlterUser):
            return roles.alter_user(auth, stmt, user, config)
        if isinstance(stmt, ast.DropUser):
            return roles.drop_user(auth, stmt, user, config)
        if isinstance(stmt, ast.GrantRole):
            return roles.grant_role(auth, stmt, user, config)
        if isinstance(stmt, ast.RevokeRole):
            return roles.revoke_role(auth, stmt, user, config)
        if isinstance(stmt, ast.GrantPermissions):
            return grant_permissions(auth, catalog, stmt, user, config, keyspace)
        if isinstance(stmt, ast.RevokePermissions):
            return revoke_permissions(auth, catalog, stmt, user, config, keyspace)
        raise TypeError(f"not a role or permission statement: {type(stmt).__name__}")

    def listing(self, stmt: ast.Statement, user: str | None, keyspace: str | None) -> Listing:
        state = self._state()
        if isinstance(stmt, ast.ListRoles):
            return list_roles(state.auth, stmt, user, self.config)
        if isinstance(stmt, ast.ListUsers):
            return list_users(state.auth, user, self.config)
        if isinstance(stmt, ast.ListPermissions):
            return list_permissions(state.auth, self._catalog(), stmt, user, self.config, keyspace)
        if isinstance(
            stmt, ast.ListServiceLevels | ast.ListAttachedServiceLevel | ast.ListEffectiveServiceLevel
        ):
            return list_service_levels(state.auth, state.qos, stmt, user, self.config)
        raise TypeError(f"not a LIST statement: {type(stmt).__name__}")

    def with_creator_grants(self, decide: Decision, user: str | None) -> Decision:
        """`decide` plus the grants a schema change implies, committed in the same command."""

        def decide_with_grants(catalog: Catalog) -> DdlOutcome:
            outcome = decide(catalog)
            if outcome.is_noop:
                return outcome
            extra = grants_for_schema_change(self._state(), catalog, outcome.mutations, user, self.config)
            if not extra:
                return outcome
            return AuthOutcome(outcome.mutations, outcome.events, outcome.warnings, auth_mutations=extra)

        return decide_with_grants


def grants_for_schema_change(
    state: Group0State,
    catalog: Catalog,
    mutations: tuple[sm.Mutation, ...],
    user: str | None,
    config: AuthConfig,
) -> tuple[AuthMutation, ...]:
    """Creator grants for resources the mutations create; revocations for those they drop.

    Driven by the mutations rather than the statement, so every DDL form (CREATE TABLE, CREATE
    KEYSPACE with its tables, DROP KEYSPACE...) is covered the same way."""
    auth = state.auth
    out: list[AuthMutation] = []
    for m in mutations:
        if isinstance(m, sm.PutKeyspace) and catalog.keyspace(m.keyspace.name) is None:
            out += keyspace_creator_grants(auth, config, user, m.keyspace.name)
        elif isinstance(m, sm.PutTable) and catalog.table_or_view(m.table.keyspace, m.table.name) is None:
            out += creator_grants(auth, config, user, resources.table(m.table.keyspace, m.table.name))
        elif isinstance(m, sm.PutView) and catalog.table_or_view(m.view.keyspace, m.view.name) is None:
            # the creator of a view gets it, as the creator of a table does (ScyllaDB)
            out += creator_grants(auth, config, user, resources.table(m.view.keyspace, m.view.name))
        elif isinstance(m, sm.PutFunction | sm.PutAggregate):
            fn = m.function if isinstance(m, sm.PutFunction) else m.aggregate
            ks = catalog.keyspace(fn.keyspace)
            key = fn.signature
            if ks is None or (key not in ks.functions and key not in ks.aggregates):
                out += creator_grants(auth, config, user, resources.function(fn.keyspace, key[0], key[1]))
        elif isinstance(m, sm.DropKeyspace):
            out += keyspace_dropped(m.name)
        elif isinstance(m, sm.DropTable | sm.DropView):
            out += table_dropped(m.keyspace, m.name)
        elif isinstance(m, sm.DropFunction | sm.DropAggregate):
            out += function_dropped(m.keyspace, m.name, m.argument_types)
    return tuple(out)


def rows_result(listing: Listing, keyspace: str = "system", table: str = "auth") -> RowsResult:
    """A LIST answer as a one-page RESULT Rows message."""
    columns = [ColumnSpec(keyspace, table, name, cql_type) for name, cql_type in listing.columns]
    types = [cql_type for _, cql_type in listing.columns]
    rows = [[_cell(t, v) for t, v in zip(types, row, strict=True)] for row in listing.rows]
    return RowsResult(RowsMetadata(columns), rows)


def _cell(cql_type: Any, value: Any) -> bytes | None:
    return None if value is None else codec.serialize(cql_type, value)
