"""The durable state of this node's Paxos acceptors: one SQLite table, one row per partition.

An acceptor's promise or acceptance is announced to a proposer only after it is on disk here
(``synchronous = FULL``: every commit is fsynced), so a replica killed and restarted can never
promise or accept against what it said before the crash. The storage layer does not interpret
the values: ballots are fixed-width byte strings whose byte order is ballot order, and values
are the proposer's opaque bytes (see ``query.paxos_messages``).

Cassandra keeps this in ``system.paxos`` with a TTL; rows here are kept until the table is
dropped (`forget_prefix`), which costs one small row per partition ever written conditionally.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tabletdb.storage.tablet_store import StorageError

_DDL = """
CREATE TABLE IF NOT EXISTS paxos (
    key BLOB PRIMARY KEY,
    promised BLOB,
    accepted_ballot BLOB,
    accepted_value BLOB,
    committed_ballot BLOB,
    committed_value BLOB,
    history BLOB NOT NULL DEFAULT x''
) WITHOUT ROWID
"""


@dataclass(frozen=True)
class PaxosRecord:
    """Ballots as bytes; ``accepted``/``committed`` are (ballot, value) pairs; ``history`` is opaque."""

    promised: bytes | None = None
    accepted: tuple[bytes, bytes] | None = None
    committed: tuple[bytes, bytes] | None = None
    history: bytes = b""


def _pair(ballot: bytes | None, value: bytes | None) -> tuple[bytes, bytes] | None:
    if ballot is None:
        return None
    return bytes(ballot), bytes(value or b"")


class PaxosStateStore:
    """Not thread-safe: used from the node's event loop (each call is one short transaction)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute(_DDL)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open Paxos state {self.path}: {exc}") from exc

    def load(self, key: bytes) -> PaxosRecord | None:
        row = self._conn.execute(
            "SELECT promised, accepted_ballot, accepted_value, committed_ballot, committed_value, history "
            "FROM paxos WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        promised = None if row[0] is None else bytes(row[0])
        return PaxosRecord(promised, _pair(row[1], row[2]), _pair(row[3], row[4]), bytes(row[5]))

    def save(self, key: bytes, record: PaxosRecord) -> None:
        """Durable when this returns (one fsynced transaction)."""
        accepted = record.accepted or (None, None)
        committed = record.committed or (None, None)
        try:
            self._conn.execute(
                "INSERT OR REPLACE INTO paxos VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, record.promised, accepted[0], accepted[1], committed[0], committed[1], record.history),
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot save Paxos state in {self.path}: {exc}") from exc

    def forget_prefix(self, prefix: bytes) -> int:
        """Remove the state of every key starting with ``prefix`` (a dropped table's partitions)."""
        end = _prefix_end(prefix)
        if end is None:
            cur = self._conn.execute("DELETE FROM paxos WHERE key >= ?", (prefix,))
        else:
            cur = self._conn.execute("DELETE FROM paxos WHERE key >= ? AND key < ?", (prefix, end))
        return cur.rowcount

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM paxos").fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def _prefix_end(prefix: bytes) -> bytes | None:
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])
