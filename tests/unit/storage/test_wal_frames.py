"""The log-frame half of a pin with log (``storage.wal_frames``): which frames of a real SQLite
log are committed, and a replay that refuses anything but whole frames of one log ending in a
commit."""

from __future__ import annotations

import os
import sqlite3
import struct
from pathlib import Path

import pytest

from tabletdb.storage.images.wal_frames import (
    FRAME_HEADER,
    LOG_HEADER,
    committed_prefix,
    page_size_of,
    replay_into,
)
from tabletdb.storage.tablet_store import StorageError


def _wal_of(tmp: Path, transactions: int) -> tuple[Path, bytes]:
    """A WAL-mode file with ``transactions`` committed ones all in its log (no checkpoint)."""
    path = tmp / "w.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    for n in range(transactions):
        conn.execute("INSERT INTO t VALUES (?, ?)", (n, bytes([n]) * 2000))
    log = path.with_name("w.db-wal").read_bytes()
    conn.close()  # folds the log in: the file is now the state the log ended at
    return path, log


def test_the_committed_prefix_ends_at_the_last_commit_and_ignores_frames_after_it(tmp_path: Path) -> None:
    path, log = _wal_of(tmp_path, 5)
    page_size = page_size_of(log)
    frame = FRAME_HEADER + page_size
    end, pages = committed_prefix(log)
    assert end == len(log) and (end - LOG_HEADER) % frame == 0
    assert pages * page_size == path.stat().st_size
    # a frame of a rolled-back transaction (this log's salts, no commit size) is not part of it
    extra = bytearray(log[-frame:])
    extra[4:8] = b"\0\0\0\0"
    assert committed_prefix(log + bytes(extra)) == (end, pages)
    # a frame left by an older pass over the file (other salts) ends the scan even with a commit
    stale = bytearray(log[-frame:])
    stale[8:12] = struct.pack(">I", struct.unpack(">I", stale[8:12])[0] + 1)
    first = log[: LOG_HEADER + frame]
    assert committed_prefix(first + bytes(stale)) == committed_prefix(first)
    assert committed_prefix(b"") == (0, 0)


def test_replaying_the_log_into_the_file_it_started_from_gives_the_folded_file(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = path.read_bytes()
    for n in range(20):
        conn.execute("INSERT OR REPLACE INTO t VALUES (?, ?)", (n % 7, bytes([n]) * 3000))
    log = path.with_name("w.db-wal").read_bytes()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    folded = path.read_bytes()
    conn.close()
    image = tmp_path / "image.db"
    image.write_bytes(before)
    fd = os.open(image, os.O_RDWR)
    try:
        assert replay_into(fd, log[: committed_prefix(log)[0]]) == len(folded)
    finally:
        os.close(fd)
    assert image.read_bytes() == folded


def test_a_replay_refuses_cut_frames_foreign_frames_and_an_uncommitted_end(tmp_path: Path) -> None:
    _, log = _wal_of(tmp_path, 3)
    frame = FRAME_HEADER + page_size_of(log)
    target = tmp_path / "target"
    target.write_bytes(b"")
    fd = os.open(target, os.O_RDWR)
    try:
        with pytest.raises(StorageError, match="not whole frames"):
            replay_into(fd, log[:-1])
        with pytest.raises(StorageError, match="not whole frames"):
            replay_into(fd, log[:LOG_HEADER])
        foreign = bytearray(log)
        foreign[LOG_HEADER + frame + 12] ^= 0xFF  # the second frame's second salt
        with pytest.raises(StorageError, match="frame 2 is not one of this log's"):
            replay_into(fd, bytes(foreign))
        uncommitted = bytearray(log)
        uncommitted[-frame + 4 : -frame + 8] = b"\0\0\0\0"
        with pytest.raises(StorageError, match="is not a commit"):
            replay_into(fd, bytes(uncommitted))
        with pytest.raises(StorageError, match="not a SQLite write-ahead log header"):
            replay_into(fd, b"\0" * len(log))
    finally:
        os.close(fd)
