"""``counter_batches``: updates of one partition queued behind its round share the next one."""

from __future__ import annotations

import asyncio

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest, WriteTimeout
from tabletdb.cql.types import BIGINT
from tabletdb.paxos.counter_batches import CounterBatches, coalescible, merge
from tabletdb.storage.mutation import Cell, Mutation, RowWrite

KEY, TOKEN, MAX = b"k", 7, (1 << 63) - 1


def inc(n: int, column: str = "n", clustering: bytes = b"c", ts: int = 1) -> Mutation:
    cell = Cell(column, codec.serialize(BIGINT, n), ts)
    return Mutation(KEY, TOKEN, rows=(RowWrite(clustering, cells=(cell,)),))


def values(m: Mutation) -> dict[tuple[bytes, str], int]:
    return {
        (r.clustering, c.column): int(codec.deserialize(BIGINT, c.value or b""))
        for r in m.rows
        for c in r.cells
    }


def test_merge_sums_per_cell() -> None:
    merged = merge([inc(2), inc(-5), inc(4, "m"), inc(1, clustering=b"d")])
    assert merged is not None
    assert values(merged) == {(b"c", "n"): -3, (b"c", "m"): 4, (b"d", "n"): 1}


def test_merge_refuses_a_sum_out_of_range() -> None:
    assert merge([inc(MAX), inc(1)]) is None


def test_deletions_are_not_coalescible() -> None:
    assert coalescible(inc(1))
    assert not coalescible(Mutation(KEY, TOKEN, partition_tombstone=5))
    assert not coalescible(Mutation(KEY, TOKEN, rows=(RowWrite(b"c", cells=(Cell("n", None, 3),)),)))


class Counter:
    """A fake round: keeps one total per cell, refuses overflow like ``add_deltas``; each round
    waits for the test to release it, so the updates submitted meanwhile queue up."""

    def __init__(self, start: int = 0) -> None:
        self.total = start
        self.rounds: list[int] = []
        self.gate = asyncio.Event()

    async def run(self, delta: Mutation, cl: int) -> None:
        await self.gate.wait()
        (step,) = values(delta).values()
        self.rounds.append(step)
        if not -(1 << 63) <= self.total + step <= MAX:
            raise InvalidRequest("Counter n would overflow")
        self.total += step


def test_updates_waiting_behind_a_round_share_the_next_one() -> None:
    async def go() -> Counter:
        counter, batches = Counter(), CounterBatches()
        tasks = [asyncio.ensure_future(batches.submit("t", inc(n), 1, counter.run)) for n in range(1, 11)]
        await asyncio.sleep(0)
        counter.gate.set()
        await asyncio.gather(*tasks)
        return counter

    counter = asyncio.run(go())
    assert counter.total == 55
    assert counter.rounds == [1, 54]  # the first alone, the nine that queued behind it at once


def test_an_overflowing_sum_is_retried_one_by_one_so_only_the_culprit_fails() -> None:
    async def go() -> tuple[Counter, list[object]]:
        counter, batches = Counter(start=MAX - 10), CounterBatches()
        tasks = [asyncio.ensure_future(batches.submit("t", inc(n), 1, counter.run)) for n in (1, 3, 20, 4)]
        await asyncio.sleep(0)
        counter.gate.set()
        return counter, list(await asyncio.gather(*tasks, return_exceptions=True))

    counter, outcomes = asyncio.run(go())
    assert [type(o).__name__ for o in outcomes] == ["NoneType", "NoneType", "InvalidRequest", "NoneType"]
    assert counter.total == MAX - 2


def test_a_failed_round_fails_every_update_it_carried_and_the_queue_moves_on() -> None:
    async def go() -> list[object]:
        batches, calls = CounterBatches(), []
        gate = asyncio.Event()

        async def run(delta: Mutation, cl: int) -> None:
            await gate.wait()
            calls.append(delta)
            if len(calls) == 2:
                raise WriteTimeout("timed out", cl, 0, 2, "COUNTER")

        tasks = [asyncio.ensure_future(batches.submit("t", inc(1), 1, run)) for _ in range(3)]
        late = [asyncio.ensure_future(batches.submit("t", inc(1), 2, run))]  # another level: its own round
        await asyncio.sleep(0)
        gate.set()
        return list(await asyncio.gather(*tasks, *late, return_exceptions=True))

    outcomes = asyncio.run(go())
    assert [type(o).__name__ for o in outcomes] == ["NoneType", "WriteTimeout", "WriteTimeout", "NoneType"]


@pytest.mark.parametrize("first", ["increment", "deletion"])
def test_a_deletion_keeps_its_place_in_the_queue(first: str) -> None:
    async def go() -> list[str]:
        batches, seen = CounterBatches(), []
        gate = asyncio.Event()

        async def run(delta: Mutation, cl: int) -> None:
            await gate.wait()
            seen.append(
                "deletion" if delta.partition_tombstone is not None else f"+{sum(values(delta).values())}"
            )

        deletion = Mutation(KEY, TOKEN, partition_tombstone=5)
        order = [inc(1), deletion, inc(2), inc(3)] if first == "increment" else [deletion, inc(2), inc(3)]
        tasks = [asyncio.ensure_future(batches.submit("t", m, 1, run)) for m in order]
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(*tasks)
        return seen

    expected = ["+1", "deletion", "+5"] if first == "increment" else ["deletion", "+5"]
    assert asyncio.run(go()) == expected
