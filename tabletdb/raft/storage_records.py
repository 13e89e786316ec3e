"""Checksummed record framing for the durable Raft log's segment and snapshot files.

A record is ``length:u32 | crc32:u32 | type:u8 | payload`` (little-endian); the checksum covers
the type byte and the payload, so a torn write (a short record) and a flipped bit are both
caught. `scan` tells a torn *tail* (only garbage follows the bad record: drop it) from
corruption in the *middle* (a valid record follows: refuse to start), because silently dropping
acknowledged entries behind a bad record would break Raft's promises. How the two are told apart
is shared with the node's commit log (`record_scan`). A bad *last* record is a torn tail even
when it is whole-sized: a power loss can leave a record's length on disk without its bytes, and
nothing after it was ever synced, so nothing depending on it was sent. A zero type byte is never
valid, so a run of zeros never parses as a record.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

from tabletdb.raft.record_scan import scan_records

HEADER = struct.Struct("<IIB")
MAX_PAYLOAD = 64 << 20
"""A larger length field can only be garbage; it keeps a corrupt header from claiming gigabytes."""


class RecordType(IntEnum):
    ENTRY = 1
    HARD_STATE = 2
    CONF_STATE = 3
    SNAPSHOT_MARK = 4
    """The log was reset to a snapshot's (index, term): see `storage` for the replay rule."""
    SNAPSHOT = 5
    """The whole content of a snapshot file."""


RAFT_REMEDY = (
    "restore the node's raft directory from a backup of this node, or start the node afresh "
    "(a new workdir) so that it joins as a new node"
)


class CorruptLogError(Exception):
    """The durable Raft log is damaged or inconsistent; the node must not start on it.

    ``torn_tail_ruled_out`` says the damage is followed by valid records (so it cannot be an
    append cut short, which would be dropped silently); other inconsistencies say only what
    they found."""

    def __init__(self, file: str, offset: int, reason: str, *, torn_tail_ruled_out: bool = False) -> None:
        follows = "; valid records follow it, so this is not a torn tail" if torn_tail_ruled_out else ""
        super().__init__(
            f"durable Raft log is corrupt: {file} at byte offset {offset}: {reason}{follows}; {RAFT_REMEDY}"
        )
        self.file = file
        self.offset = offset


class CorruptSnapshotError(CorruptLogError):
    """A Raft snapshot file is damaged. Snapshot files are written under a temporary name,
    fsynced and renamed, so a crash never leaves a partial one: damage is damage, never a tear."""

    def __init__(self, file: str, offset: int, reason: str) -> None:
        Exception.__init__(
            self,
            f"Raft snapshot file is corrupt: {file} at byte offset {offset}: {reason}; snapshot files "
            f"are written whole (temporary name, fsync, rename), so this is damage to a complete "
            f"file, not an interrupted write; {RAFT_REMEDY}",
        )
        self.file = file
        self.offset = offset


def encode_record(rtype: RecordType, payload: bytes) -> bytes:
    body = bytes([rtype]) + payload
    return HEADER.pack(len(payload), zlib.crc32(body), rtype) + payload


def _record_at(data: bytes, offset: int) -> tuple[tuple[RecordType, bytes], int] | None:
    """The valid record starting at `offset` as ((type, payload), end), or None."""
    if offset + HEADER.size > len(data):
        return None
    length, crc, rtype = HEADER.unpack_from(data, offset)
    end = offset + HEADER.size + length
    if length > MAX_PAYLOAD or end > len(data):
        return None
    if rtype not in RecordType._value2member_map_:
        return None
    payload = data[offset + HEADER.size : end]
    if zlib.crc32(bytes([rtype]) + payload) != crc:
        return None
    return (RecordType(rtype), payload), end


@dataclass
class ScanResult:
    records: list[tuple[RecordType, bytes]]
    valid_end: int
    """Offset just after the last valid record; bytes beyond it are a torn tail to truncate."""
    damage: str | None = None


def scan(data: bytes, file: str) -> ScanResult:
    """Parse all records; a damaged record followed by any valid record raises CorruptLogError."""
    found = scan_records(data, _record_at, _describe_damage, _claimed_end, HEADER.size)
    damage = found.damage
    if damage is not None and not damage.torn_tail:
        raise CorruptLogError(file, damage.offset, damage.reason, torn_tail_ruled_out=True)
    return ScanResult(found.records, found.end, damage.reason if damage is not None else None)


def _claimed_end(data: bytes, offset: int) -> int:
    if offset + HEADER.size > len(data):
        return len(data)
    length: int = HEADER.unpack_from(data, offset)[0]
    return offset + HEADER.size + length


def _describe_damage(data: bytes, offset: int) -> str:
    if offset + HEADER.size > len(data):
        return f"short header ({len(data) - offset} of {HEADER.size} bytes)"
    length, _, rtype = HEADER.unpack_from(data, offset)
    if length > MAX_PAYLOAD:
        return f"implausible length {length}"
    if offset + HEADER.size + length > len(data):
        return f"short payload ({len(data) - offset - HEADER.size} of {length} bytes)"
    if rtype not in RecordType._value2member_map_:
        return f"unknown record type {rtype}"
    return "checksum mismatch"
