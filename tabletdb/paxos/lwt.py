"""Lightweight transactions: read the partition, check the IF clauses, write — atomically.

Two ways to make that atomic. With a `PaxosRounds` (a node in a cluster), one Paxos round
across the partition's replicas: the promise quorum's reads are reconciled, the conditions are
checked against them, and the mutations (stamped with the ballot's time, as Cassandra does) are
the proposed value. Without one (a lone node, unit tests), the partition's lock is held from
the read until the write is durable, which is the same linearizable outcome on one node.

A conditional BATCH is one such transaction: every statement on one partition of one table,
all conditions checked against the same read, all mutations in one value.

The result follows Cassandra: ``[applied]``, and when not applied the current values (the whole
row for IF NOT EXISTS, the columns the conditions name otherwise; nothing when IF EXISTS finds
no row; for a batch the primary key and condition columns of each row the conditions read).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tabletdb.coordinator.executor import PartitionLocks, ServerClock, WriteExecutor
from tabletdb.coordinator.rows import partition_rows
from tabletdb.cql import ast, codec
from tabletdb.cql.consistency import LOCAL_SERIAL, SERIAL
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.results import ColumnSpec, RowsMetadata, RowsResult
from tabletdb.cql.types import BOOLEAN
from tabletdb.paxos.messages import Ballot
from tabletdb.paxos.rounds import PaxosRounds, Reconciler, cells_in, encode_mutations
from tabletdb.replica.stores import DataStores
from tabletdb.schema.model import ColumnDef, TableDef
from tabletdb.statements.bound_modification import BoundModification
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.conditions import BoundConditions
from tabletdb.statements.keys import partition_key
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Bound, ClusteringSlice, Mutation
from tabletdb.storage.tablet_store import TabletStore

Row = dict[str, Any]
Write = Callable[[TableDef, Sequence[Mutation]], Awaitable[object]]
RowAt = Callable[[bytes | None], Row | None]
"""The current row at a clustering key (None: the partition's first row or its static row)."""
Decision = tuple[list[Mutation] | None, RowsResult]
_RECONCILER = Reconciler()


def is_conditional(stmt: ast.Statement) -> bool:
    if isinstance(stmt, ast.InsertStatement):
        return stmt.if_not_exists
    if isinstance(stmt, ast.UpdateStatement | ast.DeleteStatement):
        return stmt.if_exists or bool(stmt.conditions)
    return False


def _row_in(store: TabletStore, table: TableDef, key: bytes, ck: bytes | None, now: int) -> Row | None:
    slice_ = (
        ClusteringSlice() if ck is None or not table.clustering_key else ClusteringSlice(Bound(ck), Bound(ck))
    )
    data = store.read_partition(key, now, slice_, limit=1)
    if data is None:
        return None
    for row in partition_rows(table, data, None, static_only_row=True):
        return row.values
    return None


def _result(table: TableDef, applied: bool, shown: Sequence[ColumnDef], current: Row | None) -> RowsResult:
    columns = [ColumnSpec(table.keyspace, table.name, "[applied]", BOOLEAN)]
    values: list[bytes | None] = [codec.serialize(BOOLEAN, applied)]
    if not applied and current is not None:
        for col in shown:
            columns.append(ColumnSpec(table.keyspace, table.name, col.name, col.type))
            value = current.get(col.name)
            values.append(None if value is None else codec.serialize(col.type, value))
    return RowsResult(RowsMetadata(columns), [values])


def _refuse_timestamp(stmt: ast.ModificationStatement) -> None:
    if stmt.attributes.timestamp is not None:
        raise InvalidRequest("Cannot provide custom timestamp for conditional updates")


async def execute_conditional(
    writer: WriteExecutor,
    clock: ServerClock,
    locks: PartitionLocks,
    stores: DataStores,
    bound: BoundModification,
    timestamp: int | None,
    write: Write,
    paxos: PaxosRounds | None = None,
    serial: int | None = None,
) -> RowsResult:
    """``write`` applies the mutations durably (and keeps views up to date) on a lone node, where
    the partition is read from this node's ``stores`` under its lock in ``locks``.

    Only USING TIMESTAMP is refused: drivers send a protocol-level default timestamp with every
    request, and Cassandra and ScyllaDB ignore it for conditional statements (their write time
    comes from the Paxos ballot), so ``timestamp`` is deliberately unused here.
    """
    del timestamp
    table = bound.table
    _refuse_timestamp(bound.statement)
    key, token, ck = bound.conditional_target()
    conditions = bound.conditions()
    conditions.evaluate(None)  # invalid conditions fail before any round starts

    def decide(row_at: RowAt, ts: int | None, cells: CurrentCells | None) -> Decision:
        current = row_at(ck)
        applied, shown = conditions.evaluate(current)
        mutations = writer.mutations_for(bound, ts, current=cells) if applied else None
        return mutations, _result(table, applied, shown, current)

    return await _transact(clock, locks, stores, table, key, token, write, paxos, serial, decide)


async def execute_conditional_batch(
    writer: WriteExecutor,
    clock: ServerClock,
    locks: PartitionLocks,
    stores: DataStores,
    statements: Sequence[BoundModification],
    write: Write,
    paxos: PaxosRounds | None = None,
    serial: int | None = None,
) -> RowsResult:
    table = statements[0].table
    if any(s.table.id != table.id for s in statements):
        raise InvalidRequest("Batch with conditions cannot span multiple tables")
    if table.is_counter:
        raise InvalidRequest("Cannot include a counter statement in a conditional batch")
    keys: set[tuple[bytes, int]] = set()
    checks: list[tuple[BoundConditions, bytes | None]] = []
    for bound in statements:
        _refuse_timestamp(bound.statement)
        if is_conditional(bound.statement):
            key, token, ck = bound.conditional_target()
            conditions = bound.conditions()
            conditions.evaluate(None)
            checks.append((conditions, ck))
            keys.add((key, token))
        else:
            keys.update((m.partition_key, m.token) for m in writer.mutations_for(bound, 0))
    if len(keys) != 1:
        raise InvalidRequest("Batch with conditions cannot span multiple partitions")
    key, token = keys.pop()

    def decide(row_at: RowAt, ts: int | None, cells: CurrentCells | None) -> Decision:
        at = ts if ts is not None else clock.timestamp()
        seen: list[tuple[Row | None, Sequence[ColumnDef]]] = []
        holds = True
        for conditions, ck in checks:
            current = row_at(ck)
            ok, shown = conditions.evaluate(current)
            seen.append((current, shown))
            holds = holds and ok
        if not holds:
            return None, _batch_result(table, seen)
        mutations = [m for bound in statements for m in writer.mutations_for(bound, at, current=cells)]
        return mutations, _result(table, True, [], None)

    return await _transact(clock, locks, stores, table, key, token, write, paxos, serial, decide)


async def serial_read_barrier(paxos: PaxosRounds, select: BoundSelect, serial: int) -> None:
    """A SELECT at SERIAL/LOCAL_SERIAL: first a Paxos round that proposes nothing.

    It finishes a transaction left accepted but uncommitted and brings the latest commit to a
    quorum, so the QUORUM read that follows sees every value Paxos may have chosen (Cassandra's
    read with Paxos does the same).
    """
    partition_keys = select.restrictions().partition_keys
    if partition_keys is None or len(partition_keys) != 1:
        raise InvalidRequest(
            "SERIAL/LOCAL_SERIAL consistency may only be requested for one partition at a time"
        )
    key, token = partition_key(select.table, partition_keys[0])
    await paxos.transact(select.table, token, key, lambda ballot, reads: None, serial)


async def _transact(
    clock: ServerClock,
    locks: PartitionLocks,
    stores: DataStores,
    table: TableDef,
    key: bytes,
    token: int,
    write: Write,
    paxos: PaxosRounds | None,
    serial: int | None,
    decide: Callable[[RowAt, int | None, CurrentCells | None], Decision],
) -> RowsResult:
    if paxos is None:
        async with locks.lock(table, key):
            store, now = stores.store(table, token), clock.now_seconds()
            mutations, result = decide(lambda ck: _row_in(store, table, key, ck, now), None, None)
            if mutations is not None:
                await write(table, mutations)
        return result
    results: list[RowsResult] = []

    def on_read(ballot: Ballot, reads: Sequence[bytes | None]) -> bytes | None:
        now = clock.now_seconds()
        with _RECONCILER.reconciled(reads) as merged:
            row_at: RowAt = (
                (lambda ck: None) if merged is None else (lambda ck: _row_in(merged, table, key, ck, now))
            )
            mutations, result = decide(row_at, ballot.micros, cells_in(merged, now))
        results.append(result)
        return None if mutations is None else encode_mutations(mutations)

    await paxos.transact(table, token, key, on_read, LOCAL_SERIAL if serial == LOCAL_SERIAL else SERIAL)
    return results[-1]


def _batch_result(table: TableDef, seen: list[tuple[Row | None, Sequence[ColumnDef]]]) -> RowsResult:
    """Not applied: [applied], the primary key and the conditions' columns of each row read."""
    columns = list(table.partition_key) + list(table.clustering_key)
    for _, shown in seen:
        columns += [c for c in shown if c not in columns]
    specs = [ColumnSpec(table.keyspace, table.name, "[applied]", BOOLEAN)]
    specs += [ColumnSpec(table.keyspace, table.name, c.name, c.type) for c in columns]
    false = codec.serialize(BOOLEAN, False)
    rows: list[list[bytes | None]] = []
    for current, _ in seen:
        if current is not None:
            row: list[bytes | None] = [false]
            for c in columns:
                v = current.get(c.name)
                row.append(None if v is None else codec.serialize(c.type, v))
            rows.append(row)
    return RowsResult(RowsMetadata(specs), rows or [[false] + [None] * len(columns)])
