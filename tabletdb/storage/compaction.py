"""Compaction of a tablet file: drop versions no read can ever see again.

Last-write-wins keeps one version per cell, but data covered by a partition, row, range or
collection tombstone stays on disk until something removes it. Removing it is always safe: a
future write older than the tombstone is shadowed by the tombstone anyway, and a newer one would
have won against the removed version too. Tombstones themselves (and expired cells, which act
like them) may only be dropped once every replica has seen them — the gc-grace contract — so the
caller passes that horizon explicitly as a write timestamp.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass

# A range tombstone ``rt`` covers the row of table ``{t}`` (bound kinds: 0 open, 1 incl, 2 excl).
_COVERS = """rt.pk = {t}.pk AND {t}.kind = 1
    AND (rt.start_kind = 0 OR (rt.start_kind = 1 AND {t}.ck >= rt.start)
         OR (rt.start_kind = 2 AND {t}.ck > rt.start))
    AND (rt.end_kind = 0 OR (rt.end_kind = 1 AND {t}.ck <= rt.end)
         OR (rt.end_kind = 2 AND {t}.ck < rt.end))"""

_SAME_ROW = "r.pk = {t}.pk AND r.kind = {t}.kind AND r.ck = {t}.ck"


def _shadowing_ts(table: str, ts_column: str) -> str:
    """SQL condition: a partition, row or range tombstone at or after ``ts_column`` covers the row."""
    return f"""(
        {ts_column} <= (SELECT p.tombstone FROM partitions p WHERE p.pk = {table}.pk)
        OR {ts_column} <= (SELECT r.tombstone FROM rows r WHERE {_SAME_ROW.format(t=table)})
        OR EXISTS (SELECT 1 FROM range_tombstones rt WHERE {_COVERS.format(t=table)} AND rt.ts >= {ts_column})
    )"""


PURGE_SHADOWED = (
    ("cells", f"DELETE FROM cells WHERE {_shadowing_ts('cells', 'cells.ts')}"),
    (
        "cells",
        """DELETE FROM cells WHERE cells.ts <= (SELECT t.ts FROM collection_tombstones t
        WHERE t.pk = cells.pk AND t.kind = cells.kind AND t.ck = cells.ck AND t.col = cells.col)""",
    ),
    (
        "rows",
        f"""UPDATE rows SET marker_ts = NULL, marker_ttl = 0, marker_expiry = 0
        WHERE marker_ts IS NOT NULL AND (
            marker_ts <= (SELECT p.tombstone FROM partitions p WHERE p.pk = rows.pk)
            OR marker_ts <= tombstone
            OR EXISTS (SELECT 1 FROM range_tombstones rt
                       WHERE {_COVERS.format(t="rows")} AND rt.ts >= marker_ts))""",
    ),
    (
        "collection_tombstones",
        "DELETE FROM collection_tombstones WHERE "
        + _shadowing_ts("collection_tombstones", "collection_tombstones.ts"),
    ),
    (
        "rows",
        """UPDATE rows SET tombstone = NULL
        WHERE tombstone <= (SELECT p.tombstone FROM partitions p WHERE p.pk = rows.pk)""",
    ),
)
"""(table, statement): each statement's WHERE clause comes last, so a chunk's key range can be
appended to it (``compact``'s ``keys``)."""

DROP_EMPTY = (
    (
        "rows",
        """DELETE FROM rows WHERE marker_ts IS NULL AND tombstone IS NULL
        AND NOT EXISTS (SELECT 1 FROM cells c WHERE c.pk = rows.pk AND c.kind = rows.kind AND c.ck = rows.ck)
        AND NOT EXISTS (SELECT 1 FROM collection_tombstones t
                        WHERE t.pk = rows.pk AND t.kind = rows.kind AND t.ck = rows.ck)""",
    ),
    (
        "partitions",
        """DELETE FROM partitions WHERE tombstone IS NULL
        AND NOT EXISTS (SELECT 1 FROM rows r WHERE r.pk = partitions.pk)
        AND NOT EXISTS (SELECT 1 FROM range_tombstones rt WHERE rt.pk = partitions.pk)""",
    ),
)


def _gc_statements(now: int, gc_before_ts: int) -> list[tuple[str, str, tuple[int, ...]]]:
    return [
        ("cells", "DELETE FROM cells WHERE dead = 1 AND ts < ?", (gc_before_ts,)),
        (
            "cells",
            "DELETE FROM cells WHERE dead = 0 AND expiry > 0 AND expiry <= ? AND ts < ?",
            (now, gc_before_ts),
        ),
        (
            "rows",
            "UPDATE rows SET marker_ts = NULL, marker_ttl = 0, marker_expiry = 0 "
            "WHERE marker_expiry > 0 AND marker_expiry <= ? AND marker_ts < ?",
            (now, gc_before_ts),
        ),
        ("rows", "UPDATE rows SET tombstone = NULL WHERE tombstone < ?", (gc_before_ts,)),
        ("partitions", "UPDATE partitions SET tombstone = NULL WHERE tombstone < ?", (gc_before_ts,)),
        ("collection_tombstones", "DELETE FROM collection_tombstones WHERE ts < ?", (gc_before_ts,)),
        ("range_tombstones", "DELETE FROM range_tombstones WHERE ts < ?", (gc_before_ts,)),
    ]


KeyRange = tuple[bytes, bytes | None]
"""Partition keys ``first <= pk <= last`` (``last`` None: no upper end), in the files' key order."""


def compact(
    conn: sqlite3.Connection, now: int, gc_before_ts: int | None, keys: KeyRange | None = None
) -> None:
    """Purge shadowed data; with ``gc_before_ts``, also tombstones and expired data written before it.

    Runs inside the caller's transaction, over every partition or those with keys in ``keys``
    (everything about a partition is decided by its own rows, so partitions may be compacted a
    chunk at a time). Shadowed data goes first so that dropping a tombstone can never bring back
    what it covered.
    """
    where, bounds = _key_filter(keys)

    def run(table: str, statement: str, params: tuple[object, ...] = ()) -> None:
        conn.execute(statement + where.format(t=table), params + bounds)

    for table, statement in PURGE_SHADOWED:
        run(table, statement)
    if gc_before_ts is not None:
        for table, statement, params in _gc_statements(now, gc_before_ts):
            run(table, statement, params)
    for table, statement in DROP_EMPTY:
        run(table, statement)


def _key_filter(keys: KeyRange | None) -> tuple[str, tuple[bytes, ...]]:
    if keys is None:
        return "", ()
    first, last = keys
    if last is None:
        return " AND {t}.pk >= ?", (first,)
    return " AND {t}.pk >= ? AND {t}.pk <= ?", (first, last)


def key_chunks(conn: sqlite3.Connection, partitions: int) -> Iterator[KeyRange]:
    """Key ranges of about ``partitions`` partitions each covering every key, in key order, read
    lazily: a chunk's end is found when it is reached, so the ranges follow what the file holds
    then. The last range is open-ended (so is the first's start: the empty key sorts first)."""
    first = b""
    while True:
        row = conn.execute(
            "SELECT pk FROM partitions WHERE pk >= ? ORDER BY pk LIMIT 1 OFFSET ?", (first, partitions - 1)
        ).fetchone()
        if row is None:
            yield first, None
            return
        last: bytes = row[0]
        yield first, last
        first = last + b"\x00"  # the smallest key after ``last``


@dataclass(frozen=True, slots=True)
class Garbage:
    """What a tablet file holds that compaction could drop, counted in stored entries."""

    entries: int
    """Partitions, rows, cells and tombstones stored."""
    tombstones: int
    """Tombstones of every kind, dead cells and expired cells and row markers (each shadows
    data, or is itself droppable once old enough)."""
    purgeable: int
    """Those of ``tombstones`` written before the GC horizon (0 without one): what a compaction
    with garbage collection drops whatever else the file holds."""


_TOMBSTONE_TABLES = (
    ("partitions", "tombstone"),
    ("rows", "tombstone"),
    ("range_tombstones", "ts"),
    ("collection_tombstones", "ts"),
)
"""Tables holding tombstones, with the column that holds one's timestamp (NULL: no tombstone)."""


def measure(conn: sqlite3.Connection, now: int, gc_before_ts: int | None) -> Garbage:
    """Count ``Garbage`` in one read transaction (full scans: a worker thread's job)."""
    horizon = -(1 << 63) if gc_before_ts is None else gc_before_ts
    entries = tombstones = purgeable = 0
    conn.execute("BEGIN")
    try:
        for table, column in _TOMBSTONE_TABLES:
            total, dead, old = conn.execute(
                f"SELECT count(*), count({column}), coalesce(sum({column} < ?), 0) FROM {table}",
                (horizon,),
            ).fetchone()
            entries, tombstones, purgeable = entries + total, tombstones + dead, purgeable + old
        total, dead, old = conn.execute(
            """SELECT count(*),
                 coalesce(sum(dead = 1 OR (expiry > 0 AND expiry <= :now)), 0),
                 coalesce(sum((dead = 1 OR (expiry > 0 AND expiry <= :now)) AND ts < :horizon), 0)
               FROM cells""",
            {"now": now, "horizon": horizon},
        ).fetchone()
        expired, expired_old = conn.execute(
            """SELECT count(*), coalesce(sum(marker_ts < ?), 0) FROM rows
               WHERE marker_expiry > 0 AND marker_expiry <= ?""",
            (horizon, now),
        ).fetchone()
    finally:
        conn.execute("COMMIT")
    return Garbage(entries + total, tombstones + dead + expired, purgeable + old + expired_old)
