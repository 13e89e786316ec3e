"""An append-only, checksummed log file: the node-wide commit log's file.

Each record is ``[u32 length][u32 crc32 of the payload][payload]`` (little-endian). A crash in the
middle of an append leaves a torn tail: ``records`` stops at the first record that is short or
whose checksum fails, so a torn record is dropped, never replayed - it was never acknowledged,
because ``append`` returns only after the whole record is written (to the disk with ``sync``,
else to the OS, which keeps it through a crash of the process but not of the machine).
``reset`` empties the file (synced) once everything it holds is durable elsewhere.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from tabletdb.storage.fsync import fsync_path

_HEADER = struct.Struct("<II")


class CommitLog:
    """One log file; not thread-safe (its user serializes appends, resets and closing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if new:  # the file's directory entry must survive power loss too
            os.fsync(self._fd)
            fsync_path(path.parent)
        self.size = os.fstat(self._fd).st_size
        """Bytes in the file (replayed records included until ``reset``)."""

    def append(self, payload: bytes, *, sync: bool = True) -> None:
        """Write one record; with ``sync`` also make it durable (``fdatasync``) before returning."""
        if self._fd < 0:  # never write through a closed descriptor: its number may be reused
            raise OSError("the commit log is closed")
        record = _HEADER.pack(len(payload), zlib.crc32(payload)) + payload
        view = memoryview(record)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.size += len(record)
        if sync:
            os.fdatasync(self._fd)

    def sync(self) -> None:
        """Make every record appended so far durable. May run on another thread beside appends
        (never beside ``reset`` or ``close``)."""
        if self._fd < 0:
            raise OSError("the commit log is closed")
        os.fdatasync(self._fd)

    def records(self) -> Iterator[bytes]:
        """Every whole record in order, up to the first torn or corrupt one."""
        with open(self.path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + _HEADER.size <= len(data):
            length, crc = _HEADER.unpack_from(data, pos)
            start = pos + _HEADER.size
            payload = data[start : start + length]
            if len(payload) < length or zlib.crc32(payload) != crc:
                return
            yield payload
            pos = start + length

    def reset(self) -> None:
        """Empty the file, durably."""
        os.ftruncate(self._fd, 0)
        os.fsync(self._fd)
        self.size = 0

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
