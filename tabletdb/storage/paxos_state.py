"""The durable state of this node's Paxos acceptors: one SQLite table, one row per partition.

An acceptor's promise or acceptance is announced to a proposer only after it is on disk here
(``synchronous = FULL``: every commit is fsynced), so a replica killed and restarted can never
promise or accept against what it said before the crash. `PaxosStateCommitter` shares one
transaction (one fsync) among the saves of one event-loop tick, as the data stores' group
commit does: an fsync per Paxos step would cap a node at a few hundred steps per second.

The storage layer does not interpret the values: ballots are fixed-width byte strings whose
byte order is ballot order, and values are the proposer's opaque bytes (see
``query.paxos_messages``).

Cassandra keeps this in ``system.paxos`` with a TTL; rows here are kept until their table is
dropped (`forget_prefix`), one small row per partition ever written conditionally.

The file is checked (``PRAGMA quick_check``; ``storage.corruption``) when the node opens it at start:
a damaged one refuses the start with ``CorruptFile`` (one line: the file, the damage, what to do)
rather than letting an acceptor answer from state it cannot read.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tabletdb.storage.corruption import CorruptFile, is_corruption, quick_check
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


PAXOS_REMEDY = (
    "it holds this replica's Paxos promises and accepted proposals (LWT); restore it from a backup "
    "of this node, or move it (with any -wal and -shm beside it) out of the directory and start "
    "again with empty Paxos state, which is safe only once no conditional write is in flight: "
    "stop LWT traffic first"
)


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
            found = quick_check(self._conn)
        except (OSError, sqlite3.Error) as exc:
            if is_corruption(exc):
                self._conn.close()
                raise CorruptFile(self.path, f"SQLite reports {exc}", PAXOS_REMEDY) from exc
            raise StorageError(f"cannot open Paxos state {self.path}: {exc}") from exc
        if found is not None:
            self._conn.close()
            raise CorruptFile(self.path, f"PRAGMA quick_check found {found}", PAXOS_REMEDY)

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
        self.save_many([(key, record)])

    def save_many(self, items: Sequence[tuple[bytes, PaxosRecord]]) -> None:
        """All of ``items`` in one transaction, durable when this returns; later items win."""
        rows = []
        for key, record in items:
            accepted = record.accepted or (None, None)
            committed = record.committed or (None, None)
            rows.append((key, record.promised, *accepted, *committed, record.history))
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("INSERT OR REPLACE INTO paxos VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
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


class PaxosStateCommitter:
    """Batches `PaxosStateStore.save` calls made within one event-loop tick into one transaction."""

    def __init__(self, store: PaxosStateStore) -> None:
        self.store = store
        self._pending: list[tuple[bytes, PaxosRecord, asyncio.Future[None]]] = []
        self._scheduled = False
        self.flushes = 0

    async def save(self, key: bytes, record: PaxosRecord) -> None:
        """Return once ``record`` is durable; raises what saving it raised."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.append((key, record, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        self._scheduled = False
        error: BaseException | None = None
        try:
            self.store.save_many([(key, record) for key, record, _ in batch])
            self.flushes += 1
        except Exception as exc:
            error = exc
        for _, _, future in batch:
            if future.done():
                continue
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


def _prefix_end(prefix: bytes) -> bytes | None:
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])
