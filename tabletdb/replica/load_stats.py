"""This node's tablet replica sizes, read from the files' sizes (the I/O half of
``tablets.load_stats``).

A replica's bytes are its SQLite file plus its write-ahead log (``-wal``): data not yet
checkpointed is still data the replica holds and a move would copy. A file never written
weighs nothing. Only tablet files count; vnode shards are not the balancer's business.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from pathlib import Path

from tabletdb.replica.storage_service import LocalFile
from tabletdb.tablets.load_stats import TabletSizes


def file_bytes(path: Path) -> int:
    """Bytes of a tablet file and its WAL; 0 for a file that does not exist (yet, or any more)."""
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
