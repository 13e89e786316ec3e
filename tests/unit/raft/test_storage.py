"""The durable Raft log: round trips, group commit, crash recovery, torn tails, corruption, snapshots."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.raft.log import LogView
from tabletdb.raft.storage import (
    CorruptLogError,
    CorruptSnapshotError,
    DurableLog,
    LogCompactedError,
    LogUnavailableError,
)
from tabletdb.raft.storage_fs import MemFileSystem
from tabletdb.raft.types import ConfState, Entry, EntryKind, HardState, Snapshot, SnapshotMeta


def ents(lo: int, hi: int, term: int = 1) -> list[Entry]:
    return [Entry(term, i, EntryKind.NORMAL, f"cmd{i}@{term}".encode()) for i in range(lo, hi + 1)]


def copy_fs(fs: MemFileSystem) -> MemFileSystem:
    out = MemFileSystem()
    for name in fs.list():
        out.write(name, fs.read(name))
        out.sync(name)
    out.sync_dir()
    return out


def test_round_trip_on_a_real_directory(tmp_path: Path) -> None:
    log = DurableLog.open(str(tmp_path), segment_bytes=200)
    log.bootstrap(ConfState(voters=frozenset({1, 2, 3}), learners=frozenset({4})))
    log.append(ents(2, 21))
    log.set_hard_state(HardState(term=3, vote=2, commit=7))
    log.sync()
    assert len(list(tmp_path.glob("wal-*.log"))) > 1  # small segments rotated
    again = DurableLog.open(str(tmp_path), segment_bytes=200)
    assert again.entries(2, 22) == ents(2, 21)
    assert again.hard_state == HardState(term=3, vote=2, commit=7)
    assert again.conf_state.learners == frozenset({4})
    assert again.initial_state()[1] == ConfState(voters=frozenset({1, 2, 3}), learners=frozenset({4}))
    assert (again.first_index(), again.last_index(), again.term(21), again.term(1)) == (2, 21, 1, 1)
    with pytest.raises(ValueError, match="not fresh"):
        again.bootstrap(ConfState())


def test_index_errors_say_why() -> None:
    log = DurableLog(MemFileSystem())
    view: LogView = log  # serves the core's protocol (checked by mypy)
    assert view.initial_state() == (HardState(), ConfState())
    with pytest.raises(LogUnavailableError):
        log.entries(1, 5)
    log.append(ents(1, 3))
    assert log.term(4) is None
    with pytest.raises(LogCompactedError):
        log.entries(0, 2)
    with pytest.raises(ValueError, match="gap"):
        log.append(ents(5, 6))
    assert log.term(0) == 0


def test_conflicting_suffix_is_replaced_durably() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    log.append(ents(1, 10, term=1))
    log.sync()
    log.append(ents(6, 8, term=2))
    log.sync()
    fs.crash()
    again = DurableLog(fs)
    assert again.entries(1, 9) == ents(1, 5, 1) + ents(6, 8, 2)
    assert again.last_index() == 8


def test_group_commit_one_fsync_per_batch() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    before = fs.syncs
    for i in range(1, 51):
        log.append(ents(i, i))
        log.set_hard_state(HardState(term=1, commit=i - 1))
    assert log.synced_index == 0
    log.sync()
    assert fs.syncs - before == 1
    assert log.synced_index == 50


def test_unsynced_writes_are_lost_on_crash() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    log.append(ents(1, 5))
    log.set_hard_state(HardState(term=1, vote=1, commit=2))
    log.sync()
    log.append(ents(6, 9))
    log.set_hard_state(HardState(term=2, vote=3, commit=5))
    fs.crash()
    again = DurableLog(fs)
    assert again.last_index() == 5
    assert again.hard_state == HardState(term=1, vote=1, commit=2)


def test_torn_tail_at_every_byte_offset_is_dropped() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    log.append(ents(1, 4))
    log.sync()
    name = [n for n in fs.list() if n.startswith("wal-")][-1]
    start = len(fs.read(name))
    log.append(ents(5, 5))
    log.sync()
    full = fs.read(name)
    assert len(full) > start
    for cut in range(start, len(full)):
        torn = copy_fs(fs)
        torn.write(name, full[:cut])
        torn.sync(name)
        recovered = DurableLog(torn)
        assert recovered.last_index() == 4, cut
        assert recovered.entries(1, 5) == ents(1, 4)
        recovered.append(ents(5, 6, term=2))  # the log stays usable after the repair
        recovered.sync()
        assert DurableLog(torn).entries(5, 7) == ents(5, 6, 2)


def test_flipped_byte_in_last_record_is_a_torn_tail() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    log.append(ents(1, 4))
    log.sync()
    name = [n for n in fs.list() if n.startswith("wal-")][-1]
    start = len(fs.read(name))
    log.append(ents(5, 5))
    log.sync()
    for offset in range(start, len(fs.read(name))):
        damaged = copy_fs(fs)
        damaged.corrupt(name, offset)
        assert DurableLog(damaged).last_index() == 4, offset


def test_corruption_before_valid_records_refuses_to_start() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    log.append(ents(1, 2))
    log.sync()
    name = [n for n in fs.list() if n.startswith("wal-")][-1]
    start = len(fs.read(name))
    log.append(ents(3, 3))
    log.sync()
    end = len(fs.read(name))
    log.append(ents(4, 5))
    log.sync()
    for offset in range(start, end):
        damaged = copy_fs(fs)
        damaged.corrupt(name, offset)
        with pytest.raises(CorruptLogError) as info:
            DurableLog(damaged)
        assert info.value.file == name and info.value.offset == start
        assert name in str(info.value) and str(start) in str(info.value)


def test_a_damaged_snapshot_file_is_reported_as_a_damaged_snapshot(tmp_path: Path) -> None:
    log = DurableLog.open(str(tmp_path))
    log.append(ents(1, 30))
    log.set_hard_state(HardState(term=1, vote=1, commit=25))
    log.sync()
    log.apply_snapshot(Snapshot(SnapshotMeta(20, 1, ConfState(voters=frozenset({1}))), b"state@20" * 50))
    (snap,) = tmp_path.glob("snap-*.snap")
    whole = snap.read_bytes()
    for offset in range(0, len(whole), 7):
        damaged = bytearray(whole)
        damaged[offset] ^= 0x41
        snap.write_bytes(bytes(damaged))
        with pytest.raises(CorruptSnapshotError) as info:
            DurableLog.open(str(tmp_path))
        message = str(info.value)
        assert message.startswith(f"Raft snapshot file is corrupt: {snap} at byte offset ")
        assert "not a torn tail" not in message and "restore the node's raft directory" in message
    snap.write_bytes(whole)
    assert DurableLog.open(str(tmp_path)).snapshot().data == b"state@20" * 50


def test_local_snapshot_compacts_and_survives_restart() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs, segment_bytes=100)
    log.append(ents(1, 30))
    log.set_hard_state(HardState(term=1, vote=1, commit=25))
    log.sync()
    conf = ConfState(voters=frozenset({1, 2, 3}))
    log.apply_snapshot(Snapshot(SnapshotMeta(20, 1, conf), b"state@20"))
    assert (log.first_index(), log.last_index()) == (21, 30)
    assert len([n for n in fs.list() if n.startswith("wal-")]) == 1
    assert [n for n in fs.list() if n.startswith("snap-")] == ["snap-00000000000000000020.snap"]
    assert log.term(19) is None and log.term(20) == 1
    fs.crash()
    again = DurableLog(fs)
    assert again.snapshot() == Snapshot(SnapshotMeta(20, 1, conf), b"state@20")
    assert again.entries(21, 31) == ents(21, 30)
    assert again.hard_state.commit == 25


def test_installed_snapshot_that_conflicts_drops_the_log() -> None:
    fs = MemFileSystem()
    log = DurableLog(fs)
    log.append(ents(1, 10, term=1))
    log.sync()
    conf = ConfState(voters=frozenset({1, 2}))
    log.apply_snapshot(Snapshot(SnapshotMeta(8, 3, conf), b"leader"))
    assert (log.first_index(), log.last_index(), log.conf_state) == (9, 8, conf)
    log.append(ents(9, 9, term=3))
    log.sync()
    fs.crash()
    again = DurableLog(fs)
    assert again.last_index() == 9 and again.term(9) == 3 and again.term(8) == 3
    assert again.hard_state.commit == 8


class _CrashAt(MemFileSystem):
    """Raises after `budget` mutating operations, to crash a multi-step write midway."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    def _tick(self) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise RuntimeError("simulated power loss")

    def append(self, name: str, data: bytes) -> None:
        self._tick()
        super().append(name, data)

    def write(self, name: str, data: bytes) -> None:
        self._tick()
        super().write(name, data)

    def sync(self, name: str) -> None:
        self._tick()
        super().sync(name)

    def rename(self, src: str, dst: str) -> None:
        self._tick()
        super().rename(src, dst)

    def remove(self, name: str) -> None:
        self._tick()
        super().remove(name)

    def sync_dir(self) -> None:
        self._tick()
        super().sync_dir()


@pytest.mark.parametrize("conflicting", [False, True])
def test_crash_at_every_step_of_a_snapshot_keeps_a_consistent_log(conflicting: bool) -> None:
    step = 0
    while True:
        fs = _CrashAt(10**9)
        log = DurableLog(fs)
        log.append(ents(1, 12))
        log.sync()
        fs.budget = step
        meta = SnapshotMeta(8, 5 if conflicting else 1, ConfState(voters=frozenset({1})))
        try:
            log.apply_snapshot(Snapshot(meta, b"snap"))
            finished = True
        except RuntimeError:
            finished = False
        fs.budget = 10**9
        fs.crash(random.Random(step))
        again = DurableLog(fs)
        if again.snapshot_meta.index == 0:
            assert again.entries(1, 13) == ents(1, 12)
        else:
            assert again.snapshot_meta == meta and again.snapshot().data == b"snap"
            expected = [] if conflicting else ents(9, 12)
            assert again.entries(9, again.last_index() + 1) == expected
        if finished:
            assert again.snapshot_meta == meta
            break
        step += 1


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_random_operations_and_crashes_never_lose_synced_state(seed: int) -> None:
    rng = random.Random(seed)
    fs = MemFileSystem()
    log = DurableLog(fs, segment_bytes=rng.choice([64, 256, 4096]))
    synced: list[Entry] = []
    synced_hs = HardState()
    later: set[Entry] = set()  # unsynced entries that may or may not survive
    term = 1
    for _ in range(60):
        r = rng.random()
        if r < 0.45:
            lo = rng.randint(max(log.first_index(), log.last_index() - 3), log.last_index() + 1)
            if rng.random() < 0.3:
                term += 1
            batch = ents(lo, lo + rng.randint(0, 4), term)
            log.append(batch)
            later.update(batch)
        elif r < 0.6:
            log.set_hard_state(HardState(term=term, vote=rng.randint(1, 3), commit=rng.randint(0, 5)))
        elif r < 0.8:
            log.sync()
            synced, synced_hs, later = (
                log.entries(log.first_index(), log.last_index() + 1),
                log.hard_state,
                set(),
            )
        elif r < 0.9 and log.last_index() >= log.first_index():
            idx = rng.randint(log.first_index(), log.last_index())
            log.apply_snapshot(Snapshot(SnapshotMeta(idx, log.term(idx) or 0, ConfState()), b"s"))
            synced, synced_hs, later = (
                log.entries(log.first_index(), log.last_index() + 1),
                log.hard_state,
                set(),
            )
        else:
            fs.crash(rng)
            first = log.first_index()
            log = DurableLog(fs, segment_bytes=rng.choice([64, 256, 4096]))
            assert log.first_index() == first
            got = log.entries(log.first_index(), log.last_index() + 1)
            conflict = min((e.index for e in later), default=10**9)
            must_have = [e for e in synced if e.index < conflict]
            assert got[: len(must_have)] == must_have
            assert all(e in later or e in synced for e in got)
            assert log.hard_state == synced_hs or log.hard_state.term >= synced_hs.term
            synced, synced_hs, later = got, log.hard_state, set()
