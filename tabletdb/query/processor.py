"""The query processor: the protocol `Handler` that parses, prepares and executes statements.

It owns the per-node prepared-statement cache (ids are MD5 of the keyspace in use followed by
the query text, as ScyllaDB computes them) and dispatches each statement kind to the module that
executes it. Schema statements go to the metadata store; SELECTs on `system`, `system_schema`
and `system_distributed` (the CDC description tables) render virtual tables.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from tabletdb.auth.model import AuthConfig
from tabletdb.cql import ast
from tabletdb.cql.errors import (
    InvalidRequest,
    Unprepared,
)
from tabletdb.cql.parser import parse_statement
from tabletdb.cql.results import (
    ColumnSpec,
    PreparedResult,
    Result,
    RowsMetadata,
    SchemaChangeResult,
    SetKeyspaceResult,
    VoidResult,
)
from tabletdb.cql.tracing import TraceStore, trace
from tabletdb.cql.values import Value
from tabletdb.group0.state import Group0State
from tabletdb.protocol.extensions import build_supported
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.requests import Batch, QueryParameters
from tabletdb.query import ddl
from tabletdb.query.auth_check import AuthService, operation_kind
from tabletdb.query.auth_exec import AUTH_STATEMENTS, AuthExecutor
from tabletdb.query.data_path import DataPath, batch_receivers
from tabletdb.query.describe import describe
from tabletdb.query.metadata_store import MetadataStore
from tabletdb.query.route_check import Payload, RouteCheck, RoutePlan, plan_route
from tabletdb.query.schema_fetches import SchemaFetches
from tabletdb.query.select import result_columns
from tabletdb.query.statement_stats import StatementStats
from tabletdb.query.statement_timeouts import SessionLimit, statement_timeout_ms
from tabletdb.schema import system_schema
from tabletdb.schema.ddl_common import Change, SchemaConfig, Target
from tabletdb.schema.model import Catalog, KeyspaceSchema, TableDef
from tabletdb.schema.rack_rules import ClusterShape
from tabletdb.statements.bound_modification import BoundModification, bind_batch
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.receivers import Receiver, pk_indexes, receivers
from tabletdb.statements.terms import bind_by_name
from tabletdb.systables.cdc import DISTRIBUTED_RENDERERS, SYSTEM_DISTRIBUTED, system_distributed_keyspace
from tabletdb.systables.local_tables import LOCAL_RENDERERS, ConfigUpdateRefused, LocalNode
from tabletdb.systables.node_info import NodeInfo
from tabletdb.systables.select import output_columns, select_virtual
from tabletdb.systables.tables import (
    AUTH_KEYSPACE,
    AUTH_RENDERERS,
    RENDERERS,
    SYSTEM,
    SystemState,
    system_auth_keyspace,
    system_keyspace,
)
from tabletdb.systables.traces import TRACE_TABLES, TRACES_KEYSPACE, system_traces_keyspace
from tabletdb.systables.traces import render as render_traces
from tabletdb.systables.version_reads import VersionReads
from tabletdb.systables.virtual_writes import READ_ONLY, VIRTUAL_TABLES, config_updates, write_refused
from tabletdb.views.backfill import Backfill
from tabletdb.views.build import build_new_view
from tabletdb.views.index_writes import build_new_index

PREPARED_CACHE_LIMIT = 10_000
VIRTUAL_KEYSPACES = (SYSTEM, system_schema.KEYSPACE, SYSTEM_DISTRIBUTED, AUTH_KEYSPACE, TRACES_KEYSPACE)
"""Keyspaces whose tables are rendered from state, never stored, and cannot be written."""
_DML = (ast.SelectStatement, ast.InsertStatement, ast.UpdateStatement, ast.DeleteStatement)


@dataclass
class Prepared:
    statement: ast.Statement
    keyspace: str | None
    binds: list[Receiver]
    result: PreparedResult
    kind: str | None
    """The service-level operation kind (``operation_kind``): a function of the statement alone."""
    table: tuple[Catalog, TableDef] | None = None
    """The table a DML statement resolved to, and the catalog it was resolved in: reused for as
    long as the catalog is the same object (catalogs are immutable; a schema change replaces it)."""
    route: RoutePlan | None = None
    """How drivers route it by token (`route_check`); None when they cannot."""


class QueryProcessor:
    """Implements `tabletdb.protocol.handler.Handler` for one node."""

    def __init__(
        self,
        node: Callable[[], NodeInfo],
        metadata: MetadataStore,
        schema_config: SchemaConfig,
        clients: Callable[[], list[ClientState]],
        shard_aware_port: int | None = None,
        data: DataPath | None = None,
        auth: AuthService | None = None,
        routes: RouteCheck | None = None,
        settle_versions: Callable[[], Awaitable[None]] | None = None,
        backfill: Backfill | None = None,
        cluster: Callable[[], ClusterShape] | None = None,
        local: LocalNode | None = None,
        traces: TraceStore | None = None,
    ) -> None:
        """``cluster``: the token-owning nodes per DC and rack of this node's group0 state, read
        when a schema statement is decided (tablets keyspaces must fit them; ``schema.rack_rules``).
        ``local``: this process's settings, listeners and files for ``system.config`` and the
        other local virtual tables (`systables.local_tables`). ``traces``: the sessions the CQL
        server traced, shown in ``system_traces`` (`cql.tracing`)."""
        empty = Group0State()  # immutable: one for every request, not a new one per lookup
        self._auth = auth or AuthService(AuthConfig(), lambda: empty)
        self._auth_exec = AuthExecutor(
            self._auth.config, self._auth.state, metadata, self._catalog_with_system
        )
        self._data = data
        self._backfill = backfill
        """Fills a new view or index from existing data (None: nothing to fill, no data path)."""
        self._node = node
        self._metadata = metadata
        self._schema_config = schema_config
        self._cluster = cluster
        self._clients = clients
        self._local = local
        self._traces = traces or TraceStore()
        self.stats = StatementStats()
        """Statements executed, by kind, and their latencies (ScyllaDB's ``scylla_cql_*``)."""
        self._shard_aware_port = shard_aware_port
        self._routes = routes
        self._version_reads = VersionReads(settle_versions)
        self._schema_fetches = SchemaFetches()
        self._prepared: dict[bytes, Prepared] = {}
        self._system_catalog: tuple[uuid.UUID, Catalog] | None = None

    # -- Handler: connection set-up -------------------------------------------------------

    @property
    def authenticator(self) -> str | None:
        return self._auth.authenticator

    def supported(self, client: ClientState) -> dict[str, list[str]]:
        node = self._node()
        return build_supported(
            host_id=node.host_id,
            shard=client.shard,
            nr_shards=node.smp,
            ignore_msb=node.ignore_msb,
            shard_aware_port=self._shard_aware_port,
        )

    async def authenticate(self, client: ClientState, username: str, password: str) -> None:
        await self._auth.login(client, username, password)

    def connection_opened(self, client: ClientState) -> None:
        return None

    def connection_closed(self, client: ClientState) -> None:
        return None

    # -- Handler: requests ----------------------------------------------------------------

    async def query(self, client: ClientState, query: str, params: QueryParameters) -> Result:
        trace("Parsing a statement")
        stmt = parse_statement(query)
        trace("Processing a statement")
        started = time.perf_counter()
        values = params.values
        if params.names is not None:
            table = self._table_for(stmt, client.keyspace)
            binds = receivers(stmt, table, self._routines(table) if table is not None else None)
            values = bind_by_name(stmt.bind_markers, [b.name for b in binds], values, params.names)
        result = await self._run(
            client,
            stmt,
            values,
            operation_kind(stmt, client.keyspace),
            params.consistency,
            lambda: self._execute(client, stmt, client.keyspace, values, params),
        )
        self.stats.statement(stmt, result, time.perf_counter() - started)
        return result

    async def prepare(self, client: ClientState, query: str) -> PreparedResult:
        keyspace = client.keyspace
        stmt = parse_statement(query)
        table = self._table_for(stmt, keyspace)
        if isinstance(stmt, ast.BatchStatement):
            binds = batch_receivers(stmt, lambda name: self._user_table(name, keyspace), self._routines)
        else:
            binds = receivers(stmt, table, self._routines(table) if table is not None else None)
        qid = hashlib.md5(((keyspace or "") + query).encode()).digest()
        ks_name = table.keyspace if table is not None else (keyspace or "")
        tbl_name = table.name if table is not None else ""
        bind_specs = [ColumnSpec(ks_name, tbl_name, b.name, b.type) for b in binds]
        result_columns = self._result_columns(stmt, table)
        result = PreparedResult(
            id=qid,
            bind_columns=bind_specs,
            pk_indexes=pk_indexes(stmt, table, binds),
            result_metadata=RowsMetadata(result_columns),
            is_lwt=_is_conditional(stmt),
        )
        if len(self._prepared) >= PREPARED_CACHE_LIMIT:
            self._prepared.pop(next(iter(self._prepared)))
        route = self._route_plan(stmt, table, result)
        self._prepared[qid] = Prepared(
            stmt, keyspace, binds, result, operation_kind(stmt, keyspace), route=route
        )
        return result

    def _route_plan(
        self, stmt: ast.Statement, table: TableDef | None, result: PreparedResult
    ) -> RoutePlan | None:
        if self._routes is None or table is None or table.keyspace in VIRTUAL_KEYSPACES:
            return None
        return plan_route(stmt, table, result.pk_indexes)

    async def execute(
        self, client: ClientState, query_id: bytes, result_metadata_id: bytes | None, params: QueryParameters
    ) -> Result:
        prepared = self._prepared.get(query_id)
        if prepared is None:
            raise Unprepared(f"Prepared query with ID {query_id.hex()} not found", query_id)
        started = time.perf_counter()
        result = await self._execute_prepared(client, prepared, params)
        self.stats.statement(prepared.statement, result, time.perf_counter() - started)
        return result

    async def _execute_prepared(
        self, client: ClientState, prepared: Prepared, params: QueryParameters
    ) -> Result:
        values = params.values
        if params.names is not None:
            names = [b.name for b in prepared.binds]
            values = bind_by_name(prepared.statement.bind_markers, names, values, params.names)
        stmt = prepared.statement
        if isinstance(stmt, _DML):
            dml = stmt
            payload = self._routed(client, prepared, values)
            result = await self._run(
                client,
                dml,
                values,
                prepared.kind,
                params.consistency,
                lambda: self._execute_dml(client, prepared, dml, values, params),
            )
            return result if payload is None else replace(result, custom_payload=payload)
        return await self._run(
            client,
            stmt,
            values,
            prepared.kind,
            params.consistency,
            lambda: self._execute(client, stmt, prepared.keyspace, values, params),
        )

    def _run(
        self,
        client: ClientState,
        stmt: ast.Statement,
        values: list[Value],
        kind: str | None,
        consistency: int,
        run: Callable[[], Awaitable[Result]],
    ) -> Awaitable[Result]:
        """Under the statement's own timeout if it names one, else the session's."""
        own = statement_timeout_ms(stmt, values, self._auth.state().qos)
        if isinstance(own, SessionLimit):
            return self._auth.run_limited(client, kind, consistency, run)
        return self._auth.run_within(own, kind, consistency, run)

    def execute_now(
        self, client: ClientState, query_id: bytes, result_metadata_id: bytes | None, params: QueryParameters
    ) -> Result | None:
        """``execute`` of a prepared SELECT that this node's own store answers at once (the direct
        point read, ``DataPath.select_now``), or None. Takes only the fast path's usual case: a
        table resolved since the last schema change, values bound by position, a first page, no
        service-level delay. It needs no timeout (nothing waits), and raises only what
        ``execute`` would, checking the same permission before it reads."""
        prepared = self._prepared.get(query_id)
        if prepared is None or params.names is not None or params.paging_state is not None:
            return None
        stmt, cached, catalog = prepared.statement, prepared.table, self._metadata.catalog
        if not isinstance(stmt, ast.SelectStatement) or cached is None or cached[0] is not catalog:
            return None
        table = cached[1]
        if table.keyspace in VIRTUAL_KEYSPACES or self._auth.delays_statements:
            return None
        if stmt.timeout is not None or stmt.service_level is not None:
            return None  # its own limit (and level) are checked on the usual path
        self._auth.check(client, stmt, prepared.keyspace, catalog)
        values = params.values
        started = time.perf_counter()
        result = self._data_path().select_now(
            BoundSelect(stmt, table, values, routines=catalog.keyspace(table.keyspace)), params.consistency
        )
        if result is None:
            return None
        self.stats.statement(stmt, result, time.perf_counter() - started)
        payload = self._routed(client, prepared, values)
        return result if payload is None else replace(result, custom_payload=payload)

    def _routed(self, client: ClientState, prepared: Prepared, values: list[Value]) -> Payload | None:
        """Count where this routable request landed; the tablet routing payload to attach, if any."""
        route, routes = prepared.route, self._routes
        return None if route is None or routes is None else routes.observe(client, route, values)

    def _execute_dml(
        self,
        client: ClientState,
        prepared: Prepared,
        stmt: ast.SelectStatement | ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement,
        values: list[Value],
        params: QueryParameters,
    ) -> Awaitable[Result]:
        """``_execute`` for a prepared SELECT/INSERT/UPDATE/DELETE, with its table resolved once
        per catalog instead of per request (the EXECUTE hot path). Returns the select or modify
        coroutine itself: one coroutine layer fewer per request."""
        catalog = self._metadata.catalog
        self._auth.check(client, stmt, prepared.keyspace, catalog)
        cached = prepared.table
        if cached is not None and cached[0] is catalog:
            table = cached[1]
        elif isinstance(stmt, ast.SelectStatement):
            table = self._resolve_table(stmt.table, prepared.keyspace)
            prepared.table = (catalog, table)
        elif self._is_config_write(stmt, prepared.keyspace):
            return self._update_config(stmt, values)
        else:
            table = self._user_table(stmt.table, prepared.keyspace)
            prepared.table = (catalog, table)
        # ``_dml`` inlined: one coroutine layer fewer on every EXECUTE
        if isinstance(stmt, ast.SelectStatement):
            select = BoundSelect(
                stmt, table, values, params.page_size, params.paging_state, self._routines(table)
            )
            return self._select_from(select, params, client)
        return self._data_path().modify(
            BoundModification(stmt, table, values, self._routines(table)),
            params.timestamp,
            params.consistency,
            params.serial_consistency,
        )

    async def _dml(
        self,
        stmt: ast.SelectStatement | ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement,
        table: TableDef,
        values: list[Value],
        params: QueryParameters,
        client: ClientState | None = None,
    ) -> Result:
        """A SELECT or a modification on its resolved table: shared by QUERY and EXECUTE."""
        if isinstance(stmt, ast.SelectStatement):
            select = BoundSelect(
                stmt, table, values, params.page_size, params.paging_state, self._routines(table)
            )
            return await self._select_from(select, params, client)
        return await self._data_path().modify(
            BoundModification(stmt, table, values, self._routines(table)),
            params.timestamp,
            params.consistency,
            params.serial_consistency,
        )

    async def batch(self, client: ClientState, batch: Batch) -> Result:
        items = []
        for entry in batch.statements:
            if entry.query_id is not None:
                prepared = self._prepared.get(entry.query_id)
                if prepared is None:
                    raise Unprepared(
                        f"Prepared query with ID {entry.query_id.hex()} not found", entry.query_id
                    )
                stmt, keyspace = prepared.statement, prepared.keyspace
            else:
                stmt, keyspace = parse_statement(entry.query or ""), client.keyspace
            if not isinstance(stmt, ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement):
                raise InvalidRequest("Only INSERT, UPDATE and DELETE statements are allowed in a BATCH")
            self._auth.check(client, stmt, keyspace, self._metadata.catalog)
            table = self._user_table(stmt.table, keyspace)
            items.append(BoundModification(stmt, table, entry.values, self._routines(table)))
        kind = {0: "LOGGED", 1: "UNLOGGED", 2: "COUNTER"}.get(batch.type, "LOGGED")
        started = time.perf_counter()
        result = await self._auth.run_limited(
            client,
            "BATCH",
            batch.consistency,
            lambda: self._data_path().batch(
                kind, items, batch.timestamp, batch.consistency, batch.serial_consistency
            ),
        )
        self.stats.batch([item.statement for item in items], time.perf_counter() - started)
        return result

    def _data_path(self) -> DataPath:
        if self._data is None:
            raise InvalidRequest("This node was started without a data path")
        return self._data

    def _is_config_write(self, stmt: ast.ModificationStatement, keyspace: str | None) -> bool:
        return ddl.keyspace_of(stmt.table, keyspace) == SYSTEM and stmt.table.name == "config"

    async def _update_config(self, stmt: ast.ModificationStatement, values: list[Value]) -> Result:
        """A write to ``system.config``: set live-updatable options on this node (ScyllaDB's
        answers, `systables.virtual_writes`)."""
        updates = config_updates(stmt, values)
        if self._local is None:
            raise write_refused(READ_ONLY)
        for name, value in updates:
            try:
                self._local.update_config(name, value)
            except ConfigUpdateRefused as exc:
                raise write_refused(str(exc)) from None
        return VoidResult()

    def _user_table(self, name: ast.QualifiedName, keyspace: str | None) -> TableDef:
        ks = ddl.keyspace_of(name, keyspace)
        if ks == SYSTEM and name.name in VIRTUAL_TABLES:
            if name.name == "config":
                raise InvalidRequest("system.config is updated by a single UPDATE statement, not in a BATCH")
            raise write_refused(READ_ONLY)
        if ks in VIRTUAL_KEYSPACES:
            raise InvalidRequest(f"Cannot modify the system keyspace {ks}")
        catalog = self._metadata.catalog
        if catalog.keyspace(ks) is None:
            raise InvalidRequest(f"Keyspace {ks} does not exist")
        table = catalog.table(ks, name.name)
        if table is None:
            if catalog.view(ks, name.name) is not None:
                raise InvalidRequest(f"Cannot directly modify a materialized view {ks}.{name.name}")
            raise InvalidRequest(f"unconfigured table {name.name}")
        return table

    def _truncated_table(self, name: ast.QualifiedName, keyspace: str | None) -> TableDef:
        """A view is emptied with its base, never alone (it would no longer mirror the base)."""
        ks = ddl.keyspace_of(name, keyspace)
        if self._metadata.catalog.view(ks, name.name) is not None:
            raise InvalidRequest(
                "Cannot TRUNCATE materialized view directly; must truncate base table instead"
            )
        return self._user_table(name, keyspace)

    # -- dispatch -------------------------------------------------------------------------

    async def _execute(
        self,
        client: ClientState,
        stmt: ast.Statement,
        keyspace: str | None,
        values: list[Value],
        params: QueryParameters,
    ) -> Result:
        self._auth.check(client, stmt, keyspace, self._metadata.catalog)
        if isinstance(stmt, AUTH_STATEMENTS):
            return await self._auth_exec.execute(stmt, client.user, keyspace)
        if isinstance(stmt, ast.SelectStatement):
            table = self._resolve_table(stmt.table, keyspace)
            return await self._dml(stmt, table, values, params, client)
        if isinstance(stmt, ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement):
            if self._is_config_write(stmt, keyspace):
                return await self._update_config(stmt, values)
            return await self._dml(stmt, self._user_table(stmt.table, keyspace), values, params)
        if isinstance(stmt, ast.BatchStatement):
            tables = [self._user_table(s.table, keyspace) for s in stmt.statements]
            items, timestamp = bind_batch(stmt, tables, values, params.timestamp, self._routines)
            return await self._data_path().batch(
                stmt.kind.upper(), items, timestamp, params.consistency, params.serial_consistency
            )
        if isinstance(stmt, ast.TruncateStatement):
            return await self._data_path().truncate(self._truncated_table(stmt.table, keyspace))
        if isinstance(stmt, ast.UseStatement):
            if self._catalog_with_system().keyspace(stmt.keyspace) is None:
                raise InvalidRequest(f"Keyspace '{stmt.keyspace}' does not exist")
            client.keyspace = stmt.keyspace
            return SetKeyspaceResult(stmt.keyspace)
        if isinstance(stmt, ddl.DDL_STATEMENTS):
            try:
                return await self._schema_change(ddl.bind_schema_statement(stmt, values), keyspace, client)
            finally:
                VersionReads.forget(client)
        if isinstance(stmt, ast.Describe):
            auth_rows = self._auth.describer(client.user)
            return describe(stmt, self._catalog_with_system(), keyspace, self._node(), auth_rows)
        raise InvalidRequest(f"{type(stmt).__name__} statements are not supported by this node yet")

    async def _schema_change(self, stmt: ast.Statement, keyspace: str | None, client: ClientState) -> Result:
        indexes_before = self._indexes_of(stmt, keyspace)
        decide = ddl.decision_for(stmt, keyspace, self._ddl_config(), uuid.uuid1, _now_micros)
        decide = self._auth_exec.with_creator_grants(decide, client.user)
        since = self._schema_fetches.now()
        outcome = await self._metadata.change_schema(decide)
        if not outcome.events:
            return VoidResult()
        others = [
            (e.keyspace, e.name)
            for e in outcome.events[1:]
            if e.change is Change.CREATED and e.target is Target.TABLE
        ]
        if others:  # a CDC log made with its base: answer once the client's metadata has it
            await self._schema_fetches.wait(client, self._clients(), others, since)
        if isinstance(stmt, ast.CreateIndex) and self._backfill is not None:
            await build_new_index(self._backfill, self._metadata.catalog, outcome.events[0], indexes_before)
        if isinstance(stmt, ast.CreateMaterializedView) and self._backfill is not None:
            await build_new_view(self._backfill, self._metadata.catalog, outcome.events[0])
        first = outcome.events[0]
        return SchemaChangeResult(
            change=first.change.value,
            target=first.target.value,
            keyspace=first.keyspace,
            name=first.name or None,
            arg_types=list(first.arg_types) if first.target.value in ("FUNCTION", "AGGREGATE") else None,
            warnings=list(outcome.warnings) or None,  # ScyllaDB's client warnings (protocol v4+)
        )

    def _ddl_config(self) -> SchemaConfig:
        """The node's schema settings with the cluster as it is now: its datacenters (what
        ``replication_factor`` expands to, which DC names NTS accepts) and token-owning racks."""
        shape = None if self._cluster is None else self._cluster()
        if shape is None or not shape.known:
            return self._schema_config
        dcs = tuple(sorted({*self._schema_config.datacenters, *shape.racks}))
        return dataclasses.replace(self._schema_config, datacenters=dcs, cluster=shape)

    # -- SELECT ---------------------------------------------------------------------------

    async def _select_from(
        self, select: BoundSelect, params: QueryParameters, client: ClientState | None = None
    ) -> Result:
        stmt, table = select.statement, select.table
        if table.keyspace == SYSTEM and table.name in LOCAL_RENDERERS:
            if self._local is None:
                raise InvalidRequest(f"system.{table.name} is not available: no node behind this processor")
            local_rows = await LOCAL_RENDERERS[table.name][1](self._local)
            return select_virtual(select, lambda _: local_rows)
        if table.keyspace in (SYSTEM, AUTH_KEYSPACE):
            render = (RENDERERS if table.keyspace == SYSTEM else AUTH_RENDERERS)[table.name][1]
            state = await self._version_reads.state_for(client, table.name, stmt, self._system_state)
            return select_virtual(select, lambda _: render(state))
        if table.keyspace == TRACES_KEYSPACE:
            return select_virtual(select, lambda _: render_traces(table.name, self._traces))
        if table.keyspace == SYSTEM_DISTRIBUTED:
            g0 = self._auth.state()
            rows = DISTRIBUTED_RENDERERS[table.name][1](g0, _now_micros(), self._member_hosts())
            return select_virtual(select, lambda _: rows)
        if table.keyspace == system_schema.KEYSPACE:
            catalog = self._catalog_with_system()
            first_ck = table.clustering_key[0].name if table.clustering_key else None

            def source(narrowing: dict[str, object]) -> list[dict[str, object]]:
                ks_filter = narrowing.get("keyspace_name")
                obj = narrowing.get(first_ck) if first_ck and ks_filter is not None else None
                if table.name == "columns" and obj is not None:
                    self._schema_fetches.fetched(client, str(ks_filter), str(obj))
                return system_schema.rows(
                    catalog,
                    table.name,
                    None if ks_filter is None else str(ks_filter),
                    None if obj is None else str(obj),
                )

            return select_virtual(select, source)
        return await self._data_path().select(select, params.consistency)

    def _indexes_of(self, stmt: ast.Statement, keyspace: str | None) -> list[str]:
        """The indexes a CREATE INDEX's table has before it runs (the fill shows the new one)."""
        if not isinstance(stmt, ast.CreateIndex):
            return []
        table = self._metadata.catalog.table(ddl.keyspace_of(stmt.table, keyspace), stmt.table.name)
        return [] if table is None else [i.name for i in table.indexes]

    def _table_for(self, stmt: ast.Statement, keyspace: str | None) -> TableDef | None:
        """The table a DML statement reads or writes (for bind metadata); None for other kinds."""
        if not isinstance(
            stmt, ast.SelectStatement | ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement
        ):
            return None
        return self._resolve_table(stmt.table, keyspace)

    def _resolve_table(self, name: ast.QualifiedName, keyspace: str | None) -> TableDef:
        """A system virtual table, a system_schema table, or a user table or view."""
        ks = ddl.keyspace_of(name, keyspace)
        found: TableDef | None
        if ks == SYSTEM:
            entry = RENDERERS.get(name.name) or LOCAL_RENDERERS.get(name.name)
            found = None if entry is None else entry[0]
        elif ks == system_schema.KEYSPACE:
            found = system_schema.TABLES.get(name.name)
        elif ks == SYSTEM_DISTRIBUTED:
            distributed = DISTRIBUTED_RENDERERS.get(name.name)
            found = None if distributed is None else distributed[0]
        elif ks == TRACES_KEYSPACE:
            found = TRACE_TABLES.get(name.name)
        elif ks == AUTH_KEYSPACE:
            legacy = AUTH_RENDERERS.get(name.name)
            found = None if legacy is None else legacy[0]
        else:
            catalog = self._metadata.catalog
            if catalog.keyspace(ks) is None:
                raise InvalidRequest(f"Keyspace {ks} does not exist")
            found = catalog.table_or_view(ks, name.name)
        if found is None:
            raise InvalidRequest(f"unconfigured table {name.name}")
        return found

    def _result_columns(self, stmt: ast.Statement, table: TableDef | None) -> list[ColumnSpec]:
        if not isinstance(stmt, ast.SelectStatement) or table is None:
            return []
        if table.keyspace in VIRTUAL_KEYSPACES:
            return output_columns(stmt, table)
        return result_columns(stmt, table, self._routines(table))

    def _routines(self, table: TableDef) -> KeyspaceSchema | None:
        """The table's keyspace: the user-defined functions and aggregates its SELECTs may call."""
        return self._metadata.catalog.keyspace(table.keyspace)

    # -- state for system tables -------------------------------------------------------------

    def _system_state(self) -> SystemState:
        g0 = self._auth.state()
        return SystemState(
            self._node(),
            self._metadata.catalog,
            tuple(self._clients()),
            auth=g0.auth,
            qos=g0.qos,
            tablets=self._data.tablet_maps() if self._data is not None else {},
            cdc_generations=g0.cdc_generations,
            cdc_stream_sets=g0.cdc_stream_sets,
            now_micros=_now_micros(),
            view_builds=dict(self._backfill.progress.running) if self._backfill is not None else {},
            view_build_status=g0.view_builds,
        )

    def _member_hosts(self) -> tuple[uuid.UUID, ...]:
        """This node and its peers, by host id."""
        node = self._node()
        return tuple(sorted({node.host_id, *(p.host_id for p in node.peers)}, key=lambda h: h.bytes))

    def _catalog_with_system(self) -> Catalog:
        """The user catalog plus the `system` and `system_schema` keyspaces, as drivers list them."""
        catalog = self._metadata.catalog
        cached = self._system_catalog
        if cached is not None and cached[0] == catalog.version and cached[1] is not None:
            return cached[1]
        keyspaces = (
            catalog.keyspaces.set(SYSTEM, system_keyspace())
            .set(system_schema.KEYSPACE, system_schema.system_schema_keyspace())
            .set(AUTH_KEYSPACE, system_auth_keyspace())
            .set(TRACES_KEYSPACE, system_traces_keyspace())
            .set(SYSTEM_DISTRIBUTED, system_distributed_keyspace())
        )
        merged = Catalog(keyspaces, catalog.version, catalog.ids)
        self._system_catalog = (catalog.version, merged)
        return merged


def _is_conditional(stmt: ast.Statement) -> bool:
    if isinstance(stmt, ast.InsertStatement):
        return stmt.if_not_exists
    if isinstance(stmt, ast.UpdateStatement | ast.DeleteStatement):
        return stmt.if_exists or bool(stmt.conditions)
    return False


def _now_micros() -> int:
    return time.time_ns() // 1000
