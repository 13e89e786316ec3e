"""Whole tablet files for backup and restore: consistent copies, checksums, staged installs.

A snapshot is taken through SQLite's online-backup API from a *separate* read-only connection:
in WAL mode that connection reads one committed state of the file while the node keeps
writing through its own connection, so a copy is consistent per file without pausing writes and
without ever seeing the half of a transaction. Copies are switched to rollback-journal mode so
each is one self-contained file whose checksum means something.

A backup's snapshot need not go through SQLite page by page: with the store's writes held off for
one checkpoint, the live file is pinned (``storage.pinned_image``: its first bytes stay one
committed state while writes go on into the log), and ``snapshot_pinned`` copies those bytes
straight into the snapshot, hashing them on the way (one read, one write, no second pass for the
checksum) and marking the copy a rollback-journal file in its header as it passes (bytes 18-19:
the two bytes SQLite itself rewrites when a file leaves WAL mode).

Installing goes the other way: the image is staged under a temporary name next to the target,
synced and integrity-checked off the event loop, then renamed into place by the caller at a
moment when no store has the target open.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from tabletdb.dht.token import FULL_RING, TokenRange
from tabletdb.storage.fsync import fsync_path
from tabletdb.storage.images.pinned_image import PinnedImage, pin_store
from tabletdb.storage.mutation import Mutation
from tabletdb.storage.range_reads import count_live_rows
from tabletdb.storage.stored_mutations import mutations_for_partition
from tabletdb.storage.tablet_store import StorageError, TabletStore

_CHUNK = 1 << 20
SIDE_FILES = ("-wal", "-shm", "-journal")


def _read_only_uri(path: Path) -> str:
    """A file URI needs an absolute path; callers may hold one relative to the working dir."""
    return f"{path.resolve().as_uri()}?mode=ro"


def _read_only(path: Path) -> sqlite3.Connection:
    if not path.exists():
        raise StorageError(f"tablet file {path} does not exist")
    try:
        return sqlite3.connect(_read_only_uri(path), uri=True)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot open tablet file {path} read-only: {exc}") from exc


def snapshot_to(source: Path, target: Path, *, sync: bool = True) -> None:
    """Write a consistent copy of the tablet file ``source`` to ``target`` (which must not exist).

    ``sync`` False leaves the copy unsynced: a backup's snapshot is read once, soon, and checked
    against the sha256 taken here, so a copy torn by a crash can never pass for a good one."""
    if target.exists():
        raise StorageError(f"snapshot target {target} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(target.name + ".partial")
    src = _read_only(source)
    try:
        dst = sqlite3.connect(staging)
        try:
            src.backup(dst)  # all pages in one step: one read transaction, one committed state
            dst.execute("PRAGMA journal_mode = DELETE")
        finally:
            dst.close()
        if sync:
            fsync_path(staging)
        os.replace(staging, target)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot snapshot {source} into {target}: {exc}") from exc
    finally:
        src.close()
        staging.unlink(missing_ok=True)


_FORMAT_VERSIONS = slice(18, 20)
"""Header bytes: the file format write and read versions, 1 for rollback journal, 2 for WAL."""
_ROLLBACK_JOURNAL = b"\x01\x01"


def snapshot_pinned(store: TabletStore, target: Path) -> str | None:
    """Copy the pinned live file of ``store`` to ``target`` (which must not exist) as a
    rollback-journal file and return its sha256; None, with nothing written, when the file
    cannot be pinned right now (a reader holds part of its log: copy with ``snapshot_to``).
    The store's deferred rows must have been written first (``StorageService.write_deferred``).
    Not synced, as ``snapshot_to(sync=False)``: read once, soon, and checked against the sha256."""
    if target.exists():
        raise StorageError(f"snapshot target {target} already exists")
    pinned = pin_store(store)
    if pinned is None:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(target.name + ".partial")
    try:
        digest = _copy_pinned(pinned, staging)
        os.replace(staging, target)
    except OSError as exc:
        raise StorageError(f"cannot snapshot {store.path} into {target}: {exc}") from exc
    finally:
        pinned.close()
        staging.unlink(missing_ok=True)
    return digest


def _copy_pinned(pinned: PinnedImage, staging: Path) -> str:
    digest = hashlib.sha256()
    with open(staging, "wb") as out:
        offset = 0
        while offset < pinned.size:
            chunk = pinned.read_at(offset, _CHUNK)
            if not chunk:
                raise StorageError(f"tablet file {pinned.path} ended at {offset} of {pinned.size} bytes")
            if offset == 0 and len(chunk) >= _FORMAT_VERSIONS.stop:
                chunk = chunk[: _FORMAT_VERSIONS.start] + _ROLLBACK_JOURNAL + chunk[_FORMAT_VERSIONS.stop :]
            digest.update(chunk)
            out.write(chunk)
            offset += len(chunk)
    return digest.hexdigest()


def live_row_count(path: Path, now: int) -> int:
    """CQL rows live at ``now`` (seconds) in a tablet file, as SELECT COUNT(*) counts them (a
    partition with only static data is one row). Decided inside SQLite (``range_reads``), in one
    pass over the file in key order: Python sees only the rare partitions with static rows or
    range or collection tombstones."""
    conn = _read_only(path)
    try:
        return sum(count_live_rows(conn, p.start, p.end, now) for p in FULL_RING.unwrap())
    except sqlite3.Error as exc:
        raise StorageError(f"cannot count the rows of tablet file {path}: {exc}") from exc
    finally:
        conn.close()


def has_partitions(path: Path) -> bool:
    """Whether the file holds anything at all (tombstones included); False if it does not exist."""
    if not path.exists():
        return False
    conn = _read_only(path)
    try:
        return conn.execute("SELECT 1 FROM partitions LIMIT 1").fetchone() is not None
    except sqlite3.Error:  # a store opened but never written has no tables yet
        return False
    finally:
        conn.close()


def image_mutations(path: Path, token_range: TokenRange = FULL_RING) -> Iterator[Mutation]:
    """Every partition of a tablet file within ``token_range``, tombstones and write times
    included, as mutations to re-apply in other stores (restore when boundaries differ)."""
    conn = _read_only(path)
    try:
        for piece in token_range.unwrap():
            rows = conn.execute(
                "SELECT pk, token, tombstone FROM partitions "
                "WHERE token > ? AND token <= ? ORDER BY token, pk",
                (piece.start, piece.end),
            ).fetchall()
            for pk, token, tombstone in rows:
                yield mutations_for_partition(conn, pk, token, tombstone)
    finally:
        conn.close()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_image(path: Path, *, deep: bool = True) -> None:
    """Sync a staged image and make sure SQLite reads it as an intact tablet file.

    ``deep`` runs SQLite's ``quick_check`` over every page (about 1 ms per MB). An image whose
    bytes were checksummed end to end against the ones its source sent (``net.dedicated``) skips
    it: the checksum already refuses any byte that changed on the way, and the source's own file
    is checked by its use there. What is always checked: the header (a rollback-journal SQLite
    file, whole pages, as many as the header says) and that its schema reads as a tablet file's."""
    fsync_path(path)
    check_header(path)
    try:
        conn = sqlite3.connect(_read_only_uri(path), uri=True)
        try:
            verdict = conn.execute("PRAGMA quick_check").fetchone() if deep else ("ok",)
            conn.execute("SELECT 1 FROM partitions LIMIT 1")
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"tablet image {path} is not a readable tablet file: {exc}") from exc
    if verdict is None or verdict[0] != "ok":
        raise StorageError(f"tablet image {path} failed its integrity check: {verdict}")


def check_header(path: Path) -> None:
    """The header of a whole rollback-journal SQLite file (SQLite's file format, "The Database
    Header"): the magic string, a page size SQLite allows, the format bytes of rollback mode,
    a file of whole pages, and, where the header's page count is valid, exactly that many."""
    with open(path, "rb") as f:
        header = f.read(100)
        size = os.fstat(f.fileno()).st_size
    problem = _header_problem(header, size)
    if problem is not None:
        raise StorageError(f"tablet image {path} is not a whole tablet file: {problem}")


def _header_problem(header: bytes, size: int) -> str | None:
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return "no SQLite header"
    raw_page = int.from_bytes(header[16:18], "big")
    page = 65536 if raw_page == 1 else raw_page
    if page < 512 or page & (page - 1):
        return f"page size {raw_page}"
    if header[18:20] != b"\x01\x01":
        return f"file format bytes {header[18:20].hex()}, not a rollback-journal file's"
    if size % page:
        return f"{size} bytes, not whole pages of {page}"
    pages = int.from_bytes(header[28:32], "big")
    if pages and header[24:28] == header[92:96] and pages * page != size:
        return f"{size} bytes, the header says {pages} pages of {page}"
    return None


def place_image(staging: Path, target: Path) -> None:
    """Replace ``target`` (and its WAL side files) by the checked image at ``staging``.

    The caller guarantees no store has ``target`` open; the rename is atomic, so a crash leaves
    either the old file or the complete new one.
    """
    for suffix in SIDE_FILES:
        target.with_name(target.name + suffix).unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staging, target)
    fsync_path(target.parent)
