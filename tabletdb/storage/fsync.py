"""fsync of a path, file or directory: one place for the open / fsync / close dance.

A file's data is durable once the file is synced; its directory entry (a new or renamed file)
only once its directory is synced too.
"""

from __future__ import annotations

import os
from pathlib import Path


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (a directory's entries must survive power loss too)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
