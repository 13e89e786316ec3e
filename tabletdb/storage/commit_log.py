"""An append-only, checksummed log file: the node-wide commit log's file.

Records are framed as ``commit_records`` describes (length, crc32, payload), which also reads a
log back and tells a torn tail (dropped) from corruption (refused). ``append`` returns only after
the whole record is written (to the disk with ``sync``, else to the OS, which keeps it through a
crash of the process but not of the machine). ``reset`` empties the file (synced) once
everything it holds is durable elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from tabletdb.storage.commit_records import CommitLogCorrupt, LogContents, encode, read_log
from tabletdb.storage.fsync import fsync_path


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
        record = encode(payload)
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

    def read(self) -> LogContents:
        """Every valid record, and where the file's bad bytes are (``commit_records``)."""
        return read_log(self.path)

    def records(self) -> list[bytes]:
        """Every whole record in order, a torn tail dropped; CommitLogCorrupt if the file is
        damaged between valid records."""
        contents = self.read()
        if contents.corrupt:
            raise CommitLogCorrupt(self.path, contents)
        return contents.records

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
