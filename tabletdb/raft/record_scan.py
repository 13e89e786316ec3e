"""Reading an append-only file of checksummed records: a torn tail versus damage in the middle.

Both of the node's append-only logs (the Raft log, ``storage_records``, and the commit log of
user data, ``tabletdb.storage.commit_log``, which sits above raft in the layering) frame records
with a length and a crc32, each in its own layout. What they share is how a bad record is judged,
and that lives here once:

* A crash in the middle of an append leaves a *torn tail*: the last record is short, or (after a
  power loss, when the file grew but its last block never reached the disk) whole-sized with
  garbage in it. Nothing valid can follow it, because nothing was appended after it.
* A bad record that *is* followed by a valid one cannot be a torn append: the later record was
  written after it. That is damage to bytes already written (media, a stray write, an edit), and
  the records in it were acknowledged once; dropping them silently loses data.

So `scan_records` stops at the first bad record and finds the first valid record starting at a
later byte offset (`next_record`); the caller decides what damage means for its log. Every byte
offset is a candidate, and each may read a length that fits the file and cost a crc32 over that
many bytes; so the search first looks where the bad record's own header says it ends
(``claimed_end``; damage inside a payload leaves the header right). If a valid record starts
there, any valid record between must end by it (a chain of records meeting it), so the offsets
in between are tried against the data up to that point only, which keeps each crc32 within the
damaged record. A "record" found by chance in garbage would need a matching crc32 (odds of
2**-32 per offset), so each format must make sure a run of zero bytes, what a power loss most
often leaves, never parses as a valid record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

RecordAt = Callable[[bytes, int], tuple[T, int] | None]
"""A format's parser: the valid record starting at an offset and the offset after it, or None."""

Describe = Callable[[bytes, int], str]
"""A format's account of why the record at an offset is not valid (for the operator)."""

ClaimedEnd = Callable[[bytes, int], int]
"""Where the (bad) record at an offset ends if its header's length is right."""


@dataclass(frozen=True)
class Damage:
    """A record that failed to parse, and where the next valid record starts, if anywhere."""

    offset: int
    reason: str
    resume: int | None
    """Offset of the first valid record after the bad one; None when none follows (a torn tail)."""

    @property
    def torn_tail(self) -> bool:
        return self.resume is None


@dataclass(frozen=True)
class Scan(Generic[T]):
    records: list[T]
    """The valid records from the start offset up to the first bad one (or the end)."""
    end: int
    """Offset just after the last of ``records``."""
    damage: Damage | None
    """The bad record ``records`` stopped at; None when the scan reached the end of the data."""


def scan_records(
    data: bytes,
    record_at: RecordAt[T],
    describe: Describe,
    claimed_end: ClaimedEnd,
    header_size: int,
    start: int = 0,
) -> Scan[T]:
    """Parse records from ``start`` up to the first bad one; see the module docstring."""
    records: list[T] = []
    offset = start
    while offset < len(data):
        record = record_at(data, offset)
        if record is None:
            resume = next_record(data, offset, record_at, claimed_end, header_size)
            return Scan(records, offset, Damage(offset, describe(data, offset), resume))
        value, offset = record
        records.append(value)
    return Scan(records, offset, None)


def next_record(
    data: bytes, bad: int, record_at: RecordAt[T], claimed_end: ClaimedEnd, header_size: int
) -> int | None:
    """The first offset after ``bad`` where a valid record starts, or None if none does."""
    claimed = claimed_end(data, bad)
    if bad < claimed <= len(data) - header_size and record_at(data, claimed) is not None:
        between = _first_valid(data[:claimed], bad + 1, record_at, header_size)  # see above
        return claimed if between is None else between
    return _first_valid(data, bad + 1, record_at, header_size)


def _first_valid(data: bytes, start: int, record_at: RecordAt[T], header_size: int) -> int | None:
    for offset in range(start, len(data) - header_size + 1):
        if record_at(data, offset) is not None:
            return offset
    return None
