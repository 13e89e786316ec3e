"""A live file's committed write-ahead-log frames, carried beside its raw bytes and replayed into
them at the other end: a consistent image of a WAL-mode file without checkpointing it first.

Why (``storage.pinned_image.pin_with_log`` holds the state still; this module is the file-format
half of it, sans I/O but for ``replay_into``'s writes). In WAL mode a committed state is the
database file *plus* the log's frames up to the last commit a reader sees (SQLite's "WAL file
format"): a frame is a 24-byte header (page number, the database's size in pages after the commit
for a commit frame else 0, the log header's two salts, two checksums) and one page. A state is
rebuilt from the file by writing each frame's page in log order (a later frame of a page wins) and
cutting the file at the last commit's size; that is exactly what a complete checkpoint writes.

Which frames belong to the current log: those from the first on whose salts equal the log
header's. A restarted log gets new salts, so frames left over from an older pass over the file
(beyond the current end) stop the scan; frames after the last commit frame are a rolled-back
transaction's and are not part of any state.

The frames' own checksums are not recomputed here: the image, frames included, is checksummed end
to end (XXH3-128, ``net.dedicated``) between the source's bytes and the target's, and the source
reads only frames SQLite committed while no write was under way.
"""

from __future__ import annotations

import os
import struct

from tabletdb.storage.tablet_store import StorageError

LOG_HEADER = 32
FRAME_HEADER = 24
_MAGICS = (0x377F0682, 0x377F0683)
"""The log header's magic: its checksums little- or big-endian; the fields are big-endian either way."""
_HEAD = struct.Struct(">6I")
_FRAME = struct.Struct(">4I")


def page_size_of(log: bytes) -> int:
    """The page size the log header names; ``StorageError`` if it is not a log header."""
    if len(log) < LOG_HEADER:
        raise StorageError(f"a write-ahead log of {len(log)} bytes has no header")
    magic, _version, page_size, _seq, _salt1, _salt2 = _HEAD.unpack_from(log, 0)
    if magic not in _MAGICS or page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        raise StorageError(f"not a SQLite write-ahead log header (magic {magic:#x}, page size {page_size})")
    return int(page_size)


def committed_prefix(log: bytes) -> tuple[int, int]:
    """(bytes, pages): how many of ``log``'s first bytes hold its header and every frame up to its
    last commit frame, and the database's size in pages after that commit; (0, 0) when the log
    holds no committed frame (empty, never written, or restarted and not written since)."""
    if len(log) < LOG_HEADER:
        return 0, 0
    frame = FRAME_HEADER + page_size_of(log)
    salts = log[16:24]
    end = pages = 0
    at = LOG_HEADER
    while at + frame <= len(log) and log[at + 8 : at + 16] == salts:
        _pgno, commit, _s1, _s2 = _FRAME.unpack_from(log, at)
        at += frame
        if commit:
            end, pages = at, commit
    return end, int(pages)


def replay_into(fd: int, log: bytes) -> int:
    """Write every frame of ``log`` (a committed prefix: the header, then whole frames, the last a
    commit) into the database file open at ``fd``, in order, and cut the file at the last
    commit's size; returns that size in bytes. ``StorageError`` for anything that is not such a
    prefix (a frame of another log, a cut frame, no commit at the end)."""
    page_size = page_size_of(log)
    frame = FRAME_HEADER + page_size
    frames, rest = divmod(len(log) - LOG_HEADER, frame)
    if rest or not frames:
        raise StorageError(f"a log prefix of {len(log)} bytes is not whole frames of {page_size}-byte pages")
    salts = log[16:24]
    view = memoryview(log)
    commit = 0
    for at in range(LOG_HEADER, len(log), frame):
        pgno, commit, _s1, _s2 = _FRAME.unpack_from(log, at)
        if log[at + 8 : at + 16] != salts or pgno == 0:
            raise StorageError(f"log frame {(at - LOG_HEADER) // frame + 1} is not one of this log's")
        if os.pwrite(fd, view[at + FRAME_HEADER : at + frame], (pgno - 1) * page_size) != page_size:
            raise StorageError(f"page {pgno} of log frame {(at - LOG_HEADER) // frame + 1}: a short write")
    if not commit:
        raise StorageError(f"the log prefix's last frame ({frames}) is not a commit")
    size = int(commit) * page_size
    os.ftruncate(fd, size)
    return size
