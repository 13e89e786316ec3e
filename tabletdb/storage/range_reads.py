"""Range reads decided inside SQLite: live-row counts and row pages of a token range.

``read_path`` decides liveness in Python, cell by cell, which a full scan or a ``COUNT(*)`` pays
for every row (issue 19: 158 s for a 1M-row count). Here the same rules run as SQL over a token
range, so SQLite walks the partitions, rows and cells in C and Python sees one result row per
CQL row (a page) or one number (a count).

The common partition is decided in SQL: ``partitions.flags`` 0 (no static row, range or
collection tombstone ever written to it) or only ``HAS_COLLECTION_TOMBSTONES`` — every row an
INSERT writes into a table with a non-frozen collection has one, so those are common too. A
regular row is deleted at ``D`` = the later of the partition's and the row's tombstones (NULL:
never), and

* the row marker is live if ``marker_ts > D`` and it has not expired (``marker_expiry`` 0 or
  after ``now``), a cell if it is not a tombstone (``dead`` 0), ``ts > D`` and not expired —
  ``reconcile.is_live`` exactly — and no collection tombstone of its (row, column) has
  ``ts >= c.ts`` (``read_path._live_cells``);
* the row is live if its marker or any of its cells is (``read_path.PartitionReader._live_row``).
  A row with a live marker is live whatever its collections hold, so an INSERT-written row
  never reaches the tombstone look-up.

A collection tombstone only ever names a multi-cell column (``statements.cells.whole_value``; a
dropped column comes back only with its old type), so a single-cell value skips that look-up,
and a page joins each asked multi-cell column's tombstone once per row. A page returns each
asked column as its ``column_reads.Shape`` says: a single cell's value, or a multi-cell column's
live cells packed in path order by ``group_concat`` (``column_reads``).

A partition with any other flag set comes back as one result row without a clustering key and the
caller reads it with ``PartitionReader`` (the same code the general read uses), so the answers
equal the general path's by construction there and by the rules above elsewhere
(``tests/unit/storage/test_storage_range_reads.py`` compares both on random data).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from tabletdb.storage.column_reads import ColumnRead, Shape, from_sql, sql_literal, value_sql, values_of_row
from tabletdb.storage.mutation import FULL_SLICE, Bound, ClusteringSlice
from tabletdb.storage.read_path import PartitionReader
from tabletdb.storage.sqlite_schema import HAS_COLLECTION_TOMBSTONES, REGULAR_KIND

_DELETED_AT = "coalesce(max(p.tombstone, r.tombstone), p.tombstone, r.tombstone)"
"""``D``: SQLite's two-argument max is NULL when either is, so the coalesce keeps the other."""

_CELL_LIVE = (
    f"c.dead = 0 AND ({_DELETED_AT} IS NULL OR c.ts > {_DELETED_AT}) AND (c.expiry = 0 OR c.expiry > :now)"
)


def _row_live(cell_live: str) -> str:
    """A row is live if its marker is, or any cell satisfying ``cell_live``."""
    return (
        f"((r.marker_ts IS NOT NULL AND ({_DELETED_AT} IS NULL OR r.marker_ts > {_DELETED_AT})"
        " AND (r.marker_expiry = 0 OR r.marker_expiry > :now))"
        " OR EXISTS (SELECT 1 FROM cells c WHERE c.pk = r.pk AND c.kind = r.kind AND c.ck = r.ck"
        f" AND {cell_live}))"
    )


_DECIDED_FLAGS = (0, HAS_COLLECTION_TOMBSTONES)
_COUNTED_FLAGS = f"(0, {HAS_COLLECTION_TOMBSTONES})"
"""Partitions counts and value pages decide in SQL (module docstring)."""
_CELL_COUNTED = (
    f"{_CELL_LIVE} AND NOT EXISTS (SELECT 1 FROM collection_tombstones t WHERE t.pk = c.pk"
    " AND t.kind = c.kind AND t.ck = c.ck AND t.col = c.col AND t.ts >= c.ts)"
)
_ROW_COUNTED = _row_live(_CELL_COUNTED)

_COUNT_SIMPLE = (
    "SELECT count(*) FROM partitions p JOIN rows r ON r.pk = p.pk AND r.kind = :kind"
    f" WHERE p.token > :start AND p.token <= :end AND p.flags IN {_COUNTED_FLAGS} AND {_ROW_COUNTED}"
)
_COUNT_SCAN = (
    "SELECT count(*) FROM rows r CROSS JOIN partitions p ON p.pk = r.pk"
    f" WHERE r.kind = :kind AND +p.token > :start AND +p.token <= :end AND p.flags IN {_COUNTED_FLAGS}"
    f" AND {_ROW_COUNTED}"
)
"""The same count as one pass over the rows in key order (``CROSS JOIN`` keeps ``rows`` outside,
``+p.token`` keeps SQLite off the token index). Walking the token index visits partitions, rows
and cells in hash order, page by page at random: about 5 times slower when the range holds the
whole file, as a tablet's count (restore's verification) or a snapshot's does."""
_FLAGGED_SCAN = (
    "SELECT token, pk, tombstone, flags FROM partitions"
    f" WHERE flags NOT IN {_COUNTED_FLAGS} AND +token > :start AND +token <= :end"
)
_FLAGGED = (
    "SELECT token, pk, tombstone, flags FROM partitions"
    f" WHERE token > :start AND token <= :end AND flags NOT IN {_COUNTED_FLAGS} ORDER BY token, pk"
)

_TOKEN_SPAN = "SELECT min(token), max(token) FROM partitions"

ValuesRow = tuple[int, bytes, bytes, tuple[bytes | None, ...]]
"""(token, partition key, clustering key, values of the asked columns; None: no live value)."""


def count_live_rows(conn: sqlite3.Connection, start: int, end: int, now: int) -> int:
    """CQL rows of the non-wrapping range ``(start, end]`` as a full scan counts them: live regular
    rows, and 1 for a partition whose only live data is its static row. A range holding every
    partition of the file is counted in key order (``_COUNT_SCAN``), a part of it through the
    token index."""
    params = {"kind": REGULAR_KIND, "start": start, "end": end, "now": now}
    low, high = conn.execute(_TOKEN_SPAN).fetchone()  # two index look-ups
    whole = low is not None and start < low and high <= end
    total = int(conn.execute(_COUNT_SCAN if whole else _COUNT_SIMPLE, params).fetchone()[0])
    flagged = conn.execute(_FLAGGED_SCAN if whole else _FLAGGED, params).fetchall()
    for token, pk, tombstone, flags in flagged:
        total += PartitionReader(conn, pk, token, tombstone, flags, now).count()
    return total


_values_sql: dict[tuple[tuple[ColumnRead, ...], int], str] = {}


def _rows_sql(columns: tuple[ColumnRead, ...], resume: int) -> str:
    """Partitions of the range in (token, key) order, each joined to its live rows in clustering
    order (flagged partitions, and partitions with no live row, as one row with NULL ``ck``).
    ``resume``: 0 from the range's start, 1 after a whole partition, 2 after a row. Each
    multi-cell column joins its collection tombstone once per row (only in partitions that have
    any), which its cells' liveness then reads."""
    sql = _values_sql.get((columns, resume))
    if sql is not None:
        return sql
    values = ""
    tombstones = ""
    for i, (name, shape) in enumerate(columns):
        tombstone = "NULL"
        if shape is not Shape.CELL:
            tombstone = f"t{i}.ts"
            tombstones += (
                f" LEFT JOIN collection_tombstones t{i} ON p.flags != 0 AND t{i}.pk = r.pk"
                f" AND t{i}.kind = r.kind AND t{i}.ck = r.ck AND t{i}.col = {sql_literal(name)}"
            )
        values += ", " + value_sql(name, shape, _CELL_LIVE, tombstone)
    after_row = " AND (p.pk != :after_pk OR r.ck > :after_ck)" if resume == 2 else ""
    where = ""
    if resume == 1:
        where = " AND (p.token, p.pk) > (:after_token, :after_pk)"
    elif resume == 2:
        where = " AND (p.token, p.pk) >= (:after_token, :after_pk)"
    sql = _values_sql[columns, resume] = (
        f"SELECT p.token, p.pk, p.flags, p.tombstone, r.ck{values} FROM partitions p"
        f" LEFT JOIN rows r ON p.flags IN {_COUNTED_FLAGS} AND r.pk = p.pk AND r.kind = :kind{after_row}"
        f" AND {_ROW_COUNTED}{tombstones}"
        f" WHERE p.token > :start AND p.token <= :end{where} ORDER BY p.token, p.pk, r.ck"
    )
    return sql


def live_rows(
    conn: sqlite3.Connection,
    start: int,
    end: int,
    now: int,
    columns: Sequence[ColumnRead],
    after: tuple[int, bytes, bytes | None] | None,
) -> Generator[ValuesRow, None, None]:
    """Live regular rows of ``(start, end]`` after ``after`` ((token, key, clustering key or None
    for "after the whole partition")), in (token, key, clustering) order, with the live values of
    ``columns`` as their shapes ask (``column_reads``). Partitions with static data are read as
    the general path reads them, but yield only their regular rows: callers serve tables without
    static columns.

    A generator over an open statement: close it (or exhaust it) so the read snapshot is released.
    """
    cols = tuple((name, Shape(shape)) for name, shape in columns)
    params: dict[str, Any] = {"kind": REGULAR_KIND, "start": start, "end": end, "now": now}
    resume = 0
    if after is not None:
        resume = 1 if after[2] is None else 2
        params.update(after_token=after[0], after_pk=after[1], after_ck=after[2])
    packed = [i for i, (_, shape) in enumerate(cols) if shape is not Shape.CELL]
    cursor = conn.execute(_rows_sql(cols, resume), params)
    try:
        for token, pk, flags, tombstone, ck, *values in cursor:
            if ck is not None:
                for i in packed:
                    values[i] = from_sql(values[i])
                yield token, pk, ck, tuple(values)
            elif flags not in _DECIDED_FLAGS:
                yield from _general_rows(conn, token, pk, tombstone, flags, now, cols, after)
    finally:
        cursor.close()


def _general_rows(
    conn: sqlite3.Connection,
    token: int,
    pk: bytes,
    tombstone: int | None,
    flags: int,
    now: int,
    columns: tuple[ColumnRead, ...],
    after: tuple[int, bytes, bytes | None] | None,
) -> Iterator[ValuesRow]:
    slice_ = FULL_SLICE
    if after is not None and after[2] is not None and (after[0], after[1]) == (token, pk):
        slice_ = ClusteringSlice(Bound(after[2], inclusive=False), None)
    rows = PartitionReader(conn, pk, token, tombstone, flags, now).regular_rows(slice_, False)
    try:
        for row in rows:
            yield token, pk, row.clustering, values_of_row(row, columns)
    finally:
        rows.close()
