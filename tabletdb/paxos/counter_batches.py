"""Counter updates of one partition on one coordinator share Paxos rounds instead of fighting.

Two rounds of the same coordinator on the same partition can only refuse each other's ballots
and back off. So a coordinator runs one counter round per partition at a time; the updates that
arrive meanwhile wait, and the next round carries all of them at once (same consistency level,
increments only), their deltas summed. Summing is exact: increments commute, and the round's
total is what applying them one after the other in some order gives. If that sum would
overflow, they are retried one per round, so only the update that overflows is refused. The
round's outcome (applied, timeout, unavailable) is every carried update's outcome.

Different coordinators still contend; Paxos, not this queue, keeps them correct.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT
from tabletdb.storage.mutation import Cell, Mutation, RowWrite

Run = Callable[[Mutation, int], Awaitable[None]]
"""One Paxos round: (deltas of one partition, consistency level) -> applied, or raises."""
_BIGINT = range(-(1 << 63), 1 << 63)


def coalescible(delta: Mutation) -> bool:
    """Only plain increments can be summed (a deletion must stay its own round, in order)."""
    if delta.partition_tombstone is not None or delta.range_tombstones:
        return False
    return all(
        row.marker is None
        and row.tombstone is None
        and not row.collection_tombstones
        and all(c.value is not None and not c.path and not c.ttl for c in row.cells)
        for row in delta.rows
    )


def merge(deltas: Sequence[Mutation]) -> Mutation | None:
    """One delta per counter cell, the sum of ``deltas`` (one partition, all `coalescible`);
    None when a sum leaves the bigint range (then they run one by one)."""
    sums: dict[tuple[bool, bytes], dict[str, tuple[int, int]]] = {}
    for delta in deltas:
        for row in delta.rows:
            cells = sums.setdefault((row.static, row.clustering), {})
            for c in row.cells:
                assert c.value is not None
                total, ts = cells.get(c.column, (0, 0))
                cells[c.column] = (total + int(codec.deserialize(BIGINT, c.value)), max(ts, c.timestamp))
    rows = []
    for (static, clustering), cells in sums.items():
        if any(total not in _BIGINT for total, _ in cells.values()):
            return None
        built = tuple(Cell(col, codec.serialize(BIGINT, total), ts) for col, (total, ts) in cells.items())
        rows.append(RowWrite(clustering, static=static, cells=built))
    first = deltas[0]
    return Mutation(first.partition_key, first.token, rows=tuple(rows))


@dataclass
class _Waiting:
    delta: Mutation
    cl: int
    result: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class CounterBatches:
    """Per (table, partition): the updates waiting for the round in flight to finish."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str, bytes], list[_Waiting]] = {}
        self._busy: set[tuple[str, bytes]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, table_id: str, delta: Mutation, cl: int, run: Run) -> None:
        """Apply ``delta`` at ``cl`` through ``run``, alone or with the others waiting; raises
        what its round raised."""
        key = (table_id, delta.partition_key)
        me = _Waiting(delta, cl)
        me.result.add_done_callback(_retrieved)  # a client gone away: no "never retrieved" noise
        self._queues.setdefault(key, []).append(me)
        if key not in self._busy:
            self._start_next(key, run)
        await asyncio.shield(me.result)  # a client that goes away does not cancel the others' round

    def _start_next(self, key: tuple[str, bytes], run: Run) -> None:
        queue = self._queues.pop(key, [])
        if not queue:
            return
        batch = [queue[0]]
        if coalescible(queue[0].delta):
            for w in queue[1:]:
                if w.cl != queue[0].cl or not coalescible(w.delta):
                    break
                batch.append(w)
        if len(queue) > len(batch):
            self._queues[key] = queue[len(batch) :]
        self._busy.add(key)
        task = asyncio.ensure_future(self._run(key, batch, run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, key: tuple[str, bytes], batch: list[_Waiting], run: Run) -> None:
        try:
            await _apply(batch, run)
        finally:
            self._busy.discard(key)
            self._start_next(key, run)


async def _apply(batch: list[_Waiting], run: Run) -> None:
    merged = batch[0].delta if len(batch) == 1 else merge([w.delta for w in batch])
    if merged is None:
        for w in batch:
            await _apply([w], run)
        return
    try:
        await run(merged, batch[0].cl)
    except InvalidRequest as exc:
        if len(batch) == 1:
            _settle(batch, exc)
            return
        for w in batch:  # an overflow of the sum: find whose update overflows, apply the others
            await _apply([w], run)
        return
    except Exception as exc:
        _settle(batch, exc)
        return
    _settle(batch, None)


def _retrieved(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(batch: list[_Waiting], exc: Exception | None) -> None:
    for w in batch:
        if w.result.done():
            continue
        if exc is None:
            w.result.set_result(None)
        else:
            w.result.set_exception(exc)
