"""The commit log's record format, and reading a log back: torn tail versus corruption.

A record is ``[u32 length][u32 crc32 of the payload][payload]`` (little-endian), appended by
``commit_log.CommitLog``. Reading tells two kinds of bad bytes apart the way the Raft log does
(``tabletdb.raft.record_scan``, shared):

* A **torn tail**: a bad record with no valid record after it. A crash in the middle of an append
  leaves one; it was never acknowledged in ``batch`` mode (the append returns after its
  ``fdatasync``), and in ``periodic`` mode only a power loss can tear it (a kill -9 leaves whole
  records: ``write(2)`` of a record completes in the kernel), which may lose the period's writes
  by design. It is dropped.
* **Corruption**: a bad stretch followed by a valid record. Nothing is appended after a torn
  record (a replay empties the log before new appends), so the bytes were damaged after they were
  written, and the writes in them were acknowledged. The replay refuses to start on it
  (``CommitLogCorrupt``) unless told to skip it.

A bad *last* record whose bytes are all there (its length fits the file, its crc32 does not
match) counts as a torn tail too, as in the Raft log: a power loss can leave a file grown by the
record's length without its last blocks on disk, and that cannot be told from a bit flipped
later. It is still dropped, but reported at WARNING (``Stretch.whole``), unlike a record cut
short, which is what an ordinary crash leaves. A payload is never empty, so a zero length is
never valid and a run of zero bytes (what a power loss most often leaves) never parses as a
record.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from tabletdb.raft.record_scan import scan_records

HEADER = struct.Struct("<II")
"""Length of the payload, crc32 of the payload."""

SKIP_CORRUPT_SETTING = "commitlog_skip_corrupt_records"
"""The node setting that lets a replay skip corruption (named in the refusal)."""


def encode(payload: bytes) -> bytes:
    """One record holding ``payload`` (never empty: see the module docstring)."""
    if not payload:
        raise ValueError("a commit log record needs a payload")
    return HEADER.pack(len(payload), zlib.crc32(payload)) + payload


@dataclass(frozen=True)
class Stretch:
    """Bad bytes of a log: from a record that fails to parse up to the next valid one (or the
    end of the file)."""

    offset: int
    end: int
    found: str
    """What the bad record's header or checksum showed (for the operator)."""
    claimed_end: int
    """Where the bad record ends if its length field is right."""

    @property
    def size(self) -> int:
        return self.end - self.offset

    @property
    def whole(self) -> bool:
        """The bad record's bytes are all in the file: its checksum failed, it is not cut short."""
        return self.offset + HEADER.size < self.claimed_end <= self.end

    @property
    def one_record(self) -> bool:
        """The stretch is exactly the bad record (its length field is intact): one record lost.
        Otherwise the header is damaged and how many records the bytes held is unknown."""
        return self.claimed_end == self.end


@dataclass(frozen=True)
class LogContents:
    """What reading a log found."""

    records: list[bytes]
    """Every valid record in file order, those after corrupt stretches included."""
    corrupt: list[Stretch]
    """Bad stretches each followed by a valid record: damage to acknowledged writes."""
    torn_tail: Stretch | None
    """Bad bytes at the end with nothing valid after them: an interrupted append, dropped."""
    size: int
    """Bytes in the file."""

    @property
    def corrupt_bytes(self) -> int:
        return sum(stretch.size for stretch in self.corrupt)


class CommitLogCorrupt(Exception):
    """A log holds damage followed by valid records: the node must not start on it silently."""

    def __init__(self, path: Path, contents: LogContents) -> None:
        first = contents.corrupt[0]
        more = len(contents.corrupt) - 1
        others = f" (and {more} more damaged stretch(es))" if more else ""
        super().__init__(
            f"commit log {path} is corrupt at byte offset {first.offset}: found {first.found}{others}, "
            f"followed by valid records ({len(contents.records)} valid in all), so this is damage to "
            f"acknowledged writes, not a torn tail; the file is left untouched. To start anyway, "
            f"start once with {SKIP_CORRUPT_SETTING}: true (or -o {SKIP_CORRUPT_SETTING}=true): "
            f"the {contents.corrupt_bytes} damaged bytes are skipped and the writes in them lost on "
            f"this node, every valid record is replayed and a copy of the log is kept beside it"
        )
        self.path = path
        self.contents = contents


def read_log(path: Path) -> LogContents:
    """Every valid record of the log at ``path``, and where its bad bytes are."""
    data = path.read_bytes()
    records: list[bytes] = []
    corrupt: list[Stretch] = []
    start = 0
    while True:
        found = scan_records(data, _record_at, _describe, _claimed_end, HEADER.size, start)
        records.extend(found.records)
        damage = found.damage
        if damage is None:
            return LogContents(records, corrupt, None, len(data))
        end = len(data) if damage.resume is None else damage.resume
        stretch = Stretch(damage.offset, end, damage.reason, _claimed_end(data, damage.offset))
        if damage.resume is None:
            return LogContents(records, corrupt, stretch, len(data))
        corrupt.append(stretch)
        start = damage.resume


def _record_at(data: bytes, offset: int) -> tuple[bytes, int] | None:
    if offset + HEADER.size > len(data):
        return None
    length, crc = HEADER.unpack_from(data, offset)
    start = offset + HEADER.size
    end = start + length
    if length == 0 or end > len(data):
        return None
    payload = data[start:end]
    if zlib.crc32(payload) != crc:
        return None
    return payload, end


def _claimed_end(data: bytes, offset: int) -> int:
    if offset + HEADER.size > len(data):
        return len(data)
    length: int = HEADER.unpack_from(data, offset)[0]
    return offset + HEADER.size + length


def _describe(data: bytes, offset: int) -> str:
    left = len(data) - offset
    if left < HEADER.size:
        return f"a short header ({left} of {HEADER.size} bytes)"
    length: int = HEADER.unpack_from(data, offset)[0]
    if length == 0:
        return "a record header with a zero length (no record is empty)"
    if HEADER.size + length > left:
        return f"a record header claiming {length} bytes with {left - HEADER.size} left in the file"
    return f"a {length}-byte record whose crc32 does not match its payload"
