"""Group commit: writes of one event-loop tick share a transaction; failures stay isolated."""

from __future__ import annotations

import asyncio

import pytest

from tabletdb.dht import token_of
from tabletdb.storage.group_commit import GroupCommitter
from tabletdb.storage.mutation import Cell, Mutation, RowWrite
from tabletdb.storage.tablet_store import TabletStore


def put(pk: bytes, value: bytes) -> Mutation:
    return Mutation(pk, token_of(pk), rows=(RowWrite(b"", cells=(Cell("v", value, 1),)),))


def test_concurrent_writes_share_one_commit() -> None:
    async def main(store: TabletStore) -> GroupCommitter:
        committer = GroupCommitter(store)
        await asyncio.gather(*(committer.apply([put(bytes([i]), b"x")]) for i in range(1, 21)))
        await committer.apply([put(b"late", b"y")])
        return committer

    with TabletStore(":memory:") as store:
        committer = asyncio.run(main(store))
        assert committer.flushes == 2
        assert all(store.read_partition(bytes([i]), 0) is not None for i in range(1, 21))
        assert store.read_partition(b"late", 0) is not None


def test_a_failing_write_does_not_fail_its_neighbours() -> None:
    bad = Mutation(b"bad", 2**70)  # not an int64: SQLite refuses to bind it

    async def main(store: TabletStore) -> list[BaseException | None]:
        committer = GroupCommitter(store)
        results = await asyncio.gather(
            committer.apply([put(b"a", b"1")]),
            committer.apply([bad]),
            committer.apply([put(b"b", b"2")]),
            return_exceptions=True,
        )
        return list(results)

    with TabletStore(":memory:") as store:
        results = asyncio.run(main(store))
        assert results[0] is None and results[2] is None
        assert isinstance(results[1], OverflowError)
        assert store.read_partition(b"a", 0) is not None
        assert store.read_partition(b"b", 0) is not None
        assert store.read_partition(b"bad", 0) is None


def test_failed_batch_rolls_back_entirely() -> None:
    with TabletStore(":memory:") as store:
        with pytest.raises(OverflowError):
            store.apply([put(b"a", b"1"), Mutation(b"bad", 2**70)])
        assert store.read_partition(b"a", 0) is None
