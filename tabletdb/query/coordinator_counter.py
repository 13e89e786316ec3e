"""Counters across replicas: every update of a partition goes through one leader replica.

A counter update arrives as *deltas* (the statement built against an empty current value). The
coordinator forwards them to the partition's leader, the first live replica in placement
order (itself when it is that replica). The leader, under its per-partition lock, reads the
current totals at QUORUM (a read that also repairs the replicas it contacts), adds the deltas,
and writes the resulting totals to all replicas at the client's consistency level. A total is
written with a timestamp above the one it was computed from, so totals only move forward under
last-write-wins, and a QUORUM read always sees the latest total a QUORUM write left.

Limits, stated rather than hidden: while two coordinators disagree about which replica is up
first (a failure-detector flap), two leaders may compute from the same total and one increment
can be lost; a counter update needs a live quorum of replicas to read from; a client retry of
a timed-out update can count twice (as in Cassandra).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest, WriteFailure, WriteTimeout
from tabletdb.cql.types import BIGINT
from tabletdb.query.coordinator_cl import QUORUM, ResponseTracker, check_available
from tabletdb.query.coordinator_context import VERB_COUNTER, Replicas
from tabletdb.query.coordinator_read import ReadCoordinator
from tabletdb.query.coordinator_write import WriteCoordinator
from tabletdb.query.replica_placement import Replica, ReplicaSet
from tabletdb.query.replica_wire import mutations_from_plain, mutations_to_plain
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import Bound, Cell, ClusteringSlice, Mutation, RowWrite
from tabletdb.storage.reconcile import LiveCell

Lock = Callable[[TableDef, bytes], asyncio.Lock]
Clock = Callable[[], int]
"""Microsecond timestamps, strictly increasing on this node."""


class CounterCoordinator:
    def __init__(
        self,
        replicas: Replicas,
        writes: WriteCoordinator,
        reads: ReadCoordinator,
        lock: Lock,
        timestamps: Clock,
        now_seconds: Callable[[], int],
    ) -> None:
        self.replicas = replicas
        self._writes = writes
        self._reads = reads
        self._lock = lock
        self._timestamps = timestamps
        self._now = now_seconds

    async def update(self, table: TableDef, deltas: Sequence[Mutation], cl: int) -> None:
        """Apply counter deltas at ``cl``: each partition's deltas go to its leader replica."""
        ctx = self.replicas
        jobs = []
        for replicas, group in self._writes.groups(table, deltas):
            alive = check_available(cl, replicas, ctx.local_dc, ctx.is_up, write=True)
            jobs.append(self._through_leader(table, list(alive) or [replicas[0]], replicas, group, cl))
        await asyncio.gather(*jobs)

    async def _through_leader(
        self,
        table: TableDef,
        candidates: list[Replica],
        replicas: ReplicaSet,
        deltas: list[Mutation],
        cl: int,
    ) -> None:
        """Lead locally or forward to the first candidate; a candidate that refuses the connection
        never received the deltas (the failure detector has not noticed it died yet), so the next
        one may lead without risking a double increment."""
        for i, leader in enumerate(candidates):
            if self.replicas.is_local(leader):
                await self.lead(table, deltas, cl)
                return
            try:
                await self._forward(table, leader, replicas, deltas, cl, last=i == len(candidates) - 1)
                return
            except ConnectionError as exc:
                if not _never_delivered(exc):
                    raise
                continue

    async def _forward(
        self,
        table: TableDef,
        leader: Replica,
        replicas: ReplicaSet,
        deltas: list[Mutation],
        cl: int,
        last: bool = True,
    ) -> None:
        """Hand deltas to a remote leader; its failure becomes the client's WriteTimeout/Failure
        (a refused connection is re-raised as is unless ``last``, so the caller tries another)."""
        ctx = self.replicas
        payload = [table.id.bytes, cl, mutations_to_plain(deltas)]
        block_for = ResponseTracker(cl, replicas, ctx.local_dc, write=True).block_for
        what = f"counter update of {table.keyspace}.{table.name} through leader {leader.host_id}"
        try:
            await ctx.call(leader, VERB_COUNTER, payload, ctx.timeouts.counter_write)
        except TimeoutError:
            raise WriteTimeout(f"Timed out: {what}", cl, 0, block_for, "COUNTER") from None
        except ConnectionError as exc:
            if not last and _never_delivered(exc):
                raise
            raise WriteFailure(f"Failed: {what}: {exc}", cl, 0, block_for, 1, "COUNTER") from exc
        except Exception as exc:
            raise WriteFailure(f"Failed: {what}: {exc}", cl, 0, block_for, 1, "COUNTER") from exc

    async def lead(self, table: TableDef, deltas: Sequence[Mutation], cl: int) -> None:
        """As the leader: read the totals, add the deltas, write the new totals at ``cl``."""
        for delta in deltas:
            async with self._lock(table, delta.partition_key):
                total = await self._total(table, delta)
                await self._writes.write(table, [total], cl, "COUNTER")

    async def handle(self, table: TableDef, payload: list[Any]) -> None:
        """The leader side of ``VERB_COUNTER`` (``payload`` as ``update`` sends it)."""
        _, cl, plain = payload
        await self.lead(table, mutations_from_plain(plain), cl)

    async def _total(self, table: TableDef, delta: Mutation) -> Mutation:
        rows = []
        for row in delta.rows:
            if not any(c.value is not None for c in row.cells):
                rows.append(row)
                continue
            current = await self._current(table, delta, row)
            cells = tuple(self._add(c, current) for c in row.cells)
            rows.append(
                RowWrite(
                    row.clustering, row.static, row.marker, row.tombstone, cells, row.collection_tombstones
                )
            )
        return Mutation(
            delta.partition_key, delta.token, delta.partition_tombstone, tuple(rows), delta.range_tombstones
        )

    async def _current(self, table: TableDef, delta: Mutation, row: RowWrite) -> dict[str, LiveCell]:
        slice_ = (
            ClusteringSlice() if row.static else ClusteringSlice(Bound(row.clustering), Bound(row.clustering))
        )
        data = await self._reads.read_partition(
            table, delta.partition_key, delta.token, self._now(), slice_, False, QUORUM
        )
        if data is None:
            return {}
        found = data.static_row if row.static else (data.rows[0] if data.rows else None)
        return {} if found is None else {c.column: c for c in found.cells}

    def _add(self, delta: Cell, current: dict[str, LiveCell]) -> Cell:
        if delta.value is None:
            return delta
        base = current.get(delta.column)
        value = int(codec.deserialize(BIGINT, delta.value))
        timestamp = self._timestamps()
        if base is not None:
            value += int(codec.deserialize(BIGINT, base.value))
            timestamp = max(timestamp, base.timestamp + 1)
        if not -(1 << 63) <= value < (1 << 63):
            raise InvalidRequest(f"Counter {delta.column} would overflow")
        return Cell(delta.column, codec.serialize(BIGINT, value), timestamp, delta.path)


def _never_delivered(exc: BaseException) -> bool:
    """A refused connection: the request cannot have reached the peer (unlike a connection lost
    after sending), so retrying it elsewhere cannot apply the deltas twice."""
    return isinstance(exc.__cause__, ConnectionRefusedError)
