"""Partition locks for view/index-deriving writes, and the table barrier index builds take."""

from __future__ import annotations

import asyncio
import uuid

from tabletdb.replica.derived_locks import DerivedLocks

TABLE = uuid.UUID(int=1)


def test_writes_to_other_partitions_overlap_and_same_partition_waits() -> None:
    async def go() -> None:
        locks = DerivedLocks()
        order: list[str] = []
        inside_a = asyncio.Event()
        release_a = asyncio.Event()

        async def first() -> None:
            async with locks.writing(TABLE, [b"a"]):
                order.append("a1 in")
                inside_a.set()
                await release_a.wait()
                order.append("a1 out")

        async def other_partition() -> None:
            await inside_a.wait()
            async with locks.writing(TABLE, [b"b"]):
                order.append("b in")  # does not wait for a1

        async def same_partition() -> None:
            await inside_a.wait()
            async with locks.writing(TABLE, [b"a", b"b"]):
                order.append("a2 in")

        tasks = [asyncio.create_task(f()) for f in (first, other_partition, same_partition)]
        await inside_a.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["a1 in", "b in"]
        release_a.set()
        await asyncio.gather(*tasks)
        assert order == ["a1 in", "b in", "a1 out", "a2 in"]
        assert not locks._partitions  # nothing left behind once released

    asyncio.run(go())


def test_build_waits_for_writes_in_flight_and_holds_new_ones() -> None:
    async def go() -> None:
        locks = DerivedLocks()
        order: list[str] = []
        writing = asyncio.Event()
        finish_write = asyncio.Event()
        building = asyncio.Event()
        finish_build = asyncio.Event()

        async def write(name: str, hold: asyncio.Event | None) -> None:
            async with locks.writing(TABLE, [name.encode()]):
                order.append(f"{name} in")
                if hold is not None:
                    writing.set()
                    await hold.wait()

        async def build() -> None:
            await writing.wait()
            async with locks.building(TABLE):
                order.append("build in")
                building.set()
                await finish_build.wait()
                order.append("build out")

        w1 = asyncio.create_task(write("w1", finish_write))
        b = asyncio.create_task(build())
        await writing.wait()
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["w1 in"]  # the build waits for w1
        finish_write.set()
        await building.wait()
        w2 = asyncio.create_task(write("w2", None))
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["w1 in", "build in"]  # w2 waits for the build
        finish_build.set()
        await asyncio.gather(w1, b, w2)
        assert order == ["w1 in", "build in", "build out", "w2 in"]

    asyncio.run(go())
