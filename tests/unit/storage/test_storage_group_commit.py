"""Group commit: writes of one event-loop tick share a transaction; failures stay isolated."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from tabletdb.dht import token_of
from tabletdb.storage.commit_pool import CommitPool
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


def test_file_stores_commit_on_worker_threads_and_keep_every_write(tmp_path: Path) -> None:
    """Writes to many files committed concurrently off the loop; all acked writes are on disk."""
    seen_threads: set[str] = set()

    class Recording(TabletStore):
        def apply(self, mutations: Iterable[Mutation]) -> None:
            seen_threads.add(threading.current_thread().name)
            super().apply(mutations)

    stores = [Recording(tmp_path / f"t{i}.db") for i in range(4)]

    async def main() -> list[GroupCommitter]:
        committers = [GroupCommitter(store, CommitPool(workers=4)) for store in stores]
        writes = [committers[i % 4].apply([put(i.to_bytes(2, "big"), b"v")]) for i in range(200)]
        await asyncio.gather(*writes)
        return committers

    committers = asyncio.run(main())
    assert threading.main_thread().name not in seen_threads
    assert all(c.flushes >= 1 for c in committers)
    for store in stores:
        store.close()
    # reopened from disk: every acknowledged write is there
    for i in range(200):
        with TabletStore(tmp_path / f"t{i % 4}.db") as reopened:
            assert reopened.read_partition(i.to_bytes(2, "big"), 0) is not None


def test_writes_arriving_during_a_commit_form_the_next_batch(tmp_path: Path) -> None:
    release = threading.Event()
    entered = threading.Event()

    class Slow(TabletStore):
        def apply(self, mutations: Iterable[Mutation]) -> None:
            entered.set()
            release.wait(60)
            super().apply(mutations)

    async def main(store: TabletStore) -> GroupCommitter:
        committer = GroupCommitter(store, CommitPool(workers=2))
        first = asyncio.ensure_future(committer.apply([put(b"first", b"1")]))
        await asyncio.to_thread(entered.wait, 60)  # the first batch is now blocked inside its commit
        later = [asyncio.ensure_future(committer.apply([put(bytes([i]), b"2")])) for i in range(10)]
        await asyncio.sleep(0.05)
        assert not first.done() and not any(f.done() for f in later)
        release.set()
        await asyncio.gather(first, *later)
        return committer

    with Slow(tmp_path / "slow.db") as store:
        committer = asyncio.run(main(store))
        assert committer.flushes == 2  # one for "first", one for the ten queued behind it
        assert all(store.read_partition(bytes([i]), 0) is not None for i in range(10))


def test_a_failing_write_on_a_file_store_does_not_fail_its_neighbours(tmp_path: Path) -> None:
    async def main(store: TabletStore) -> list[BaseException | None]:
        committer = GroupCommitter(store, CommitPool(workers=1))
        results = await asyncio.gather(
            committer.apply([put(b"a", b"1")]),
            committer.apply([Mutation(b"bad", 2**70)]),
            committer.apply([put(b"b", b"2")]),
            return_exceptions=True,
        )
        return list(results)

    with TabletStore(tmp_path / "f.db") as store:
        results = asyncio.run(main(store))
        assert results[0] is None and results[2] is None
        assert isinstance(results[1], OverflowError)
        assert store.read_partition(b"a", 0) is not None and store.read_partition(b"bad", 0) is None


def test_reads_see_only_committed_writes(tmp_path: Path) -> None:
    """The reading connection never sees a transaction the writer has not committed."""
    with TabletStore(tmp_path / "r.db") as store:
        writer = store._writer
        with store._write_lock:
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("INSERT INTO partitions (pk, token, tombstone, flags) VALUES (x'01', 1, NULL, 0)")
            writer.execute("INSERT INTO rows VALUES (x'01', 1, x'', 5, 0, 0, NULL)")
            assert store.read_partition(b"\x01", 0) is None
            writer.execute("COMMIT")
        assert store.read_partition(b"\x01", 0) is not None
