"""This node's tablet replica sizes, read from the files' sizes (the I/O half of
``tablets.load_stats``).

A replica's bytes are the pages its data uses, as SQLite sees the database (write-ahead log
included: data not yet checkpointed is still data the replica holds and a move would copy), less
free pages and the pages every empty tablet file has (one root page per table and index, and the
schema page). The file sizes would not do: a write-ahead log keeps its largest size after a
checkpoint, and deleted rows leave free pages, so a tablet whose data was deleted and compacted
away would never look small enough to merge, and a few megabytes of log would split a tablet
again and again under a small ``target_tablet_size_in_bytes``. A file SQLite cannot open read-only
weighs its file sizes. A file never written weighs nothing. Only tablet files count; vnode shards
are not the balancer's business.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterable
from pathlib import Path

from tabletdb.replica.storage_service import LocalFile
from tabletdb.tablets.load_stats import TabletSizes


def file_bytes(path: Path) -> int:
    """Bytes of data in a tablet file (see above); 0 for a file that does not exist (yet, or any more)."""
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            pages, free, page_size = (conn.execute(f"PRAGMA {p}").fetchone()[0] for p in _PRAGMAS)
            (roots,) = conn.execute("SELECT count(*) FROM sqlite_master WHERE rootpage > 0").fetchone()
        finally:
            conn.close()
        return max(0, int(pages) - int(free) - 1 - int(roots)) * int(page_size)
    except sqlite3.Error:
        return stat_bytes(path)


_PRAGMAS = ("page_count", "freelist_count", "page_size")


def stat_bytes(path: Path) -> int:
    """Bytes of a tablet file and its WAL as the file system has them."""
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
