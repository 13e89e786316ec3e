"""RaftLog (stable + unstable) and MemoryLog."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.raft.log import MemoryLog, bootstrap_state
from tabletdb.raft.raftlog import RaftLog
from tabletdb.raft.types import ConfState, Entry, Snapshot, SnapshotMeta

CONF = ConfState(voters=frozenset([1, 2, 3]))


def ents(first: int, terms: list[int]) -> list[Entry]:
    return [Entry(term=t, index=first + i, data=b"%d" % (first + i)) for i, t in enumerate(terms)]


def test_memory_log_bootstrap_and_compaction() -> None:
    log = MemoryLog(CONF)
    snapshot, hs = bootstrap_state(CONF)
    assert log.initial_state() == (hs, CONF) and log.snapshot() == snapshot
    assert (log.first_index(), log.last_index(), log.term(1)) == (2, 1, 1)
    log.append(ents(2, [2, 2, 3]))
    log.append(ents(3, [4]))  # overwrites the conflicting suffix
    assert [e.term for e in log.entries(2, 4)] == [2, 4] and log.last_index() == 3
    with pytest.raises(ValueError, match="gap"):
        log.append(ents(9, [4]))
    with pytest.raises(ValueError, match="latest snapshot"):
        log.compact(3)
    log.create_snapshot(SnapshotMeta(index=3, term=4, conf=CONF), b"state")
    log.compact(3)
    assert (log.first_index(), log.term(3), log.term(2)) == (4, 4, None)
    with pytest.raises(ValueError, match="outside"):
        log.entries(2, 4)


def test_unstable_entries_shadow_storage_until_persisted() -> None:
    storage = MemoryLog(CONF)
    storage.append(ents(2, [2, 2, 2]))
    log = RaftLog(storage, committed=2)
    assert log.maybe_append(2, 2, 3, ents(3, [3, 3])) == 4
    assert [e.term for e in log.slice(2, 5) or []] == [2, 3, 3]
    assert log.committed == 3 and log.term(4) == 3 and log.term(5) is None
    storage.append(log.unstable)
    log.stable_to(4, 3)
    assert not log.unstable and [e.term for e in log.slice(2, 5) or []] == [2, 3, 3]


def test_mismatch_and_committed_conflict() -> None:
    log = RaftLog(MemoryLog(CONF), committed=0)
    log.append(ents(2, [2, 2]))
    assert log.maybe_append(3, 9, 3, []) is None
    log.commit_to(3)
    with pytest.raises(AssertionError, match="committed"):
        log.maybe_append(2, 2, 3, ents(3, [5]))


def test_restore_snapshot() -> None:
    log = RaftLog(MemoryLog(CONF), committed=1)
    log.append(ents(2, [2]))
    snap = Snapshot(SnapshotMeta(index=10, term=4, conf=CONF), b"d")
    log.restore(snap)
    assert (log.first_index(), log.last_index(), log.committed, log.term(10)) == (11, 10, 10, 4)
    assert log.slice(5, 11) is None and log.next_committed() == []
    log.stable_snapshot_to(10)
    assert log.unstable_snapshot is None


@given(st.lists(st.integers(min_value=2, max_value=4), min_size=1, max_size=8), st.integers(2, 9))
def test_append_then_overwrite_keeps_log_contiguous(terms: list[int], at: int) -> None:
    storage = MemoryLog(CONF)
    log = RaftLog(storage, committed=1)
    log.append(ents(2, sorted(terms)))
    at = min(at, log.last_index() + 1)
    log.append(ents(at, [9]))
    got = log.slice(2, log.last_index() + 1) or []
    assert [e.index for e in got] == list(range(2, at + 1))
    assert got[-1].term == 9
