"""A live tablet file read as a consistent image, without copying it first.

Streaming a replica used to copy the file through SQLite's online-backup API before sending the
copy: about as much work as the send itself. This module instead holds the live file still.

Why the raw bytes of a WAL-mode file can be a consistent image (SQLite's ``wal.c`` locking
rules): a reader that begins when every frame of the write-ahead log has been copied back into
the database file (a complete checkpoint) takes read-lock 0, and a reader holding read-lock 0
reads the database file only, ignoring the log. A checkpoint must hold read-lock 0 exclusively
before it copies any frame into the database file, so while that reader's transaction is open no
checkpoint (passive, automatic or explicit) writes into the file; writers append to the log only.
So, with the store's writes held off (its write lock), ``pin_file`` checkpoints, checks the
checkpoint got every frame, and begins a read transaction on a connection of its own before
letting writes go on: from then until ``PinnedImage.close`` the first ``size`` bytes of the file
are one committed state, however much is written meanwhile. If the checkpoint could not take
every frame (a reader of an older state holds part of the log), there is no pin: the caller
copies instead. While pinned the log grows (nothing can fold it in), so pins are short-lived.

The bytes are a WAL-mode file (header bytes 18-19); ``as_rollback_file`` turns a received image
into a self-contained rollback-journal file, as the backup copies were, before it is checked and
installed. It does so by the two header bytes alone: a pinned image is a complete checkpoint (no
frame of its state lives in a log), and SQLite's own switch out of WAL mode (``PRAGMA
journal_mode = DELETE``) changes nothing else in the file either (``sqlite3BtreeSetVersion``),
but it commits that change as a transaction: a journal, and fsyncs of their own. The one fsync
of the whole file comes later, when the image is checked (``snapshot_files.check_image``).

Streaming pins without the checkpoint (``pin_with_log``): the checkpoint's two fsyncs (the log's,
then the file's) were most of a stream's set-up, and a source needs no durability for an image it
only reads. With writes held off, a read transaction begins (its state: every commit so far),
and the log's header and frames up to its last commit are copied into memory
(``wal_frames.committed_prefix``); writes then go on. The image is the file's first bytes (as
many as that state's pages, or the file's length if shorter) followed by those frames; the
receiver replays the frames into the bytes (``wal_frames.replay_into``), which gives the state's
file exactly as a complete checkpoint would have written it. Checkpoints may run meanwhile and
write into the file under the bytes being sent: the read transaction holds every one of them to
frames of its state, and every page a checkpoint can write there is in the frames sent, which the
replay writes over it, torn or not. Pages in no frame are never written by a checkpoint of this
log, so they stay as they were. The frames are copied while writes are held off, so a log
restarted later (possible when the reader sits on read-lock 0) cannot change them. A log longer
than ``LOG_LIMIT`` is not carried (None: the caller copies the file instead).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tabletdb.storage.images.wal_frames import committed_prefix, page_size_of
from tabletdb.storage.tablet_store import StorageError, TabletStore

log = logging.getLogger(__name__)

LOG_LIMIT = 32 << 20
"""Bytes of write-ahead log a pin carries in memory at most. SQLite folds a log in after 1,000
pages (4 MB) written; one far longer means readers held checkpoints off for long."""


@dataclass
class PinnedImage:
    """The first ``size`` bytes of ``file`` stay one committed state until ``close``, once the
    frames in ``log`` (if any: ``pin_with_log``) are replayed into them."""

    path: Path
    size: int
    file: BinaryIO
    _reader: sqlite3.Connection = field(repr=False)
    log: bytes = b""

    @property
    def total(self) -> int:
        """Bytes of the image as sent: the file's, then the log's."""
        return self.size + len(self.log)

    def read_at(self, offset: int, length: int) -> bytes:
        """Bytes of the image (the file's, then the log's; never past ``total``); any thread."""
        in_file = max(0, min(length, self.size - offset))
        data = os.pread(self.file.fileno(), in_file, offset) if in_file else b""
        if offset + length > self.size and self.log:
            start = max(offset, self.size) - self.size
            data += self.log[start : start + length - in_file]
        return data

    def close(self) -> None:
        """End the read transaction (checkpoints may write the file again) and close the file;
        any thread."""
        try:
            self._reader.close()
        finally:
            self.file.close()


def pin_store(store: TabletStore) -> PinnedImage | None:
    """Pin the file of ``store`` (its deferred rows written first by the caller, on the store's
    owner thread); blocks writes to it for one checkpoint. Any thread."""
    return store.holding_writes(lambda writer: pin_file(store.path, writer))


def pin_store_with_log(store: TabletStore) -> PinnedImage | None:
    """``pin_with_log`` for ``store`` (its deferred rows written first by the caller); blocks
    writes to it while the log's committed frames are copied, no checkpoint, no fsync. Any thread."""
    return store.holding_writes(lambda _writer: pin_with_log(store.path))


def pin_with_log(path: Path) -> PinnedImage | None:
    """Pin the live file at ``path`` with its log's committed frames (module docstring). The
    caller holds the lock every write to the file takes. None when the log is longer than
    ``LOG_LIMIT`` or does not end where the state does (copy the file instead)."""
    file = open(path, "rb")  # noqa: SIM115 - handed to the PinnedImage, closed by it
    reader: sqlite3.Connection | None = None
    try:
        reader = sqlite3.connect(  # pinned on a worker thread, released on the event loop's
            f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the state is chosen here
        (page_size,) = reader.execute("PRAGMA page_size").fetchone()
        (page_count,) = reader.execute("PRAGMA page_count").fetchone()
        frames = _committed_log(path.with_name(path.name + "-wal"))
        if frames is not None and frames[0]:
            log_pages, log_page_size = frames[1], page_size_of(frames[0])
            if (log_pages, log_page_size) != (page_count, page_size):
                log.warning(
                    "tablet file %s: its log ends at %d pages of %d bytes, a reader sees %d of %d; "
                    "copied instead",
                    path,
                    log_pages,
                    log_page_size,
                    page_count,
                    page_size,
                )
                frames = None
        if frames is None:
            reader.close()
            file.close()
            return None
        wanted = int(page_size) * int(page_count)
        on_disk = os.fstat(file.fileno()).st_size
        if not frames[0] and on_disk < wanted:
            raise StorageError(f"tablet file {path} holds {on_disk} bytes, its pages need {wanted}")
    except (OSError, sqlite3.Error, StorageError) as exc:
        if reader is not None:
            reader.close()
        file.close()
        if isinstance(exc, StorageError):
            raise
        raise StorageError(f"cannot pin tablet file {path} for streaming: {exc}") from exc
    return PinnedImage(path, min(on_disk, wanted), file, reader, frames[0])


def _committed_log(wal: Path) -> tuple[bytes, int] | None:
    """The log's header and frames up to its last commit, and the pages after that commit;
    (b"", 0) without any; None when the log file is longer than ``LOG_LIMIT``."""
    try:
        fd = os.open(wal, os.O_RDONLY)  # no lock of SQLite's lives on the log file itself
    except FileNotFoundError:
        return b"", 0
    try:
        size = os.fstat(fd).st_size
        if size > LOG_LIMIT:
            return None
        data = os.pread(fd, size, 0)
    finally:
        os.close(fd)
    end, pages = committed_prefix(data)
    return data[:end], pages


def pin_file(path: Path, writer: sqlite3.Connection) -> PinnedImage | None:
    """Pin the live file at ``path`` (module docstring). The caller holds the lock every write
    to the file takes, and ``writer`` is the connection those writes use. None when the
    checkpoint could not fold the whole log in (copy the file instead)."""
    file = open(path, "rb")  # noqa: SIM115 - handed to the PinnedImage, closed by it
    try:
        busy, log_frames, folded = writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if busy or log_frames != folded or log_frames < 0:
            file.close()
            return None
        reader = sqlite3.connect(  # pinned on a worker thread, released on the event loop's
            f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
    except (OSError, sqlite3.Error) as exc:
        file.close()
        raise StorageError(f"cannot pin tablet file {path} for streaming: {exc}") from exc
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the read lock is taken here
        (page_size,) = reader.execute("PRAGMA page_size").fetchone()
        (page_count,) = reader.execute("PRAGMA page_count").fetchone()
        size = int(page_size) * int(page_count)
        on_disk = os.fstat(file.fileno()).st_size
        if on_disk < size:
            raise StorageError(f"tablet file {path} holds {on_disk} bytes, its pages need {size}")
    except (OSError, sqlite3.Error, StorageError) as exc:
        reader.close()
        file.close()
        if isinstance(exc, StorageError):
            raise
        raise StorageError(f"cannot pin tablet file {path} for streaming: {exc}") from exc
    return PinnedImage(path, size, file, reader)


HEADER = 100
"""Bytes of a SQLite database file's header."""
MAGIC = b"SQLite format 3\x00"
WAL_VERSIONS = b"\x02\x02"
ROLLBACK_VERSIONS = b"\x01\x01"
VERSIONS_AT = 18
"""The file format's write and read versions (SQLite's file format, "The Database Header"):
1 for a rollback-journal database, 2 for WAL."""


def as_rollback_file(path: Path) -> None:
    """Make a received image a self-contained rollback-journal file (a pinned image arrives in
    WAL mode; an online-backup copy is one already, and is left as it is). Anything that is not
    a WAL-mode database is left as it is too: the integrity check refuses it."""
    fd = os.open(path, os.O_RDWR)
    try:
        header = os.pread(fd, HEADER, 0)
        if header.startswith(MAGIC) and header[VERSIONS_AT : VERSIONS_AT + 2] == WAL_VERSIONS:
            os.pwrite(fd, ROLLBACK_VERSIONS, VERSIONS_AT)
    except OSError as exc:
        raise StorageError(f"tablet image {path}: cannot set its journal mode: {exc}") from exc
    finally:
        os.close(fd)
