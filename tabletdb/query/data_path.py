"""The data path's entry points for the processor: DML, BATCH, TRUNCATE and SELECT on user tables.

Kept apart from ``processor`` so the protocol handler only resolves tables and dispatches.
Statements that read before they write (list element set/delete by index, list removal by
value, UDT field set/delete) and counter updates (built as deltas, ``paxos.counters``)
run as one Paxos read-modify-write of their partition where it has other replicas
(``paxos.read_modify_write``), and under a local lock where this node is its only replica.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence

from tabletdb.coordinator.consistency import LOCAL_SERIAL, ONE, SERIAL
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.executor import PartitionLocks, ServerClock, WriteExecutor
from tabletdb.coordinator.range_reads import RangeReads
from tabletdb.coordinator.reads import ConsistentReads, ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.cql import ast
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.results import Result, RowsResult, VoidResult
from tabletdb.cql.tracing import trace
from tabletdb.paxos.counters import CounterCoordinator
from tabletdb.paxos.lwt import (
    execute_conditional,
    execute_conditional_batch,
    is_conditional,
    serial_read_barrier,
)
from tabletdb.paxos.read_modify_write import read_modify_write
from tabletdb.paxos.rounds import PaxosRounds
from tabletdb.query.batch_limits import check_batch_size
from tabletdb.query.point_select import point_select
from tabletdb.query.scan_select import scan_select
from tabletdb.query.select import execute_select
from tabletdb.replica.stores import DataStores
from tabletdb.schema.model import Catalog, KeyspaceSchema, TableDef, ViewDef
from tabletdb.statements.bound_modification import BoundModification
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.modifications import CurrentCells
from tabletdb.statements.receivers import Receiver, attribute_receivers, receivers
from tabletdb.storage.mutation import Mutation
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.views.view_rows import derived_tables

ViewsOf = Callable[[TableDef], Sequence[ViewDef]]
"""The materialized views of a base table (from the current catalog)."""


def _reads_before_write(stmt: ast.Statement, table: TableDef) -> bool:
    if table.is_counter:
        return True
    if isinstance(stmt, ast.UpdateStatement):
        return any(
            isinstance(a, ast.SetElement | ast.SubtractFromColumn | ast.SetField) for a in stmt.assignments
        )
    if isinstance(stmt, ast.DeleteStatement):
        return any(isinstance(t, ast.ElementRef | ast.FieldRef) for t in stmt.targets)
    return False


def _refuse_conditional_counters(table: TableDef) -> None:
    """As Cassandra: a counter's value is a sum of increments, not a value a condition can pin."""
    if table.is_counter:
        raise InvalidRequest(
            f"Conditional updates are not supported on counter tables ({table.keyspace}.{table.name})"
        )


class DataPath:
    """The processor's entry points to user data, built from the data plane's parts (``node``
    wires them): each entry point uses only the parts it needs."""

    def __init__(
        self,
        *,
        writer: WriteExecutor,
        clock: ServerClock,
        locks: PartitionLocks,
        stores: DataStores,
        replicas: Replicas,
        writes: WriteCoordinator,
        reads: ReadCoordinator,
        counters: CounterCoordinator,
        views_of: ViewsOf,
        paxos: PaxosRounds | None = None,
    ) -> None:
        self._writer = writer
        self._clock = clock
        self._locks = locks
        self._stores = stores
        self._replicas = replicas
        self._writes = writes
        self._reads = reads
        self._counters = counters
        self._views_of = views_of
        self._ranges = RangeReads(replicas)
        """Counts and full scans answered by one replica per range (``query.scan_select``)."""
        self._paxos = paxos
        """Conditional statements run Paxos across replicas through it (None: under a local lock)."""
        self.batch_size_fail_threshold_in_kb: int | None = None
        """Multi-partition batches larger than this are refused (``query.batch_limits``); the
        node sets it from its config, None: no limit."""

    async def modify(
        self,
        bound: BoundModification,
        timestamp: int | None,
        cl: int = ONE,
        serial: int | None = None,
    ) -> Result:
        stmt, table = bound.statement, bound.table
        if is_conditional(stmt):
            _refuse_conditional_counters(table)
            if self._paxos is None:
                self._require_local(table, "Conditional statements (LWT)")
            return await execute_conditional(
                self._writer,
                self._clock,
                self._locks,
                self._stores,
                bound,
                timestamp,
                self.write,
                self._paxos,
                serial,
            )
        if table.is_counter:
            deltas = self._writer.mutations_for(bound, timestamp, deltas=True)
            await self._counters.update(table, deltas, cl, self._paxos)
        elif _reads_before_write(stmt, table):
            await self._read_then_write([bound], timestamp, cl, "SIMPLE")
        else:  # no coroutine between here and the commit (``LocalReplica.apply``)
            await self._writes.write(table, self._writer.mutations_for(bound, timestamp), cl)
        return VoidResult()

    def _require_local(self, table: TableDef, what: str) -> None:
        """A node without Paxos (maintenance mode) runs LWT under a local lock on its own stores:
        refuse where they are not the only replica.

        Doing it anyway would read one replica's (possibly stale) data and write the result to
        all, silently losing updates.
        """
        if not self._replicas.placement.local_only(table):
            raise InvalidRequest(
                f"{what} on {table.keyspace}.{table.name} need Paxos across its replicas, which this "
                "node does not run (maintenance mode)"
            )

    async def _read_then_write(
        self,
        statements: Sequence[BoundModification],
        timestamp: int | None,
        cl: int,
        write_type: str,
    ) -> None:
        """Statements whose mutations depend on the stored value, all built from one read.

        Where every partition they touch has this node as its only replica, the read is of the
        local stores under the table's lock. Otherwise they must touch one partition, and one
        Paxos round reads it from a quorum and commits what the statements build from that read
        (``paxos.read_modify_write``), so no concurrent update slips between the read and the write.
        """
        ts = timestamp if timestamp is not None else self._clock.timestamp()
        targets: dict[tuple[str, bytes], tuple[TableDef, int]] = {}
        for bound in statements:
            table = bound.table
            if _reads_before_write(bound.statement, table):
                keys = bound.partitions()
            else:  # builds without reading
                keys = [(m.partition_key, m.token) for m in self._writer.mutations_for(bound, ts)]
            targets.update({(table.id.hex, key): (table, token) for key, token in keys})
        now_s = self._clock.now_seconds()
        for bound in statements:  # every CDC table checked before anything is read or written
            if bound.table.options.cdc_enabled:
                self._writes.check_cdc_timestamps(bound.table, (bound.write_timestamp(ts, now_s),))
        placement = self._replicas.placement
        if all(placement.only_local(placement.replicas(table, token)) for table, token in targets.values()):
            async with self._locks.lock(statements[0].table, b""):
                await self._build_and_write_all(statements, ts, cl, write_type)
            return
        if self._paxos is None:
            raise InvalidRequest(
                "List element and UDT field updates and removals of a replicated table need Paxos "
                "across its replicas, which this node does not run (maintenance mode)"
            )
        if len(targets) != 1:
            raise InvalidRequest(
                "List element and UDT field updates and removals of a replicated table must "
                "touch one partition per statement or batch (IN on the partition key, or a batch "
                "spanning partitions, is not supported with them)"
            )
        (((_, key), (table, token)),) = targets.items()

        def build(current: CurrentCells, ballot_micros: int) -> list[Mutation]:
            return [m for bound in statements for m in self._writer.mutations_for(bound, ts, current=current)]

        now = self._clock.now_seconds()
        await read_modify_write(self._paxos, self._replicas, table, (key, token), build, cl, write_type, now)

    async def _build_and_write_all(
        self,
        statements: Sequence[BoundModification],
        ts: int,
        cl: int,
        write_type: str,
    ) -> None:
        """Build every statement before writing any (each reads the state before the others)."""
        built = [(bound.table, self._writer.mutations_for(bound, ts)) for bound in statements]
        for table, mutations in built:
            await self.write(table, mutations, cl, write_type)

    def write(
        self, table: TableDef, mutations: Sequence[Mutation], cl: int = ONE, write_type: str = "SIMPLE"
    ) -> Awaitable[object]:
        """Write at ``cl``; each base replica updates views and indexes as it applies (``views.updates``)."""
        return self._writes.write(table, mutations, cl, write_type)

    async def batch(
        self,
        kind: str,
        statements: Sequence[BoundModification],
        timestamp: int | None,
        cl: int = ONE,
        serial: int | None = None,
    ) -> Result:
        """All statements share one timestamp; all are validated before any is written.

        A batch with conditions is one lightweight transaction (``lwt``) on one partition.
        """
        if any(is_conditional(bound.statement) for bound in statements):
            for bound in statements:
                _refuse_conditional_counters(bound.table)
            if self._paxos is None:
                self._require_local(statements[0].table, "Conditional batches (LWT)")
            return await execute_conditional_batch(
                self._writer,
                self._clock,
                self._locks,
                self._stores,
                statements,
                self.write,
                self._paxos,
                serial,
            )
        ts = timestamp if timestamp is not None else self._clock.timestamp()
        per_table: dict[str, tuple[TableDef, list[Mutation]]] = {}
        counters = {bound.table.is_counter for bound in statements}
        if len(counters) > 1:
            raise InvalidRequest("Counter and non-counter mutations cannot exist in the same batch")
        if kind == "COUNTER" and counters != {True}:
            raise InvalidRequest("Only counter mutations are allowed in COUNTER batches")
        if kind != "COUNTER" and counters == {True}:
            raise InvalidRequest("Cannot include a counter statement in a logged batch")
        write_type = {"LOGGED": "BATCH", "UNLOGGED": "UNLOGGED_BATCH"}.get(kind, "COUNTER")
        if counters == {False} and any(_reads_before_write(b.statement, b.table) for b in statements):
            await self._read_then_write(statements, ts, cl, write_type)
            return VoidResult()
        for bound in statements:
            table = bound.table
            per_table.setdefault(table.id.hex, (table, []))[1].extend(
                self._writer.mutations_for(bound, ts, deltas=table.is_counter)
            )
        check_batch_size(per_table.values(), self.batch_size_fail_threshold_in_kb)
        for table, mutations in per_table.values():
            if table.options.cdc_enabled:  # refused before any table of the batch is written
                self._writes.check_cdc_time(table, mutations)
        for table, mutations in per_table.values():
            if table.is_counter:
                await self._counters.update(table, mutations, cl, self._paxos)
            else:
                await self.write(table, mutations, cl, write_type)
        return VoidResult()

    async def select(self, bound: BoundSelect, cl: int = ONE) -> RowsResult:
        if bound.paging_state is None:
            direct = self.select_now(bound, cl)
            if direct is not None:
                trace("read_data: querying locally %s.%s", bound.table.keyspace, bound.table.name)
                return direct
        if cl in (SERIAL, LOCAL_SERIAL) and self._paxos is not None:
            await serial_read_barrier(self._paxos, bound, cl)
        source = ConsistentReads(self._reads, cl)
        now = self._clock.now_seconds()
        scanned = await scan_select(bound, self._ranges, source, cl, now)
        if scanned is not None:
            return scanned
        return await execute_select(bound, source, now)

    def select_now(self, bound: BoundSelect, cl: int = ONE) -> RowsResult | None:
        """A first page answered at once from this node's own store (``query.point_select``), or None.
        Serial reads first need a Paxos barrier, so they never are."""
        if cl in (SERIAL, LOCAL_SERIAL) and self._paxos is not None:
            return None
        return point_select(bound, self._reads, cl, self._clock.now_seconds())

    def tablet_maps(self) -> Mapping[uuid.UUID, TabletMap]:
        return self._stores.tablet_maps()

    async def truncate(self, table: TableDef) -> Result:
        for derived in derived_tables(
            table, self._views_of(table)
        ):  # views and index entries go with the data
            await self._writes.truncate(derived)
        await self._writes.truncate(table)
        return VoidResult()


def batch_receivers(
    stmt: ast.BatchStatement,
    table_of: Callable[[ast.QualifiedName], TableDef],
    routines_of: Callable[[TableDef], KeyspaceSchema | None] = lambda table: None,
) -> list[Receiver]:
    """Bind receivers of a BATCH: its own USING clause's, then each statement's, in order (markers
    are numbered across it); ``routines_of`` gives a table's keyspace (its user functions)."""
    out = attribute_receivers(stmt.attributes)
    for sub in stmt.statements:
        table = table_of(sub.table)
        out.extend(receivers(sub, table, routines_of(table)))
    return out


def catalog_views(catalog: Callable[[], Catalog]) -> ViewsOf:
    """``ViewsOf`` reading the node's current catalog; every write asks, so the answer is kept
    per table until the catalog object changes (a schema change replaces it)."""
    seen: list[Catalog | None] = [None]
    cache: dict[tuple[str, str], Sequence[ViewDef]] = {}

    def views_of(table: TableDef) -> Sequence[ViewDef]:
        current = catalog()
        if current is not seen[0]:
            seen[0] = current
            cache.clear()
        key = (table.keyspace, table.name)
        found = cache.get(key)
        if found is None:
            ks = current.keyspace(table.keyspace)
            found = cache[key] = () if ks is None else tuple(ks.views_of(table.name))
        return found

    return views_of
