"""One SQLite file holding one tablet replica (or one shard of a vnode table): DESIGN.md decision 5.

``apply`` writes a batch of mutations in one transaction in WAL mode with ``synchronous=FULL``:
the commit fsyncs the write-ahead log, so a batch is durable (power loss included) once ``apply``
returns and costs one fsync however many writes it holds (``group_commit`` feeds it batches).
Reads return only live data, with write timestamps and remaining TTLs. Files are self-contained,
so migration streams them whole (``snapshot_bytes`` / ``install``) and split/merge copy mutations
by token range.

A file store has two connections: writes go through one, on whichever thread holds the write
lock (the group commit runs them on worker threads), and reads use the other on the caller's
thread. WAL lets a reader work beside a commit in progress and shows it only committed (hence
durable) data, so a read never waits for an fsync and never sees a write that was not acked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tabletdb.dht.token import TokenRange
from tabletdb.storage.batch_rows import UPSERTS, BatchRows, batch_rows
from tabletdb.storage.column_reads import ColumnRead
from tabletdb.storage.compaction import Garbage, KeyRange, compact, key_chunks, measure
from tabletdb.storage.corruption import is_corruption, quick_check
from tabletdb.storage.deferred_rows import DeferredRows
from tabletdb.storage.fsync import fsync_path
from tabletdb.storage.images.image_merge import SOURCE, merge_attached
from tabletdb.storage.mutation import FULL_SLICE, Bound, ClusteringSlice, Mutation
from tabletdb.storage.range_reads import ValuesRow, count_live_rows, live_rows
from tabletdb.storage.read_path import PartitionReader, read_row_cells, read_simple_partition
from tabletdb.storage.reconcile import PartitionData
from tabletdb.storage.sqlite_schema import DDL, SCHEMA_VERSION
from tabletdb.storage.stored_mutations import mutations_for_partition

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ScanPosition:
    """Where a scan page stopped: after row ``clustering`` of partition (token, pk), or after
    the whole partition when ``clustering`` is None. ``rows_in_partition`` counts the rows
    already returned from a partition the page stopped inside (for per-partition limits)."""

    token: int
    partition_key: bytes
    clustering: bytes | None = None
    rows_in_partition: int = 0


@dataclass(frozen=True, slots=True)
class ScanPage:
    partitions: tuple[PartitionData, ...]
    next_position: ScanPosition | None
    """None when the range is exhausted; otherwise pass it back as ``after`` for the next page."""


def _resume_point(after: ScanPosition | None, token: int, pk: bytes) -> tuple[Bound, int] | None:
    """Where to continue inside partition (token, pk) if the previous page stopped inside it,
    and how many of its rows were already returned."""
    if after is None or after.clustering is None or (token, pk) != (after.token, after.partition_key):
        return None
    return Bound(after.clustering, inclusive=False), after.rows_in_partition


def _later_start(a: Bound | None, b: Bound) -> Bound:
    """The more restrictive of two slice starts."""
    if a is None or a.key < b.key or (a.key == b.key and not b.inclusive):
        return b
    return a


QUICK_CHECK_MAX_BYTES = 8 << 20
"""Files up to this size get ``PRAGMA quick_check`` when opened. A file is opened on the event
loop, at its first use, and the check reads all of it: bench/bench_quick_check measured about
11 ms per MB on this schema on a loaded box (7x a full read of the cells), so about 0.1 s here
at most, against a second per 100 MB. Larger files are checked by use only: every read or write
that trips over damage reports it (``TabletCorrupt``), and the node sets the file aside then."""


COMPACTION_CHUNK = 512
"""Partitions a compaction transaction covers (``compact_written``): a few milliseconds of
holding the write lock for small partitions."""


class StorageError(Exception):
    """A tablet file could not be opened or written; the message names the file."""


class TabletCorrupt(StorageError):
    """SQLite found the tablet file damaged (on open, or during a read or write)."""

    def __init__(self, path: Path, found: str) -> None:
        super().__init__(f"tablet file {path} is corrupt: {found}")
        self.path = path
        self.found = found


class TabletUnavailable(StorageError):
    """This replica of the data does not serve reads: its file was damaged and is being repaired."""


class TabletStore:
    """The data of one tablet replica in one SQLite file.

    Writes (``apply``, ``delete_token_range``, ``compact``) may come from any thread; they are
    serialized by a lock. Reads use the reading connection from one thread at a time (the
    node's event loop). Deferred rows (``defer_rows``, ``storage.deferred_rows``) belong to that
    thread too: reads write them first when they could see them.
    """

    def __init__(self, path: str | Path) -> None:
        """Open (creating if needed) the file at ``path``; ``":memory:"`` gives a private in-memory store."""
        self.path = Path(path)
        self.in_memory = str(path) == ":memory:"
        """An in-memory store has one connection (a second would open another database)."""
        self._write_lock = threading.Lock()
        self._synced = True
        """The writing connection's mode: ``synchronous=FULL`` (True) or NORMAL (``apply_rows``)."""
        self._deferred = DeferredRows()
        self._closed = False
        self.corrupt: str | None = None
        """What SQLite reported when it found this file damaged; set once, from any thread."""
        self.withheld: str | None = None
        """Why reads are refused although the file is sound (its replica awaits repair), or None."""
        self._writer = self._connect()
        try:
            self._prepare()
            self._conn = self._writer if self.in_memory else self._connect()
        except BaseException:
            self._writer.close()
            raise

    @property
    def serving(self) -> bool:
        """Whether reads may be answered from this file (sound, and not awaiting repair)."""
        return self.corrupt is None and self.withheld is None

    def _refuse_unserved(self) -> None:
        if self.corrupt is not None:
            raise TabletCorrupt(self.path, self.corrupt)
        if self.withheld is not None:
            raise TabletUnavailable(f"tablet file {self.path} does not serve reads: {self.withheld}")

    @contextlib.contextmanager
    def _damage_reported(self) -> Iterator[None]:
        """Turn SQLite's report of a damaged file into ``TabletCorrupt`` and remember it."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            if self.corrupt is None:
                self.corrupt = str(exc)
            raise TabletCorrupt(self.path, str(exc)) from exc

    def _connect(self) -> sqlite3.Connection:
        try:
            return sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open tablet store {self.path}: {exc}") from exc

    def _read_only(self) -> sqlite3.Connection:
        """A connection of its own that reads the file and never creates it: one opened after the
        file was removed (its tablet moved away meanwhile) fails rather than leave an empty file."""
        try:
            return sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open tablet store {self.path}: {exc}") from exc

    def _prepare(self) -> None:
        conn = self._writer
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            self._transaction(lambda: [conn.execute(stmt) for stmt in DDL])
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if version is None:
                conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
            elif not self.in_memory and self.path.stat().st_size <= QUICK_CHECK_MAX_BYTES:
                found = quick_check(conn)
                if found is not None:
                    raise TabletCorrupt(self.path, f"quick_check: {found}")
        except TabletCorrupt:
            raise
        except sqlite3.Error as exc:
            if is_corruption(exc):
                raise TabletCorrupt(self.path, str(exc)) from exc
            raise StorageError(f"cannot open tablet store {self.path}: {exc}") from exc
        if version is not None and version[0] != SCHEMA_VERSION:
            raise StorageError(f"{self.path}: storage schema version {version[0]}, expected {SCHEMA_VERSION}")

    def close(self) -> None:
        """Write the deferred rows and close the file; waits for a write in progress on another
        thread to finish."""
        self.write_deferred()
        self._closed = True
        with self._write_lock:
            if self._conn is not self._writer:
                self._conn.close()
            self._writer.close()

    def __enter__(self) -> TabletStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writes -----------------------------------------------------------------------------

    def apply(self, mutations: Iterable[Mutation]) -> None:
        """Apply a batch atomically and durably (one transaction, one sync).

        Parameters are gathered per statement and sent with ``executemany``; the order of
        upserts does not matter because last-write-wins is commutative. Statements with no
        parameters are skipped (a plain INSERT touches only partitions, rows and cells).
        """
        self.apply_rows(batch_rows(mutations))

    def apply_rows(self, rows: BatchRows, *, synced: bool = True) -> None:
        """Apply ``batch_rows`` output in one transaction. ``synced=False`` commits without the
        fsync (``synchronous=NORMAL`` for this one transaction: WAL-safe against corruption, but
        the commit may be lost on power loss): only for a caller that has made the rows durable
        elsewhere first and replays them after a crash (``node_commit``). Re-applying rows is
        harmless: every upsert is last-write-wins."""
        if not rows[0]:
            return

        def write_all() -> None:
            executemany = self._writer.executemany
            for sql, params in zip(UPSERTS, rows):
                if params:
                    executemany(sql, params)

        self._transaction(write_all, synced=synced)

    def defer_rows(self, rows: BatchRows, size: int = 0) -> None:
        """Keep ``rows`` (estimated at ``size`` bytes of memory) to write later with others in one
        unsynced transaction (``deferred_rows``): only for a caller that has made them durable
        elsewhere and replays them after a crash (``node_commit``). Reads see them at once.
        Owner thread only."""
        if self._closed:
            raise StorageError(f"tablet store {self.path} is closed (table dropped, truncated or stopping)")
        if rows[0]:
            self._deferred.add(rows, size)

    @property
    def deferred_count(self) -> int:
        """Writes (partition entries) kept by ``defer_rows`` and not written yet."""
        return self._deferred.count

    @property
    def deferred_size(self) -> int:
        """Estimated bytes those hold."""
        return self._deferred.size

    def write_deferred(self) -> None:
        """Write the deferred rows in one unsynced transaction.

        If that fails, each writer's rows are tried alone: a writer whose rows fail while others
        succeed is dropped and logged (it is in the commit log and fails there too, as a replay
        would find); when none succeeds the fault is the file's, so everything stays deferred
        and ``StorageError`` says why (the commit log keeps them durable meanwhile).
        """
        if not self._deferred:
            return
        try:
            self.apply_rows(self._deferred.merged, synced=False)
        except Exception:
            self._write_each(self._deferred.writers())  # raises, keeping them all, if none can be
        self._deferred.clear()

    def _write_each(self, writers: list[BatchRows]) -> None:
        errors: list[Exception] = []
        for rows in writers:
            try:
                self.apply_rows(rows, synced=False)
            except Exception as exc:
                errors.append(exc)
        if len(errors) == len(writers):
            if isinstance(errors[0], TabletCorrupt):
                raise errors[0]
            raise StorageError(f"cannot write to tablet store {self.path}: {errors[0]}") from errors[0]
        for error in errors:
            log.error("tablet store %s: dropped a deferred write that fails alone: %s", self.path, error)

    def take_deferred(self) -> list[BatchRows]:
        """Hand over the deferred rows, one batch per writer, and forget them here: a damaged
        file's acknowledged writes go on to the fresh file that replaces it."""
        taken = self._deferred.writers() if self._deferred else []
        self._deferred.clear()
        return taken

    def discard_deferred(self) -> None:
        """Forget the deferred rows: the data of this file is being removed (TRUNCATE, DROP)."""
        self._deferred.clear()

    def sync_to_disk(self) -> None:
        """fsync the file and its write-ahead log: commits made with ``synced=False`` before this
        call are durable once it returns (power loss included). Takes no lock: it may run on
        another thread beside later commits, which it does not promise to cover."""
        for path in (self.path, self.path.with_name(self.path.name + "-wal")):
            with contextlib.suppress(FileNotFoundError):  # removed since (a dropped or truncated table)
                fsync_path(path)

    def delete_token_range(self, token_range: TokenRange) -> int:
        """Remove every partition in the range (cleanup after a range leaves this replica)."""
        return self.delete_token_ranges([token_range])

    def delete_token_ranges(self, token_ranges: Iterable[TokenRange]) -> int:
        """Remove every partition in the ranges in one transaction; how many partitions went.
        Writes the deferred rows first, so on the owner thread only."""
        self.write_deferred()
        return self.delete_written(token_ranges)

    def delete_written(self, token_ranges: Iterable[TokenRange]) -> int:
        """``delete_token_ranges`` of what is written: rows still deferred are left alone (the
        caller wrote them first). Any thread."""
        pieces = [p for r in token_ranges for p in r.unwrap()]

        def delete() -> int:
            removed = 0
            for piece in pieces:
                selector = "SELECT pk FROM partitions WHERE token > ? AND token <= ?"
                bounds = (piece.start, piece.end)
                for table in ("cells", "rows", "collection_tombstones", "range_tombstones"):
                    self._writer.execute(f"DELETE FROM {table} WHERE pk IN ({selector})", bounds)
                removed += self._writer.execute(
                    "DELETE FROM partitions WHERE token > ? AND token <= ?", bounds
                ).rowcount
            return removed

        return self._transaction(delete)

    def compact(self, now: int, gc_before_ts: int | None = None) -> None:
        """Drop shadowed versions; with ``gc_before_ts`` also older tombstones and expired data."""
        self.write_deferred()
        self._transaction(lambda: compact(self._writer, now, gc_before_ts))

    def compact_written(
        self, now: int, gc_before_ts: int | None, chunk_partitions: int = COMPACTION_CHUNK
    ) -> None:
        """``compact`` of what is written (the caller wrote the deferred rows first), a chunk of
        partitions per transaction: the write lock is held for one chunk at a time, so writes
        and reads that must write deferred rows wait for a chunk, never for the whole file. The
        chunks commit unsynced and the file is synced at the end: a crash may bring back some
        of what was dropped, never half a partition's (a chunk's transaction is atomic). Any
        thread."""
        reader = self._conn if self.in_memory else self._read_only()
        try:
            for keys in key_chunks(reader, chunk_partitions):

                def chunk(keys: KeyRange = keys) -> None:
                    compact(self._writer, now, gc_before_ts, keys)

                self._transaction(chunk, synced=False)
        finally:
            if reader is not self._conn:
                reader.close()
        if not self.in_memory:
            self.sync_to_disk()

    def measure_garbage(self, now: int, gc_before_ts: int | None) -> Garbage:
        """What a compaction would find to drop (``compaction.measure``), on a connection of its
        own: full scans, for a worker thread. Rows still deferred are not counted."""
        with self._damage_reported():
            if self.in_memory:
                return measure(self._conn, now, gc_before_ts)
            with contextlib.closing(self._read_only()) as conn:
                return measure(conn, now, gc_before_ts)

    def checkpoint(self) -> tuple[int, int]:
        """Fold the write-ahead log into the database file (``wal_checkpoint(TRUNCATE)``, under the
        write lock): (frames in the log, frames folded); fewer folded means a reader still held
        an older snapshot and the rest stays in the log until the next checkpoint. Any thread."""
        with self._write_lock, self._damage_reported():
            _busy, frames, done = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return max(int(frames), 0), max(int(done), 0)

    # --- reads ------------------------------------------------------------------------------

    def read_row_cells(self, partition_key: bytes, now: int) -> dict[str, bytes] | object | None:
        """``read_path.read_row_cells`` on this store (tables without clustering columns)."""
        self._refuse_unserved()
        if partition_key in self._deferred.keys:
            self.write_deferred()
        with self._damage_reported():
            return read_row_cells(self._conn, partition_key, now)

    def read_partition(
        self,
        partition_key: bytes,
        now: int,
        clustering: ClusteringSlice = FULL_SLICE,
        *,
        reverse: bool = False,
        limit: int | None = None,
        include_static: bool = True,
    ) -> PartitionData | None:
        """The live rows of a partition within ``clustering`` (None if nothing is live)."""
        self._refuse_unserved()
        if partition_key in self._deferred.keys:
            self.write_deferred()
        with self._damage_reported():
            return read_simple_partition(
                self._conn,
                partition_key,
                now,
                clustering,
                reverse=reverse,
                limit=limit,
                include_static=include_static,
            )

    def scan(
        self,
        token_range: TokenRange,
        now: int,
        *,
        limit: int,
        after: ScanPosition | None = None,
        clustering: ClusteringSlice = FULL_SLICE,
        per_partition_limit: int | None = None,
    ) -> ScanPage:
        """Up to ``limit`` live rows of the range, partitions in (token, key) order, resumable.

        ``clustering`` restricts the rows of every partition; ``per_partition_limit`` caps the rows
        taken from each (a partition with only static data counts as one row).
        """
        if limit < 1 or (per_partition_limit is not None and per_partition_limit < 1):
            raise ValueError(f"scan limits must be at least 1, got {limit} and {per_partition_limit}")
        self._refuse_unserved()
        self.write_deferred()
        with self._damage_reported():
            return self._scan(token_range, now, limit, after, clustering, per_partition_limit)

    def _scan(
        self,
        token_range: TokenRange,
        now: int,
        limit: int,
        after: ScanPosition | None,
        clustering: ClusteringSlice,
        per_partition_limit: int | None,
    ) -> ScanPage:
        out: list[PartitionData] = []
        remaining = limit
        for token, pk, tombstone, flags in self._partitions_in(token_range, after):
            slice_, already = clustering, 0
            resume = _resume_point(after, token, pk)
            if resume is not None:
                slice_ = ClusteringSlice(_later_start(clustering.start, resume[0]), clustering.end)
                already = resume[1]
            wanted = (
                remaining if per_partition_limit is None else min(remaining, per_partition_limit - already)
            )
            if wanted <= 0:
                continue
            reader = PartitionReader(self._conn, pk, token, tombstone, flags, now)
            data = reader.read(slice_, reverse=False, limit=wanted, include_static=resume is None)
            if data is None:
                continue
            out.append(data)
            remaining -= data.row_count
            if remaining <= 0:
                taken = already + data.row_count
                finished = not data.rows or (per_partition_limit is not None and taken >= per_partition_limit)
                if finished:
                    return ScanPage(tuple(out), ScanPosition(token, pk))
                return ScanPage(tuple(out), ScanPosition(token, pk, data.rows[-1].clustering, taken))
        return ScanPage(tuple(out), None)

    def _partitions_in(
        self, token_range: TokenRange, after: ScanPosition | None
    ) -> Iterator[tuple[int, bytes, int | None, int]]:
        for piece in token_range.unwrap():
            sql = "SELECT token, pk, tombstone, flags FROM partitions WHERE token > ? AND token <= ?"
            params: list[object] = [piece.start, piece.end]
            if after is not None:
                op = ">=" if after.clustering is not None else ">"
                sql += f" AND (token, pk) {op} (?, ?)"
                params += [after.token, after.partition_key]
            yield from self._conn.execute(sql + " ORDER BY token, pk", params)

    def count_live(self, token_range: TokenRange, now: int) -> int:
        """CQL rows of the range as a full scan would return them, counted inside SQLite
        (``range_reads.count_live_rows``), on the reading connection (owner thread)."""
        return self.counter()(token_range, now)

    def counter(self) -> Callable[[TokenRange, int], int]:
        """``count_live`` in two halves: this call (owner thread) refuses an unserved file and
        writes the deferred rows; the function it returns counts on a connection of its own and
        may run on any thread, so a count of millions of rows need not hold the event loop."""
        self._refuse_unserved()
        self.write_deferred()

        def count(token_range: TokenRange, now: int) -> int:
            with self._damage_reported():
                conn = self._conn if self.in_memory else self._connect()
                try:
                    return sum(count_live_rows(conn, p.start, p.end, now) for p in token_range.unwrap())
                finally:
                    if conn is not self._conn:
                        conn.close()

        return count

    def live_values(
        self,
        token_range: TokenRange,
        now: int,
        columns: Sequence[ColumnRead],
        *,
        limit: int,
        after: ScanPosition | None = None,
    ) -> tuple[list[ValuesRow], ScanPosition | None]:
        """Up to ``limit`` live regular rows of the range after ``after`` with the live values of
        ``columns`` as their shapes ask (``range_reads.live_rows``), and where to resume (None: the
        range is exhausted). For tables without static columns: static rows are not returned."""
        if limit < 1:
            raise ValueError(f"scan limit must be at least 1, got {limit}")
        self._refuse_unserved()
        self.write_deferred()
        resume = None if after is None else (after.token, after.partition_key, after.clustering)
        out: list[ValuesRow] = []
        with self._damage_reported():
            for piece in token_range.unwrap():
                if resume is not None and piece.end < resume[0]:
                    continue
                rows = live_rows(self._conn, piece.start, piece.end, now, columns, resume)
                try:
                    for row in rows:
                        out.append(row)
                        if len(out) >= limit:
                            return out, ScanPosition(row[0], row[1], row[2])
                finally:
                    rows.close()
        return out, None

    def partition_mutations(self, partition_key: bytes) -> list[Mutation]:
        """Everything stored for one partition, tombstones included (read repair, Paxos)."""
        self._refuse_unserved()
        if partition_key in self._deferred.keys:
            self.write_deferred()
        with self._damage_reported():
            found = self._conn.execute(
                "SELECT token, tombstone FROM partitions WHERE pk = ?", (partition_key,)
            ).fetchone()
            return [] if found is None else [mutations_for_partition(self._conn, partition_key, *found)]

    def mutations_in_range(self, token_range: TokenRange) -> Iterator[Mutation]:
        """Everything stored for the range, tombstones included, as mutations to re-apply elsewhere."""
        self._refuse_unserved()
        self.write_deferred()
        for piece in token_range.unwrap():
            with self._damage_reported():
                partitions = self._conn.execute(
                    "SELECT pk, token, tombstone FROM partitions "
                    "WHERE token > ? AND token <= ? ORDER BY token, pk",
                    (piece.start, piece.end),
                ).fetchall()
            for pk, token, tombstone in partitions:
                with self._damage_reported():
                    mutation = mutations_for_partition(self._conn, pk, token, tombstone)
                yield mutation

    # --- whole-file operations --------------------------------------------------------------

    def snapshot_bytes(self) -> bytes:
        """A consistent image of the file (SQLite online backup), for streaming or backup."""
        self._refuse_unserved()
        self.write_deferred()
        image = sqlite3.connect(":memory:")
        try:
            with self._damage_reported():
                self._conn.backup(image)
            return image.serialize()
        finally:
            image.close()

    @classmethod
    def install(cls, path: str | Path, image: bytes) -> TabletStore:
        """Create the file at ``path`` from a ``snapshot_bytes`` image and open it.

        The image is written to a temporary name, synced and integrity-checked, then renamed into
        place, so a crash never leaves a half-written tablet file under the real name.
        """
        target = Path(path)
        if target.exists():
            raise StorageError(f"refusing to install a tablet image over existing file {target}")
        staging = target.with_name(target.name + ".installing")
        try:
            with open(staging, "wb") as out:
                out.write(image)
                out.flush()
                os.fsync(out.fileno())
            check = sqlite3.connect(staging)
            try:
                verdict = check.execute("PRAGMA quick_check").fetchone()
            finally:
                check.close()
            if verdict is None or verdict[0] != "ok":
                raise StorageError(f"tablet image for {target} failed its integrity check: {verdict}")
            os.replace(staging, target)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot install tablet image into {target}: {exc}") from exc
        finally:
            staging.unlink(missing_ok=True)
        return cls(target)

    def merge_image(self, image: Path, pieces: Sequence[TokenRange] | None = None) -> int:
        """Merge the tablet file at ``image`` into this one (``storage.image_merge``: inside
        SQLite, last write wins), all of it or the partitions with tokens in ``pieces``; returns
        how many partitions it contributed. One synced transaction: after a crash the file holds
        the whole image or none of it, and nothing needs the commit log. Any thread; holds the
        write lock throughout (writes to this store wait, and so does a read that must first
        write deferred rows). The caller has checked the image (``image_validation``)."""
        if self.in_memory:
            raise StorageError("an in-memory store cannot attach an image file")
        conn = self._writer
        with self._write_lock, self._damage_reported():
            if not self._synced:
                conn.execute("PRAGMA synchronous = FULL")
                self._synced = True
            conn.execute(f"ATTACH DATABASE ? AS {SOURCE}", (str(image),))
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    merged = merge_attached(conn, pieces)
                except BaseException:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                conn.execute(f"DETACH DATABASE {SOURCE}")
        return merged

    def holding_writes(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` with the writing connection while no write to this file can start or be
        under way (the write lock); any thread. ``storage.pinned_image`` pins the file so."""
        if self.in_memory:
            raise StorageError("an in-memory store has no file to hold")
        with self._write_lock, self._damage_reported():
            return work(self._writer)

    def size_bytes(self) -> int:
        """Bytes used by the database pages (the balancer's load measure)."""
        self.write_deferred()
        with self._damage_reported():
            page_count = self._conn.execute("PRAGMA page_count").fetchone()[0]
            page_size = self._conn.execute("PRAGMA page_size").fetchone()[0]
        return int(page_count) * int(page_size)

    def _transaction(self, work: Callable[[], T], *, synced: bool = True) -> T:
        """Run ``work`` in one write transaction on the writing connection, under the write lock
        (``synced=False``: see ``apply_rows``)."""
        conn = self._writer
        with self._write_lock, self._damage_reported():
            if synced is not self._synced:  # a store written one way keeps its mode: no pragma per commit
                conn.execute("PRAGMA synchronous = FULL" if synced else "PRAGMA synchronous = NORMAL")
                self._synced = synced
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = work()
            except BaseException:
                with contextlib.suppress(sqlite3.Error):  # a damaged file may refuse even this
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result
