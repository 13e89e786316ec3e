"""The durable Raft log: checksummed segment files, group commit, snapshots, compaction, recovery.

Layout of the directory (all through a `FileSystem`, so the simulator can run this exact code on
an in-memory disk that crashes):

* ``wal-<seq>.log`` segments, replayed in sequence order. Each holds records (`storage_records`):
  ENTRY, HARD_STATE, CONF_STATE and SNAPSHOT_MARK. Appending an entry at index i replaces any
  entries >= i (a conflicting suffix), so truncation is itself just a record.
* ``snap-<index>.snap``: one SNAPSHOT record; written to ``.tmp``, fsynced, renamed, then the
  directory is fsynced, so a snapshot file is either whole or absent.

Durability is explicit: `append` and `set_hard_state` only buffer writes in the
OS; `sync` fsyncs once for the whole batch (group commit), after which `synced_index` covers
them. The driver must `sync` before sending any message that promises what it wrote.

Snapshots (local compaction and ones installed from the leader alike) are applied by
`apply_snapshot`: after the snapshot file is durable, a new segment is started holding the
current hard state, conf state, a SNAPSHOT_MARK and the retained entries after the snapshot,
and then every older segment and snapshot is deleted. Replay rule for a mark at (i, t): keep
the entries after i only if the log has entry i with term t (the log matches the snapshot);
otherwise drop them all. A crash between the snapshot file and its new segment is handled by
applying the same rule for the newest snapshot file at the end of replay.

Recovery drops a torn or corrupt record at the very tail of the last segment (those bytes were
never synced, so nothing depending on them was ever sent) and refuses, with `CorruptLogError`
naming the file and offset, to start on a log with damage followed by valid records. A damaged
snapshot file is `CorruptSnapshotError` (a snapshot is written whole, so no damage is a tear).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import replace

import msgpack

from tabletdb.raft import codec
from tabletdb.raft.log import bootstrap_state
from tabletdb.raft.storage_fs import FileSystem, OsFileSystem
from tabletdb.raft.storage_records import (
    CorruptLogError,
    CorruptSnapshotError,
    RecordType,
    encode_record,
    scan,
)
from tabletdb.raft.types import ConfState, Entry, HardState, Snapshot, SnapshotMeta

__all__ = [
    "CorruptLogError",
    "CorruptSnapshotError",
    "DurableLog",
    "LogCompactedError",
    "LogUnavailableError",
]

_WAL_PREFIX, _WAL_SUFFIX = "wal-", ".log"
_SNAP_PREFIX, _SNAP_SUFFIX = "snap-", ".snap"


class LogCompactedError(LookupError):
    """The requested index is at or before the snapshot: it now exists only in the snapshot."""


class LogUnavailableError(LookupError):
    """The requested index is beyond the last entry."""


def _wal_name(seq: int) -> str:
    return f"{_WAL_PREFIX}{seq:010d}{_WAL_SUFFIX}"


def _snap_name(index: int) -> str:
    return f"{_SNAP_PREFIX}{index:020d}{_SNAP_SUFFIX}"


def _pack(obj: object) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def _unpack(payload: bytes) -> object:
    return msgpack.unpackb(payload, raw=False)


def _self_contained(records: list[tuple[RecordType, bytes]]) -> bool:
    """Whether a segment starts the way `_start_segment` writes a snapshot-based one."""
    return any(rtype == RecordType.SNAPSHOT_MARK for rtype, _ in records[:3])


class DurableLog:
    """A Raft log on disk that also serves the core's read-only log view from memory."""

    def __init__(self, fs: FileSystem, segment_bytes: int = 4 << 20) -> None:
        self._fs = fs
        self._segment_bytes = segment_bytes
        self._snapshot_meta = SnapshotMeta(0, 0, ConfState())
        self._entries: list[Entry] = []  # indices snapshot.index+1 .. last, contiguous
        self._hard_state = HardState()
        self._segment_seq = 0
        self._segment_size = 0
        self._dirty = False
        self._synced_index = 0
        self._recover()

    @classmethod
    def open(cls, directory: str, segment_bytes: int = 4 << 20) -> DurableLog:
        return cls(OsFileSystem(directory), segment_bytes)

    # --- the read-only view the core restores from --------------------------------------------

    @property
    def hard_state(self) -> HardState:
        return self._hard_state

    @property
    def conf_state(self) -> ConfState:
        """Membership as of the snapshot base (`first_index() - 1`); later committed conf changes
        are re-applied by the core from the log, as `LogView.initial_state` specifies."""
        return self._snapshot_meta.conf

    @property
    def snapshot_meta(self) -> SnapshotMeta:
        return self._snapshot_meta

    def initial_state(self) -> tuple[HardState, ConfState]:
        return self._hard_state, self._snapshot_meta.conf

    def first_index(self) -> int:
        return self._snapshot_meta.index + 1

    def last_index(self) -> int:
        return self._snapshot_meta.index + len(self._entries)

    @property
    def synced_index(self) -> int:
        """The last index known durable; entries beyond it may vanish in a crash."""
        return self._synced_index

    def term(self, index: int) -> int | None:
        """Term at `index` for first_index()-1 <= index <= last_index(), else None."""
        base = self._snapshot_meta.index
        if index == base:
            return self._snapshot_meta.term
        if index < base or index > self.last_index():
            return None
        return self._entries[index - base - 1].term

    def entries(self, lo: int, hi: int) -> list[Entry]:
        """Entries with lo <= index < hi."""
        base = self._snapshot_meta.index
        if lo <= base:
            raise LogCompactedError(f"entries from {lo}: compacted into the snapshot at {base}")
        if hi > self.last_index() + 1:
            raise LogUnavailableError(f"entries up to {hi - 1}: the log ends at {self.last_index()}")
        return self._entries[lo - base - 1 : hi - base - 1]

    def snapshot(self) -> Snapshot:
        """The latest snapshot with its data, read back from its file."""
        meta = self._snapshot_meta
        if meta.index == 0:
            return Snapshot(meta)
        return self._read_snapshot_file(_snap_name(meta.index))

    # --- writes -------------------------------------------------------------------------------

    def append(self, entries: Sequence[Entry]) -> None:
        """Append entries; the first may overwrite a conflicting suffix (never the snapshot)."""
        if not entries:
            return
        first = entries[0].index
        base = self._snapshot_meta.index
        if first <= base:
            raise LogCompactedError(f"append at {first}: at or before the snapshot at {base}")
        if first > self.last_index() + 1:
            raise ValueError(f"append at {first} leaves a gap: the log ends at {self.last_index()}")
        for prev, nxt in itertools.pairwise(entries):
            if nxt.index != prev.index + 1:
                raise ValueError(f"append: entries not contiguous at {prev.index} -> {nxt.index}")
        del self._entries[first - base - 1 :]
        self._entries.extend(entries)
        self._synced_index = min(self._synced_index, first - 1)
        self._write(b"".join(encode_record(RecordType.ENTRY, _pack(codec.entry_to_obj(e))) for e in entries))

    def set_hard_state(self, hs: HardState) -> None:
        if hs != self._hard_state:
            self._hard_state = hs
            self._write(encode_record(RecordType.HARD_STATE, _pack(codec.hard_state_to_obj(hs))))

    def bootstrap(self, conf: ConfState) -> None:
        """Make this fresh log a founding member's: the core's bootstrap snapshot (membership at
        index 1) and hard state, durably. A node that joins later keeps an empty log instead."""
        if self.last_index() != 0 or self._hard_state != HardState():
            raise ValueError(
                f"bootstrap: the log is not fresh (last index {self.last_index()}, {self._hard_state})"
            )
        snapshot, hard_state = bootstrap_state(conf)
        self.apply_snapshot(snapshot)
        self.set_hard_state(hard_state)
        self.sync()

    def sync(self) -> None:
        """Make every write so far durable with one fsync (the group commit point)."""
        if self._dirty:
            self._fs.sync(_wal_name(self._segment_seq))
            self._dirty = False
        self._synced_index = self.last_index()
        if self._segment_size >= self._segment_bytes:
            self._start_segment(self._segment_seq + 1, self._entries)
            self._fs.sync_dir()

    def apply_snapshot(self, snapshot: Snapshot) -> None:
        """Make `snapshot` the log's base: a local compaction at an applied index, or a snapshot
        installed from the leader. Entries after it survive only if the log matches it there."""
        meta = snapshot.meta
        if meta.index <= self._snapshot_meta.index:
            raise ValueError(
                f"snapshot at {meta.index} is not newer than the current one at {self._snapshot_meta.index}"
            )
        self.sync()
        tmp = _snap_name(meta.index) + ".tmp"
        record = encode_record(RecordType.SNAPSHOT, _pack(codec.snapshot_to_obj(snapshot)))
        self._fs.write(tmp, record)
        self._fs.sync(tmp)
        self._fs.rename(tmp, _snap_name(meta.index))
        self._fs.sync_dir()
        self._adopt_snapshot(meta)
        self._rewrite_log()

    # --- internals ----------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._fs.append(_wal_name(self._segment_seq), data)
        self._segment_size += len(data)
        self._dirty = True

    def _start_segment(self, seq: int, entries: Sequence[Entry], mark: SnapshotMeta | None = None) -> None:
        """Begin segment `seq`, self-contained: it restates hard state, conf state and (with
        `mark`) the snapshot base, followed by `entries`; it is fsynced before it is used."""
        records = [
            encode_record(RecordType.HARD_STATE, _pack(codec.hard_state_to_obj(self._hard_state))),
            encode_record(RecordType.CONF_STATE, _pack(codec.conf_state_to_obj(self._snapshot_meta.conf))),
        ]
        if mark is not None:
            records.append(encode_record(RecordType.SNAPSHOT_MARK, _pack([mark.index, mark.term])))
            records += [encode_record(RecordType.ENTRY, _pack(codec.entry_to_obj(e))) for e in entries]
        data = b"".join(records)
        self._segment_seq = seq
        self._fs.write(_wal_name(seq), data)
        self._fs.sync(_wal_name(seq))
        self._segment_size = len(data)
        self._dirty = False

    def _adopt_snapshot(self, meta: SnapshotMeta) -> None:
        """Base the in-memory log on `meta` (commit never lags a snapshot)."""
        self._reset_to(meta)
        if self._hard_state.commit < meta.index:
            self._hard_state = replace(self._hard_state, commit=meta.index)

    def _rewrite_log(self) -> None:
        """Write a self-contained segment of the current state, then delete everything older."""
        self._start_segment(self._segment_seq + 1, self._entries, mark=self._snapshot_meta)
        self._fs.sync_dir()
        self._synced_index = self.last_index()
        keep = {_wal_name(self._segment_seq), _snap_name(self._snapshot_meta.index)}
        for name in self._fs.list():
            if name.startswith((_WAL_PREFIX, _SNAP_PREFIX)) and name not in keep:
                self._fs.remove(name)
        self._fs.sync_dir()

    def _reset_to(self, meta: SnapshotMeta) -> bool:
        """The replay rule for a snapshot base: keep the suffix only if the log matches it."""
        matches = False
        if self._snapshot_meta.index < meta.index <= self.last_index():
            matches = self.term(meta.index) == meta.term
        elif meta.index == self._snapshot_meta.index:
            matches = meta.term == self._snapshot_meta.term
        if matches:
            self._entries = self._entries[meta.index - self._snapshot_meta.index :]
        else:
            self._entries = []
        self._snapshot_meta = meta
        return matches

    def _where(self, name: str) -> str:
        """``name`` with its directory, for the operator (the in-memory file system has none)."""
        directory = getattr(self._fs, "directory", None)
        return name if directory is None else os.path.join(directory, name)

    def _read_snapshot_file(self, name: str) -> Snapshot:
        where = self._where(name)
        try:
            result = scan(self._fs.read(name), where)
        except CorruptLogError as exc:  # a valid record inside a damaged one: still one file's damage
            raise CorruptSnapshotError(where, exc.offset, "a damaged record") from exc
        if result.damage is not None:
            raise CorruptSnapshotError(where, result.valid_end, result.damage)
        if len(result.records) != 1:
            raise CorruptSnapshotError(where, 0, f"{len(result.records)} records, expected exactly one")
        rtype, payload = result.records[0]
        if rtype != RecordType.SNAPSHOT:
            raise CorruptSnapshotError(where, 0, f"expected a snapshot record, found {rtype.name}")
        try:
            return codec.snapshot_from_obj(_unpack(payload))
        except Exception as exc:  # the checksum matched: a format this code cannot read
            raise CorruptSnapshotError(where, 0, f"its snapshot record cannot be decoded ({exc!r})") from exc

    def _recover(self) -> None:
        names = self._fs.list()
        for name in names:
            if name.endswith(".tmp"):
                self._fs.remove(name)  # a snapshot whose rename never happened
        snaps = sorted(n for n in names if n.startswith(_SNAP_PREFIX) and n.endswith(_SNAP_SUFFIX))
        wals = sorted(n for n in names if n.startswith(_WAL_PREFIX) and n.endswith(_WAL_SUFFIX))
        scans = [self._scan_segment(name, last=i == len(wals) - 1) for i, name in enumerate(wals)]
        # Replay from the newest self-contained segment: anything older is superseded by it (and
        # may be partly deleted already if a crash interrupted a compaction).
        start = max((i for i, records in enumerate(scans) if _self_contained(records)), default=0)
        for name, records in zip(wals[start:], scans[start:]):
            self._replay_records(name, records)
        if snaps:
            meta = self._read_snapshot_file(snaps[-1]).meta
            if meta.index > self._snapshot_meta.index:
                self._adopt_snapshot(meta)  # crashed before the snapshot's segment was durable
            elif meta.index == self._snapshot_meta.index:
                self._snapshot_meta = meta  # the file has the membership as of the snapshot
            else:
                raise CorruptLogError(
                    self._where(snaps[-1]),
                    0,
                    f"the log is based on a snapshot at "
                    f"{self._snapshot_meta.index} but the newest file is older",
                )
        elif self._snapshot_meta.index > 0:
            raise CorruptLogError(
                self._where(wals[-1]), 0, f"snapshot file for index {self._snapshot_meta.index} is missing"
            )
        if wals:
            self._segment_seq = int(wals[-1][len(_WAL_PREFIX) : -len(_WAL_SUFFIX)])
        # Restart on a fresh self-contained segment so new writes never follow a repaired tail.
        self._rewrite_log()

    def _scan_segment(self, name: str, last: bool) -> list[tuple[RecordType, bytes]]:
        """A segment's valid records; a torn tail of the last segment is cut off the file."""
        result = scan(self._fs.read(name), self._where(name))
        if result.damage is not None:
            if not last:
                raise CorruptLogError(
                    self._where(name), result.valid_end, result.damage + " (a later segment follows it)"
                )
            self._fs.truncate(name, result.valid_end)
            self._fs.sync(name)
        return result.records

    def _replay_records(self, name: str, records: list[tuple[RecordType, bytes]]) -> None:
        for rtype, payload in records:
            obj = _unpack(payload)
            if rtype == RecordType.ENTRY:
                self._replay_entry(codec.entry_from_obj(obj), name)
            elif rtype == RecordType.HARD_STATE:
                self._hard_state = codec.hard_state_from_obj(obj)
            elif rtype == RecordType.CONF_STATE:
                self._snapshot_meta = replace(self._snapshot_meta, conf=codec.conf_state_from_obj(obj))
            elif rtype == RecordType.SNAPSHOT_MARK:
                assert isinstance(obj, list)
                index, term = obj
                self._reset_to(SnapshotMeta(index, term, self._snapshot_meta.conf))
            else:
                raise CorruptLogError(self._where(name), 0, f"unexpected {rtype.name} record in a segment")

    def _replay_entry(self, entry: Entry, name: str) -> None:
        base = self._snapshot_meta.index
        if entry.index <= base:
            return
        if entry.index > self.last_index() + 1:
            raise CorruptLogError(
                self._where(name),
                0,
                f"entry {entry.index} leaves a gap after {self.last_index()} (a segment is missing)",
            )
        del self._entries[entry.index - base - 1 :]
        self._entries.append(entry)
