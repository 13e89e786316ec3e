"""The SQLite layout of one tablet replica file, and the upserts that apply last-write-wins.

Reconciliation happens inside SQLite (``ON CONFLICT ... DO UPDATE ... WHERE new > old`` with row
values), so applying a write is one statement per cell instead of a read-modify-write round trip
through Python. The comparison tuples mirror ``reconcile.cell_order_key`` and
``reconcile.marker_order_key``. BLOBs compare with memcmp, the same order as Python bytes.

Row kinds: 0 = the static row, 1 = regular rows, so a partition's static row sorts first.
Bounds of range tombstones: kind 0 = unbounded, 1 = inclusive, 2 = exclusive.

``partitions.flags`` records which rarer kinds of data a partition has ever received (a static
row, collection tombstones, range tombstones). Bits are only ever set, in the same transaction
as the data, so a clear bit proves the data is absent and a read can skip that query.
"""

from __future__ import annotations

SCHEMA_VERSION = 1

STATIC_KIND = 0
REGULAR_KIND = 1

HAS_STATIC = 1
HAS_COLLECTION_TOMBSTONES = 2
HAS_RANGE_TOMBSTONES = 4

BOUND_OPEN = 0
BOUND_INCLUSIVE = 1
BOUND_EXCLUSIVE = 2

DDL = (
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS partitions (
        pk BLOB PRIMARY KEY,
        token INTEGER NOT NULL,
        tombstone INTEGER,
        flags INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID""",
    """CREATE UNIQUE INDEX IF NOT EXISTS partitions_by_token ON partitions (token, pk)""",
    """CREATE TABLE IF NOT EXISTS rows (
        pk BLOB NOT NULL,
        kind INTEGER NOT NULL,
        ck BLOB NOT NULL,
        marker_ts INTEGER,
        marker_ttl INTEGER NOT NULL DEFAULT 0,
        marker_expiry INTEGER NOT NULL DEFAULT 0,
        tombstone INTEGER,
        PRIMARY KEY (pk, kind, ck)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS cells (
        pk BLOB NOT NULL,
        kind INTEGER NOT NULL,
        ck BLOB NOT NULL,
        col TEXT NOT NULL,
        path BLOB NOT NULL,
        ts INTEGER NOT NULL,
        dead INTEGER NOT NULL,
        value BLOB NOT NULL,
        expiry INTEGER NOT NULL,
        ttl INTEGER NOT NULL,
        PRIMARY KEY (pk, kind, ck, col, path)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS collection_tombstones (
        pk BLOB NOT NULL,
        kind INTEGER NOT NULL,
        ck BLOB NOT NULL,
        col TEXT NOT NULL,
        ts INTEGER NOT NULL,
        PRIMARY KEY (pk, kind, ck, col)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS range_tombstones (
        pk BLOB NOT NULL,
        start_kind INTEGER NOT NULL,
        start BLOB NOT NULL,
        end_kind INTEGER NOT NULL,
        end BLOB NOT NULL,
        ts INTEGER NOT NULL,
        PRIMARY KEY (pk, start_kind, start, end_kind, end)
    ) WITHOUT ROWID""",
)

CONFLICT_PARTITION = """
ON CONFLICT (pk) DO UPDATE SET
    tombstone = max(coalesce(partitions.tombstone, excluded.tombstone),
                    coalesce(excluded.tombstone, partitions.tombstone)),
    flags = partitions.flags | excluded.flags
"""

_NEW_MARKER_WINS = """excluded.marker_ts IS NOT NULL AND (rows.marker_ts IS NULL OR
    (excluded.marker_ts, excluded.marker_expiry, -excluded.marker_ttl)
        > (rows.marker_ts, rows.marker_expiry, -rows.marker_ttl))"""

CONFLICT_ROW = f"""
ON CONFLICT (pk, kind, ck) DO UPDATE SET
    marker_ts = CASE WHEN {_NEW_MARKER_WINS} THEN excluded.marker_ts ELSE rows.marker_ts END,
    marker_ttl = CASE WHEN {_NEW_MARKER_WINS} THEN excluded.marker_ttl ELSE rows.marker_ttl END,
    marker_expiry = CASE WHEN {_NEW_MARKER_WINS} THEN excluded.marker_expiry ELSE rows.marker_expiry END,
    tombstone = max(coalesce(rows.tombstone, excluded.tombstone),
                    coalesce(excluded.tombstone, rows.tombstone))
"""

CONFLICT_CELL = """
ON CONFLICT (pk, kind, ck, col, path) DO UPDATE SET
    ts = excluded.ts, dead = excluded.dead, value = excluded.value,
    expiry = excluded.expiry, ttl = excluded.ttl
WHERE (excluded.ts, excluded.dead, excluded.value, excluded.expiry, -excluded.ttl)
    > (cells.ts, cells.dead, cells.value, cells.expiry, -cells.ttl)
"""

CONFLICT_COLLECTION_TOMBSTONE = """
ON CONFLICT (pk, kind, ck, col) DO UPDATE SET ts = max(collection_tombstones.ts, excluded.ts)
"""

CONFLICT_RANGE_TOMBSTONE = """
ON CONFLICT (pk, start_kind, start, end_kind, end) DO UPDATE SET ts = max(range_tombstones.ts, excluded.ts)
"""

DATA_TABLES = (
    ("partitions", ("pk", "token", "tombstone", "flags"), CONFLICT_PARTITION),
    ("rows", ("pk", "kind", "ck", "marker_ts", "marker_ttl", "marker_expiry", "tombstone"), CONFLICT_ROW),
    (
        "cells",
        ("pk", "kind", "ck", "col", "path", "ts", "dead", "value", "expiry", "ttl"),
        CONFLICT_CELL,
    ),
    ("collection_tombstones", ("pk", "kind", "ck", "col", "ts"), CONFLICT_COLLECTION_TOMBSTONE),
    ("range_tombstones", ("pk", "start_kind", "start", "end_kind", "end", "ts"), CONFLICT_RANGE_TOMBSTONE),
)
"""Each data table with its columns and its last-write-wins conflict clause, partitions first:
the one definition both the per-write upserts below and the set-based merge of a whole file
(``storage.image_merge``) are built from, so the two cannot disagree."""


def _upsert(table: str, columns: tuple[str, ...], conflict: str) -> str:
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}){conflict}"


(
    UPSERT_PARTITION,
    UPSERT_ROW,
    UPSERT_CELL,
    UPSERT_COLLECTION_TOMBSTONE,
    UPSERT_RANGE_TOMBSTONE,
) = (_upsert(*entry) for entry in DATA_TABLES)
