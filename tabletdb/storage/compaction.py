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
    f"DELETE FROM cells WHERE {_shadowing_ts('cells', 'cells.ts')}",
    """DELETE FROM cells WHERE cells.ts <= (SELECT t.ts FROM collection_tombstones t
        WHERE t.pk = cells.pk AND t.kind = cells.kind AND t.ck = cells.ck AND t.col = cells.col)""",
    f"""UPDATE rows SET marker_ts = NULL, marker_ttl = 0, marker_expiry = 0
        WHERE marker_ts IS NOT NULL AND (
            marker_ts <= (SELECT p.tombstone FROM partitions p WHERE p.pk = rows.pk)
            OR marker_ts <= tombstone
            OR EXISTS (SELECT 1 FROM range_tombstones rt
                       WHERE {_COVERS.format(t="rows")} AND rt.ts >= marker_ts))""",
    "DELETE FROM collection_tombstones WHERE "
    + _shadowing_ts("collection_tombstones", "collection_tombstones.ts"),
    """UPDATE rows SET tombstone = NULL
        WHERE tombstone <= (SELECT p.tombstone FROM partitions p WHERE p.pk = rows.pk)""",
)

DROP_EMPTY = (
    """DELETE FROM rows WHERE marker_ts IS NULL AND tombstone IS NULL
        AND NOT EXISTS (SELECT 1 FROM cells c WHERE c.pk = rows.pk AND c.kind = rows.kind AND c.ck = rows.ck)
        AND NOT EXISTS (SELECT 1 FROM collection_tombstones t
                        WHERE t.pk = rows.pk AND t.kind = rows.kind AND t.ck = rows.ck)""",
    """DELETE FROM partitions WHERE tombstone IS NULL
        AND NOT EXISTS (SELECT 1 FROM rows r WHERE r.pk = partitions.pk)
        AND NOT EXISTS (SELECT 1 FROM range_tombstones rt WHERE rt.pk = partitions.pk)""",
)


def _gc_statements(now: int, gc_before_ts: int) -> list[tuple[str, tuple[int, ...]]]:
    return [
        ("DELETE FROM cells WHERE dead = 1 AND ts < ?", (gc_before_ts,)),
        ("DELETE FROM cells WHERE dead = 0 AND expiry > 0 AND expiry <= ? AND ts < ?", (now, gc_before_ts)),
        (
            "UPDATE rows SET marker_ts = NULL, marker_ttl = 0, marker_expiry = 0 "
            "WHERE marker_expiry > 0 AND marker_expiry <= ? AND marker_ts < ?",
            (now, gc_before_ts),
        ),
        ("UPDATE rows SET tombstone = NULL WHERE tombstone < ?", (gc_before_ts,)),
        ("UPDATE partitions SET tombstone = NULL WHERE tombstone < ?", (gc_before_ts,)),
        ("DELETE FROM collection_tombstones WHERE ts < ?", (gc_before_ts,)),
        ("DELETE FROM range_tombstones WHERE ts < ?", (gc_before_ts,)),
    ]


def compact(conn: sqlite3.Connection, now: int, gc_before_ts: int | None) -> None:
    """Purge shadowed data; with ``gc_before_ts``, also tombstones and expired data written before it.

    Runs inside the caller's transaction. Shadowed data goes first so that dropping a tombstone
    can never bring back what it covered.
    """
    for statement in PURGE_SHADOWED:
        conn.execute(statement)
    if gc_before_ts is not None:
        for statement, params in _gc_statements(now, gc_before_ts):
            conn.execute(statement, params)
    for statement in DROP_EMPTY:
        conn.execute(statement)
