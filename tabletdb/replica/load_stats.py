"""This node's tablet replica sizes, read from the files' sizes (the I/O half of
``tablets.load_stats``).

A replica's bytes are the pages of its database as SQLite sees it (``page_count`` times
``page_size`` through a read-only connection): pages still in the write-ahead log count, and the
WAL file's own size does not. That file keeps its largest size after a checkpoint and holds old
versions of pages, so file sizes would weigh a replica that took writes well above its copy on a
node it was just streamed to (a consistent copy has no WAL), and the balancer would chase that
difference. What it weighs is what a move copies. A file never written weighs nothing; one that
cannot be opened weighs its file sizes. Only tablet files count; vnode shards are not the
balancer's business.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterable
from pathlib import Path

from tabletdb.replica.storage_service import LocalFile
from tabletdb.tablets.load_stats import TabletSizes


def file_bytes(path: Path) -> int:
    """Bytes of the tablet file's database pages (WAL included); 0 for a file that does not exist
    (yet, or any more)."""
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)) as conn:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            return int(pages) * int(conn.execute("PRAGMA page_size").fetchone()[0])
    except sqlite3.Error:
        return _on_disk(path)


def _on_disk(path: Path) -> int:
    total = 0
    for name in (path, path.with_name(path.name + "-wal")):
        try:
            total += os.stat(name).st_size
        except FileNotFoundError:
            continue
    return total


def tablet_sizes(files: Iterable[tuple[uuid.UUID, LocalFile]]) -> TabletSizes:
    """(table id, tablet id) -> bytes for every tablet file in ``files`` (vnode shards skipped)."""
    return {(table_id, f.tablet_id): file_bytes(f.path) for table_id, f in files if f.tablet_id is not None}
