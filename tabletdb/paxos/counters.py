"""Counters: every update of a replicated partition is one Paxos read-modify-write.

A counter update arrives as *deltas* (the statement built against an empty current value). Where
the partition has other replicas, the coordinator runs a Paxos round on it (``paxos.read_modify_write``): the
promise quorum's reads, reconciled, hold every total ever committed; ``add_deltas`` adds the
deltas to them and the new totals are the proposed value, committed on a quorum and at the
client's consistency level. Paxos chooses at most one value per ballot and only on a read no
other chosen value has overtaken, so no increment is lost whatever the coordinators believe
about who is up. A total is stamped with the ballot's microseconds, raised above the timestamp
of the total it was computed from, so totals only move forward under last-write-wins and a
QUORUM read sees the latest one a QUORUM commit left. Updates of one partition that meet on
this coordinator share rounds (``counter_batches``) instead of contending with each other.

Where this node is the partition's only replica (a lone node, RF=1 here) the update keeps the
cheaper path: the partition's lock held from the read of the local total to its durable write.

Limits, stated rather than hidden: an update needs a live quorum of the partition's replicas
(in every DC: the round is SERIAL, so DCs cannot each build on their own total); a client retry
of a timed-out update can count twice (as in Cassandra); a counter deletion keeps the
statement's timestamp, so an increment stamped below it (a coordinator's clock behind the one
that deleted) stays shadowed, as Cassandra warns for deleted counters.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence

from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT
from tabletdb.paxos.counter_batches import CounterBatches
from tabletdb.paxos.read_modify_write import read_modify_write
from tabletdb.paxos.rounds import PaxosRounds
from tabletdb.schema.model import TableDef
from tabletdb.statements.modifications import CurrentCells
from tabletdb.storage.mutation import Cell, Mutation, RowWrite

Lock = Callable[[TableDef, bytes], asyncio.Lock]
Clock = Callable[[], int]
"""Microsecond timestamps, strictly increasing on this node."""
LocalCells = Callable[[TableDef], CurrentCells]
"""This node's stores as ``CurrentCells`` (the local path's read)."""


def add_deltas(delta: Mutation, current: CurrentCells, stamp: int) -> Mutation:
    """The new totals: each counter cell of ``delta`` plus its current value, stamped ``stamp``
    or just above the current total's timestamp, whichever is later (pure; Paxos's value).

    Rows without counter cells (deletions) and tombstones pass unchanged. Raises InvalidRequest
    when a total would leave the bigint range.
    """
    rows = []
    for row in delta.rows:
        if not any(c.value is not None for c in row.cells):
            rows.append(row)
            continue
        cells = tuple(_add(delta, row, c, current, stamp) for c in row.cells)
        rows.append(dataclasses.replace(row, cells=cells))
    return dataclasses.replace(delta, rows=tuple(rows))


def _add(delta: Mutation, row: RowWrite, cell: Cell, current: CurrentCells, stamp: int) -> Cell:
    if cell.value is None:
        return cell
    value = int(codec.deserialize(BIGINT, cell.value))
    timestamp = stamp
    found = current(delta.partition_key, delta.token, row.clustering, row.static, cell.column)
    if found:
        value += int(codec.deserialize(BIGINT, found[0].value))
        timestamp = max(timestamp, found[0].timestamp + 1)
    if not -(1 << 63) <= value < (1 << 63):
        raise InvalidRequest(f"Counter {cell.column} would overflow")
    return dataclasses.replace(cell, value=codec.serialize(BIGINT, value), timestamp=timestamp)


class CounterCoordinator:
    """One per node (the node's wiring builds it), so updates of a partition that meet on this
    coordinator share Paxos rounds."""

    def __init__(
        self,
        replicas: Replicas,
        writes: WriteCoordinator,
        local_cells: LocalCells,
        lock: Lock,
        timestamps: Clock,
        now_seconds: Callable[[], int],
    ) -> None:
        self.replicas = replicas
        self._writes = writes
        self._local_cells = local_cells
        self._lock = lock
        self._timestamps = timestamps
        self._now = now_seconds
        self._batches = CounterBatches()

    async def update(
        self, table: TableDef, deltas: Sequence[Mutation], cl: int, paxos: PaxosRounds | None = None
    ) -> None:
        """Apply counter deltas at ``cl``, each partition on its own (as Cassandra's counter batches).

        Partitions run concurrently; deltas of one partition (a COUNTER batch naming it twice) one
        after the other, so they do not contend with each other for its Paxos rounds.
        """
        per_partition: dict[bytes, list[Mutation]] = {}
        for delta in deltas:
            per_partition.setdefault(delta.partition_key, []).append(delta)
        await asyncio.gather(*(self._in_turn(table, group, cl, paxos) for group in per_partition.values()))

    async def _in_turn(
        self, table: TableDef, deltas: list[Mutation], cl: int, paxos: PaxosRounds | None
    ) -> None:
        for delta in deltas:
            await self._one(table, delta, cl, paxos)

    async def _one(self, table: TableDef, delta: Mutation, cl: int, paxos: PaxosRounds | None) -> None:
        placement = self.replicas.placement
        if placement.only_local(placement.replicas(table, delta.token)):
            await self._update_sole_replica(table, delta, cl)
            return
        if paxos is None:
            raise InvalidRequest(
                f"Counter updates on {table.keyspace}.{table.name} need Paxos across its replicas, "
                "which this node does not run (maintenance mode)"
            )

        async def round_of(deltas: Mutation, level: int) -> None:
            def build(current: CurrentCells, ballot_micros: int) -> list[Mutation]:
                return [add_deltas(deltas, current, ballot_micros)]

            key = (deltas.partition_key, deltas.token)
            await read_modify_write(paxos, self.replicas, table, key, build, level, "COUNTER", self._now())

        await self._batches.submit(table.id.hex, delta, cl, round_of)

    async def _update_sole_replica(self, table: TableDef, delta: Mutation, cl: int) -> None:
        """This node is the only replica: add under the partition's lock, write durably."""
        async with self._lock(table, delta.partition_key):
            total = add_deltas(delta, self._local_cells(table), self._timestamps())
            await self._writes.write(table, [total], cl, "COUNTER")
