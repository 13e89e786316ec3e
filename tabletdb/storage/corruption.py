"""Telling a damaged SQLite file from other failures, and refusing to start on damaged state.

SQLite reports damage it trips over as ``SQLITE_CORRUPT`` ("database disk image is malformed")
or ``SQLITE_NOTADB`` ("file is not a database"); every other error (a full disk, a lock, a bad
statement) says nothing about the file's bytes. ``PRAGMA quick_check`` walks every b-tree page
(structure, not values: SQLite keeps no page checksums, so a flipped bit inside a stored value
is invisible to it and to us); bench/bench_quick_check measures its cost (about 11 ms per MB of
tablet file on a loaded box).

``CorruptFile`` is what a node refuses to start on: the runner prints its message as one line
(the file, what was found, what to do) and exits non-zero, as for a damaged commit log.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


class CorruptFile(Exception):
    """A file the node needs at start is damaged; the message names it, the damage and the remedy."""

    def __init__(self, path: Path | str, found: str, remedy: str) -> None:
        super().__init__(f"{path} is corrupt: {found}; {remedy}")
        self.path = Path(path)
        self.found = found


def is_corruption(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite reporting damage to the file itself."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _CORRUPT_CODES
    text = str(exc)
    return "malformed" in text or "not a database" in text


def quick_check(conn: sqlite3.Connection) -> str | None:
    """None if ``PRAGMA quick_check`` finds the file sound, else what it found (first lines)."""
    try:
        rows = conn.execute("PRAGMA quick_check(5)").fetchall()
    except sqlite3.DatabaseError as exc:
        if is_corruption(exc):
            return str(exc)
        raise
    found = [str(row[0]) for row in rows]
    return None if found == ["ok"] else "; ".join(found)
