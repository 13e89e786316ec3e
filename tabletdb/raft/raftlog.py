"""The core's view of its log: the persisted part (a LogView) plus what is not yet persisted.

New entries (appended by the leader or received from it) and a received snapshot sit in the
*unstable* part until the driver persists them and calls `advance`; reads consult the unstable
part first, then storage. Entries are never handed to the application before they are
committed, and commit never moves backwards.
"""

from __future__ import annotations

from tabletdb.raft.log import LogView
from tabletdb.raft.types import Entry, Snapshot


class RaftLog:
    def __init__(self, storage: LogView, committed: int) -> None:
        self.storage = storage
        self.unstable: list[Entry] = []
        self.unstable_snapshot: Snapshot | None = None
        self._unstable_offset = storage.last_index() + 1
        snapshot_index = storage.first_index() - 1
        self.committed = max(committed, snapshot_index)
        self.applied = snapshot_index

    def __repr__(self) -> str:
        return (
            f"RaftLog(first={self.first_index()}, last={self.last_index()}, committed={self.committed}, "
            f"applied={self.applied}, unstable={len(self.unstable)})"
        )

    # --- positions ------------------------------------------------------------------------------

    def first_index(self) -> int:
        if self.unstable_snapshot is not None:
            return self.unstable_snapshot.meta.index + 1
        return self.storage.first_index()

    def last_index(self) -> int:
        if self.unstable:
            return self.unstable[-1].index
        if self.unstable_snapshot is not None:
            return self.unstable_snapshot.meta.index
        return self.storage.last_index()

    def term(self, index: int) -> int | None:
        """Term at `index`, or None if it was compacted away or is past the end."""
        if self.unstable and self._unstable_offset <= index <= self.unstable[-1].index:
            return self.unstable[index - self._unstable_offset].term
        if self.unstable_snapshot is not None:
            meta = self.unstable_snapshot.meta
            if index == meta.index:
                return meta.term
            if index < meta.index:
                return None
            if index >= self._unstable_offset:
                return None
        if index >= self._unstable_offset:
            return None
        return self.storage.term(index)

    def last_term(self) -> int:
        term = self.term(self.last_index())
        assert term is not None, f"term of the last index unknown in {self!r}"
        return term

    def match_term(self, index: int, term: int) -> bool:
        return self.term(index) == term

    def is_up_to_date(self, last_index: int, last_term: int) -> bool:
        """Whether a candidate with that last entry is at least as up to date as us (§5.4.1)."""
        ours = self.last_term()
        return last_term > ours or (last_term == ours and last_index >= self.last_index())

    # --- reading entries -------------------------------------------------------------------------

    def slice(self, lo: int, hi: int, max_count: int | None = None) -> list[Entry] | None:
        """Entries in [lo, hi) (at most `max_count`), or None if some were compacted away."""
        if lo < self.first_index():
            return None
        hi = min(hi, self.last_index() + 1)
        if max_count is not None:
            hi = min(hi, lo + max_count)
        if lo >= hi:
            return []
        out: list[Entry] = []
        if lo < self._unstable_offset:
            out.extend(self.storage.entries(lo, min(hi, self._unstable_offset)))
        if hi > self._unstable_offset:
            start = max(lo, self._unstable_offset) - self._unstable_offset
            out.extend(self.unstable[start : hi - self._unstable_offset])
        return out

    def next_committed(self, max_count: int | None = None) -> list[Entry]:
        """Committed entries the application has not applied yet."""
        lo = max(self.applied + 1, self.first_index())
        return self.slice(lo, self.committed + 1, max_count) or []

    def has_next_committed(self) -> bool:
        return self.committed > max(self.applied, self.first_index() - 1)

    # --- writing -----------------------------------------------------------------------------------

    def append(self, entries: list[Entry]) -> int:
        """Append (overwriting any conflicting unstable/stored suffix); returns the new last index."""
        if not entries:
            return self.last_index()
        after = entries[0].index - 1
        if after < self.committed:
            raise AssertionError(f"appending after {after} would overwrite committed {self.committed}")
        self._truncate_and_append(entries)
        return self.last_index()

    def _truncate_and_append(self, entries: list[Entry]) -> None:
        first = entries[0].index
        if first == self._unstable_offset + len(self.unstable):
            self.unstable.extend(entries)
        elif first <= self._unstable_offset:
            # Replace everything unstable; storage keeps the stale suffix until the driver
            # persists these entries, which overwrite it.
            self._unstable_offset = first
            self.unstable = list(entries)
        else:
            del self.unstable[first - self._unstable_offset :]
            self.unstable.extend(entries)

    def maybe_append(self, prev_index: int, prev_term: int, commit: int, entries: list[Entry]) -> int | None:
        """Follower side of APPEND: None if the log does not match at `prev_index`, else the
        index of the last entry the leader's message vouches for."""
        if not self.match_term(prev_index, prev_term):
            return None
        last_new = prev_index + len(entries)
        conflict = self._find_conflict(entries)
        if conflict:
            if conflict <= self.committed:
                raise AssertionError(f"entry {conflict} conflicts with the committed prefix of {self!r}")
            self.append(entries[conflict - entries[0].index :])
        self.commit_to(min(commit, last_new))
        return last_new

    def _find_conflict(self, entries: list[Entry]) -> int:
        """Index of the first entry that is new or differs in term; 0 if all are present."""
        for e in entries:
            if not self.match_term(e.index, e.term):
                return e.index
        return 0

    def commit_to(self, index: int) -> None:
        if index > self.committed:
            if index > self.last_index():
                raise AssertionError(f"commit {index} is past the last index of {self!r}")
            self.committed = index

    def applied_to(self, index: int) -> None:
        if not self.applied <= index <= self.committed:
            raise AssertionError(f"cannot mark {index} applied in {self!r}")
        self.applied = index

    def restore(self, snapshot: Snapshot) -> None:
        """Replace the log by a received snapshot (it becomes unstable until persisted)."""
        self.unstable_snapshot = snapshot
        self.unstable = []
        self._unstable_offset = snapshot.meta.index + 1
        self.committed = snapshot.meta.index

    # --- persistence acknowledgements ------------------------------------------------------------

    def stable_to(self, index: int, term: int) -> None:
        """The driver persisted unstable entries up to `index` (ignored if since overwritten)."""
        if self.term(index) != term or index < self._unstable_offset:
            return
        del self.unstable[: index + 1 - self._unstable_offset]
        self._unstable_offset = index + 1

    def stable_snapshot_to(self, index: int) -> None:
        if self.unstable_snapshot is not None and self.unstable_snapshot.meta.index == index:
            self.unstable_snapshot = None
