"""The durable-log view the Raft core reads, and an in-memory implementation of it.

The core never writes storage: the driver persists what a `Ready` hands out (snapshot,
entries, hard state) and the core reads it back through `LogView`. Any store that answers these
questions — `MemoryLog` here, the durable log in `raft.storage`, a simulated disk — can drive it.

Index bookkeeping follows etcd: entries `first_index()..last_index()` are present; the entry at
`first_index() - 1` was compacted into the latest snapshot but its term is still known, so
`term(first_index() - 1)` answers (it is the snapshot's term).
"""

from __future__ import annotations

from typing import Protocol

from tabletdb.raft.types import ConfState, Entry, HardState, Snapshot, SnapshotMeta


class LogView(Protocol):
    """Read access to persisted Raft state, as the core needs it."""

    def initial_state(self) -> tuple[HardState, ConfState]:
        """The last persisted HardState, and the membership as of `first_index() - 1` (the latest
        snapshot, or the bootstrap membership). Committed conf changes after that index are
        re-applied by the core as it re-delivers the committed entries."""
        ...

    def snapshot(self) -> Snapshot:
        """The latest snapshot, data included (sent to followers that fell behind compaction).
        A meta index of 0 means there is none yet."""
        ...

    def first_index(self) -> int:
        """Index of the first stored entry (snapshot index + 1; 1 for a fresh log)."""
        ...

    def last_index(self) -> int:
        """Index of the last stored entry (the snapshot index if no entries follow it)."""
        ...

    def entries(self, lo: int, hi: int) -> list[Entry]:
        """Entries with `lo <= index < hi`; callers keep `first_index() <= lo <= hi <= last_index()+1`."""
        ...

    def term(self, index: int) -> int | None:
        """Term of the entry at `index` for `first_index()-1 <= index <= last_index()`, else None."""
        ...


def bootstrap_state(conf: ConfState) -> tuple[Snapshot, HardState]:
    """The identical starting point of every founding member of a cluster.

    The founding membership lives in a snapshot at index 1 (term 1, no data) rather than in
    the log's base at index 0, because a node that joins later starts from an empty log and
    must learn the founding membership from somewhere: with the base at index 1 the leader
    cannot send it entry 1, so it sends this snapshot, which carries the membership, instead.
    """
    snapshot = Snapshot(meta=SnapshotMeta(index=1, term=1, conf=conf))
    return snapshot, HardState(term=1, vote=None, commit=1)


class MemoryLog:
    """A LogView kept in memory plus the write side a driver needs (tests and the simulator).

    `MemoryLog(conf)` is a founding member's log (see `bootstrap_state`); `MemoryLog()` is the
    empty log of a node that will be added to an existing cluster.
    """

    def __init__(self, conf: ConfState | None = None) -> None:
        self._hard_state = HardState()
        self._snapshot = Snapshot(meta=SnapshotMeta(index=0, term=0, conf=ConfState()))
        self._offset_index = 0
        self._offset_term = 0
        self._entries: list[Entry] = []
        if conf is not None:
            snapshot, self._hard_state = bootstrap_state(conf)
            self.apply_snapshot(snapshot)

    # --- LogView -----------------------------------------------------------------------------

    def initial_state(self) -> tuple[HardState, ConfState]:
        return self._hard_state, self._snapshot.meta.conf

    def snapshot(self) -> Snapshot:
        return self._snapshot

    def first_index(self) -> int:
        return self._offset_index + 1

    def last_index(self) -> int:
        return self._offset_index + len(self._entries)

    def entries(self, lo: int, hi: int) -> list[Entry]:
        if not self.first_index() <= lo <= hi <= self.last_index() + 1:
            raise ValueError(
                f"entries [{lo}, {hi}) outside the stored range "
                f"[{self.first_index()}, {self.last_index() + 1})"
            )
        return self._entries[lo - self.first_index() : hi - self.first_index()]

    def term(self, index: int) -> int | None:
        if index == self._offset_index:
            return self._offset_term
        if self._offset_index < index <= self.last_index():
            return self._entries[index - self.first_index()].term
        return None

    # --- write side ---------------------------------------------------------------------------

    @property
    def hard_state(self) -> HardState:
        return self._hard_state

    def set_hard_state(self, hs: HardState) -> None:
        self._hard_state = hs

    def append(self, entries: list[Entry]) -> None:
        """Store `entries` (contiguous), replacing any stored suffix they overwrite."""
        if not entries:
            return
        first = entries[0].index
        if first <= self._offset_index:
            # The prefix is already covered by the snapshot; keep only what follows it.
            entries = [e for e in entries if e.index > self._offset_index]
            if not entries:
                return
            first = entries[0].index
        if first > self.last_index() + 1:
            raise ValueError(f"append at {first} would leave a gap after last index {self.last_index()}")
        del self._entries[first - self.first_index() :]
        self._entries.extend(entries)

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Replace the whole log by `snapshot` (a follower installing a leader's snapshot)."""
        if snapshot.meta.index < self._snapshot.meta.index:
            raise ValueError(
                f"snapshot at {snapshot.meta.index} is older than the stored one "
                f"at {self._snapshot.meta.index}"
            )
        self._snapshot = snapshot
        self._offset_index = snapshot.meta.index
        self._offset_term = snapshot.meta.term
        self._entries = []

    def create_snapshot(self, meta: SnapshotMeta, data: bytes) -> Snapshot:
        """Record the application's snapshot at `meta.index` (already applied) without compacting."""
        if meta.index <= self._snapshot.meta.index:
            raise ValueError(f"snapshot at {meta.index} is not newer than the stored one")
        if meta.index > self.last_index():
            raise ValueError(f"snapshot at {meta.index} is past the last stored index {self.last_index()}")
        if self.term(meta.index) != meta.term:
            raise ValueError(f"snapshot term {meta.term} differs from the log's {self.term(meta.index)}")
        self._snapshot = Snapshot(meta=meta, data=data)
        return self._snapshot

    def compact(self, index: int) -> None:
        """Drop entries up to `index`; the stored snapshot must already cover it."""
        if index <= self._offset_index:
            return
        if index > self._snapshot.meta.index:
            raise ValueError(
                f"cannot compact to {index}: the latest snapshot is at {self._snapshot.meta.index}"
            )
        term = self.term(index)
        assert term is not None  # snapshot index <= last index, checked in create_snapshot
        del self._entries[: index - self._offset_index]
        self._offset_index = index
        self._offset_term = term
