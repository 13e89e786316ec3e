"""Node-wide commit: one log record per tick for every store, replayed after a crash; rows logged
before a removal never come back; a torn tail is dropped; trimming keeps the log small."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.dht import token_of
from tabletdb.storage import node_commit
from tabletdb.storage.commit_log import CommitLog
from tabletdb.storage.group_commit import GroupCommitter
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.node_commit import NodeCommitter
from tabletdb.storage.tablet_store import TabletStore


def put(pk: bytes, value: bytes | None, ts: int, ttl: int = 0, now: int = 0) -> Mutation:
    cell = Cell("v", value, ts, ttl=ttl, expiry=now + ttl if ttl else 0)
    return Mutation(pk, token_of(pk), rows=(RowWrite(b"", marker=RowMarker(ts), cells=(cell,)),))


def value_of(store: TabletStore, pk: bytes, now: int = 0) -> bytes | None:
    data = store.read_partition(pk, now)
    if data is None or not data.rows or not data.rows[0].cells:
        return None
    return data.rows[0].cells[0].value


class Node:
    """Stores under one data directory sharing a NodeCommitter; ``crash`` drops it all without
    syncing or emptying the log, and loses the rows the stores deferred, as a kill -9 would."""

    def __init__(
        self,
        root: Path,
        trim_bytes: int = 1 << 30,
        sync_period_s: float | None = None,
        skip_corrupt: bool = False,
    ) -> None:
        self.root = root
        self.node = NodeCommitter(
            root / ".commitlog" / "commit.log", root, trim_bytes=trim_bytes, sync_period_s=sync_period_s
        )
        self.replayed = self.node.replay(skip_corrupt=skip_corrupt)
        self.committers: dict[str, GroupCommitter] = {}

    def committer(self, name: str) -> GroupCommitter:
        if name not in self.committers:
            (self.root / name).parent.mkdir(parents=True, exist_ok=True)
            self.committers[name] = GroupCommitter(TabletStore(self.root / name), node=self.node)
        return self.committers[name]

    def crash(self) -> None:
        for c in self.committers.values():
            c.store.discard_deferred()
            c.store.close()

    def close(self) -> None:
        self.crash()
        self.node.close()


def test_one_record_per_tick_across_stores(tmp_path: Path) -> None:
    node = Node(tmp_path)

    async def go() -> None:
        writes = [node.committer(f"t{i % 4}.db").apply([put(b"k%d" % i, b"v", 1)]) for i in range(40)]
        await asyncio.gather(*writes)

    asyncio.run(go())
    assert node.node.counters.records == 1
    assert all(c.flushes == 1 and c.store.deferred_count == 10 for c in node.committers.values())
    assert not any(c.idle for c in node.committers.values())  # deferred rows keep a store open
    t3 = node.committer("t3.db")
    assert value_of(t3.store, b"k3") == b"v"  # a read of a deferred partition writes them first
    assert t3.idle and t3.store.deferred_count == 0
    assert node.committer("t2.db").store.deferred_count == 10
    node.close()


def test_a_write_in_the_log_but_not_in_its_store_is_replayed(tmp_path: Path) -> None:
    node = Node(tmp_path)
    store = node.committer("a.db").store

    async def go() -> None:
        await node.committer("a.db").apply([put(b"k", b"old", 1)])
        store.write_deferred()
        await node.committer("a.db").apply([put(b"k", b"new", 2), put(b"j", b"x", 2)])

    asyncio.run(go())
    assert store.deferred_count == 2  # acknowledged, in the log, not in the file
    node.crash()
    again = Node(tmp_path)
    assert again.replayed == 2
    assert value_of(again.committer("a.db").store, b"k") == b"new"
    assert value_of(again.committer("a.db").store, b"j") == b"x"
    assert again.node._log.size == 0  # replayed, synced, emptied
    again.close()


def test_rows_logged_before_a_removal_are_not_replayed(tmp_path: Path) -> None:
    node = Node(tmp_path)

    async def go() -> None:
        await node.committer("ks/t-1/shard-0/tablet-0.db").apply([put(b"gone", b"1", 1)])
        await node.committer("ks/u-2/shard-0/tablet-0.db").apply([put(b"kept", b"1", 1)])
        # TRUNCATE of t: log the removal, close and delete its files
        node.node.removed(tmp_path / "ks/t-1")
        node.committers.pop("ks/t-1/shard-0/tablet-0.db").store.close()
        for f in (tmp_path / "ks/t-1/shard-0").iterdir():
            f.unlink()
        await node.committer("ks/t-1/shard-0/tablet-0.db").apply([put(b"after", b"2", 2)])

    asyncio.run(go())
    node.crash()
    again = Node(tmp_path)
    t = again.committer("ks/t-1/shard-0/tablet-0.db").store
    assert value_of(t, b"gone") is None
    assert value_of(t, b"after") == b"2"
    assert value_of(again.committer("ks/u-2/shard-0/tablet-0.db").store, b"kept") == b"1"
    again.close()


def test_a_torn_tail_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    node = Node(tmp_path)
    node.committer("a.db")

    async def go() -> None:
        with monkeypatch.context() as m:
            m.setattr(TabletStore, "apply_rows", lambda *a, **k: None)  # logged, never committed
            await node.committer("a.db").apply([put(b"k", b"whole", 1)])

    asyncio.run(go())
    node.crash()
    log_path = tmp_path / ".commitlog" / "commit.log"
    whole = log_path.read_bytes()
    with open(log_path, "ab") as f:  # a second record cut short by the crash
        f.write(whole[: len(whole) - 3])
    log = CommitLog(log_path)
    assert len(list(log.records())) == 1
    log.close()
    again = Node(tmp_path)
    assert again.replayed == 1
    assert value_of(again.committer("a.db").store, b"k") == b"whole"
    again.close()


def test_trimming_syncs_the_stores_and_empties_the_log(tmp_path: Path) -> None:
    node = Node(tmp_path, trim_bytes=2000)

    async def go() -> None:
        for i in range(60):
            await node.committer(f"t{i % 3}.db").apply([put(b"k%d" % i, b"x" * 50, 1)])

    asyncio.run(go())
    assert node.node._log.size < 2000 + 400
    assert os.path.getsize(tmp_path / ".commitlog" / "commit.log") == node.node._log.size
    node.crash()
    again = Node(tmp_path)
    assert all(value_of(again.committer(f"t{i % 3}.db").store, b"k%d" % i) == b"x" * 50 for i in range(60))
    again.close()


def test_a_failing_write_fails_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    bad = Mutation(b"bad", 2**70)  # not an int64: neither the log nor SQLite can hold it

    async def go() -> list[BaseException | None]:
        c = node.committer("a.db")
        results = await asyncio.gather(
            c.apply([put(b"a", b"1", 1)]),
            c.apply([bad]),
            c.apply([put(b"b", b"2", 1)]),
            return_exceptions=True,
        )
        return list(results)

    results = asyncio.run(go())
    assert results[0] is None and results[2] is None and isinstance(results[1], OverflowError)
    store = node.committer("a.db").store
    assert value_of(store, b"a") == b"1" and value_of(store, b"b") == b"2"
    node.close()


_write = st.tuples(
    st.sampled_from([b"p", b"q", b"r"]),
    st.one_of(st.none(), st.binary(min_size=1, max_size=3)),
    st.integers(1, 5),
    st.sampled_from([0, 0, 5]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ticks=st.lists(st.lists(_write, min_size=1, max_size=6), min_size=1, max_size=6),
    sync_period_s=st.sampled_from([None, 0.001, 60.0]),
)
def test_replay_after_a_crash_equals_the_synced_store(
    tmp_path_factory: pytest.TempPathFactory,
    ticks: list[list[tuple[bytes, bytes | None, int, int]]],
    sync_period_s: float | None,
) -> None:
    """Whatever was acknowledged reads back the same after a crash and a replay as from a store
    written with per-store synced commits (last write wins, ties, tombstones, TTLs), in batch
    and periodic mode."""
    root = tmp_path_factory.mktemp("node")
    node = Node(root, sync_period_s=sync_period_s)
    reference = TabletStore(root / "reference.db")

    async def go() -> None:
        for tick in ticks:
            muts = [put(pk, value, ts, ttl) for pk, value, ts, ttl in tick]
            await asyncio.gather(*(node.committer("a.db").apply([m]) for m in muts))
            reference.apply(muts)

    asyncio.run(go())
    node.crash()
    again = Node(root)
    for now in (0, 10):
        for pk in (b"p", b"q", b"r"):
            got = again.committer("a.db").store.read_partition(pk, now)
            assert got == reference.read_partition(pk, now), (pk, now)
    again.close()
    reference.close()


def test_writes_after_close_fail_instead_of_reaching_another_file(tmp_path: Path) -> None:
    node = Node(tmp_path)
    committer = node.committer("a.db")
    node.close()

    async def go() -> None:
        with pytest.raises(OSError, match="closed"):
            await committer.apply([put(b"k", b"late", 1)])

    asyncio.run(go())


def test_a_store_writes_its_rows_out_once_it_holds_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_commit, "STORE_BATCH", 4)
    node = Node(tmp_path)
    store = node.committer("a.db").store

    async def go() -> list[int]:
        held = []
        for i in range(10):
            await node.committer("a.db").apply([put(b"k%d" % i, b"v", 1)])
            await asyncio.sleep(0)  # the write-out runs after the writers are answered
            held.append(store.deferred_count)
        return held

    assert asyncio.run(go()) == [1, 2, 3, 0, 1, 2, 3, 0, 1, 2]
    node.close()


def test_the_node_budget_and_the_period_write_every_store_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(node_commit, "WRITE_OVERHEAD", 1000)
    monkeypatch.setattr(node_commit, "NODE_BUDGET_BYTES", 6000)  # six small writes
    monkeypatch.setattr(node_commit, "WRITE_OUT_S", 0.05)
    node = Node(tmp_path)
    stores = [node.committer(f"t{i}.db").store for i in range(3)]

    async def go() -> tuple[list[int], list[int], list[int]]:
        await asyncio.gather(
            *(node.committer(f"t{i % 3}.db").apply([put(b"k%d" % i, b"v", 1)]) for i in range(3))
        )
        under_budget = [s.deferred_count for s in stores]
        await asyncio.gather(
            *(node.committer(f"t{i % 3}.db").apply([put(b"j%d" % i, b"v", 1)]) for i in range(3))
        )
        for _ in range(4):
            await asyncio.sleep(0)
        at_budget = [s.deferred_count for s in stores]
        await node.committer("t0.db").apply([put(b"late", b"v", 1)])
        await asyncio.sleep(0.2)
        return under_budget, at_budget, [s.deferred_count for s in stores]

    assert asyncio.run(go()) == ([1, 1, 1], [0, 0, 0], [0, 0, 0])
    node.close()


def test_a_removal_drops_the_rows_deferred_under_it(tmp_path: Path) -> None:
    node = Node(tmp_path)
    store = node.committer("ks/t-1/shard-0/tablet-0.db").store

    async def go() -> None:
        await node.committer("ks/t-1/shard-0/tablet-0.db").apply([put(b"gone", b"1", 1)])

    asyncio.run(go())
    node.node.removed(tmp_path / "ks/t-1")
    assert store.deferred_count == 0
    assert value_of(store, b"gone") is None
    node.close()


def test_periodic_mode_answers_before_the_sync_and_syncs_within_the_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[int] = []
    real_sync = CommitLog.sync
    monkeypatch.setattr(CommitLog, "sync", lambda self: (syncs.append(self.size), real_sync(self)))
    node = Node(tmp_path, sync_period_s=0.05)

    async def go() -> tuple[list[int], list[int]]:
        await asyncio.gather(*(node.committer("a.db").apply([put(b"k%d" % i, b"v", 1)]) for i in range(5)))
        await node.committer("a.db").apply([put(b"k", b"v", 1)])
        answered = list(syncs)
        await asyncio.sleep(0.3)
        return answered, list(syncs)

    answered, later = asyncio.run(go())
    assert answered == [] and node.node.counters.records == 2 and node.node.counters.writes == 6
    assert later == [node.node._log.size]  # one sync covered both records
    node.crash()
    again = Node(tmp_path)
    assert again.replayed == 2
    assert value_of(again.committer("a.db").store, b"k4") == b"v"
    again.close()


def test_a_store_writes_out_large_values_by_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_commit, "STORE_BATCH_BYTES", 10_000)
    node = Node(tmp_path)
    store = node.committer("a.db").store

    async def go() -> list[int]:
        held = []
        for i in range(4):
            await node.committer("a.db").apply([put(b"k%d" % i, b"x" * 4000, 1)])
            await asyncio.sleep(0)
            held.append(store.deferred_count)
        return held

    assert asyncio.run(go()) == [1, 2, 0, 1]  # 4 KB values + 400 bytes each: out at the third
    node.close()


def test_a_new_loop_picks_up_the_write_outs_and_timers_a_closed_one_left(tmp_path: Path) -> None:
    node = Node(tmp_path, sync_period_s=0.01)
    store = node.committer("a.db").store

    async def write(key: bytes) -> None:
        await node.committer("a.db").apply([put(key, b"v", 1)])

    first = asyncio.new_event_loop()
    first.run_until_complete(write(b"a"))  # arms the sync timer on this loop
    node.node._write_out[store.path] = store  # as if a write-out were queued when it closed
    first.close()
    assert store.deferred_count == 1 and node.node._unsynced

    async def go() -> None:
        await write(b"b")
        await asyncio.sleep(0.1)

    asyncio.run(go())
    assert node.node.counters.write_outs == 1  # the queued write-out ran on the new loop
    assert store.deferred_count == 1  # "b", deferred after it
    assert not node.node._unsynced  # and the log synced by a timer of the new loop
    node.close()
