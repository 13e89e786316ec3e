"""A task's rows of one tablet, kept columnwise, and the sorted tablet file they become.

Rows are sorted by (partition key, clustering key) with one Arrow sort, and each SQL table is
filled in that order, so SQLite appends to its B-trees instead of splitting pages all over
them; each native column's cells are one `executemany` whose statement carries the column's
name, kind and path as constants (what varies per cell is all that is bound). The statements
keep the store's own last-write-wins conflict clauses (`sqlite_schema.DATA_TABLES`), so rows
repeated in the input reconcile as the store reconciles writes. The file is a transfer copy:
not synced (the node syncs what it merges).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tabletdb.schema.model import ColumnDef, ColumnKind
from tabletdb.spark.bulk.cells import RowCells
from tabletdb.spark.bulk.plan import Layout
from tabletdb.spark.bulk.rows import Chunk
from tabletdb.spark.bulk.staging import DATA_TABLE_COLUMNS, MAX_ELEMENTS, Stage, sql_literal, widths
from tabletdb.spark.tablet_rows import new_image
from tabletdb.statements.cells import is_multi_cell
from tabletdb.storage.sqlite_schema import (
    HAS_COLLECTION_TOMBSTONES,
    HAS_STATIC,
    REGULAR_KIND,
    STATIC_KIND,
)


def upsert(table: str, constants: dict[str, object]) -> str:
    """The store's upsert into `table`, with `constants` written into the statement."""
    columns, conflict = DATA_TABLE_COLUMNS[table]
    values = ", ".join(sql_literal(constants[c]) if c in constants else "?" for c in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({values}){conflict}"


class TabletRows:
    """Rows of one tablet, appended batch by batch."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.rows = Chunk(
            native=[[] for _ in layout.native],
            other=[[] for _ in layout.other],
        )

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, chunk: Chunk) -> None:
        rows = self.rows
        pairs: list[tuple[list[Any], list[Any]]] = [
            (rows.pk, chunk.pk),
            (rows.token, chunk.token),
            (rows.ck, chunk.ck),
            (rows.ts, chunk.ts),
            (rows.ttl, chunk.ttl),
            (rows.now, chunk.now),
            *zip(rows.native, chunk.native),
            *zip(rows.other, chunk.other),
        ]
        for mine, theirs in pairs:
            mine.extend(theirs)

    def sorted(self) -> Chunk:
        """The rows in (partition key, clustering key) order."""
        rows = self.rows
        if len(rows) < 2:
            return rows
        keys = pa.table({"pk": pa.array(rows.pk, pa.binary()), "ck": pa.array(rows.ck, pa.binary())})
        order = pc.sort_indices(keys, sort_keys=[("pk", "ascending"), ("ck", "ascending")]).to_pylist()
        if order == list(range(len(order))):  # came in key order (an export, a sorted file)
            return rows
        pick = itemgetter(*order)

        def reorder(values: list[Any]) -> list[Any]:
            return list(pick(values))

        return Chunk(
            reorder(rows.pk),
            reorder(rows.token),
            reorder(rows.ck),
            reorder(rows.ts),
            reorder(rows.ttl),
            reorder(rows.now),
            [reorder(v) for v in rows.native],
            [reorder(v) for v in rows.other],
        )


def _native_cells(rows: Chunk, values: list[bytes | None], static: bool) -> Iterator[tuple[Any, ...]]:
    """(pk[, ck], ts, dead, value, expiry, ttl) per row: a dead cell for a null."""
    for pk, ck, value, ts, ttl, now in zip(rows.pk, rows.ck, values, rows.ts, rows.ttl, rows.now):
        if value is None:
            fields: tuple[Any, ...] = (ts, 1, b"", now, 0)
        else:
            fields = (ts, 0, value, now + ttl if ttl else 0, ttl)
        yield ((pk, *fields) if static else (pk, ck, *fields))


def _other_cells(rows: Chunk, cells: list[RowCells], kind: int) -> Iterator[tuple[Any, ...]]:
    for pk, ck, (fragments, _) in zip(rows.pk, rows.ck, cells):
        for fragment in fragments:
            yield (pk, kind, ck, *fragment)


def _tombstones(rows: Chunk, cells: list[RowCells], kind: int) -> Iterator[tuple[Any, ...]]:
    for pk, ck, (_, tombstones) in zip(rows.pk, rows.ck, cells):
        for column, ts in tombstones:
            yield (pk, kind, ck, column, ts)


def _flags(layout: Layout, rows: Chunk) -> dict[bytes, int]:
    base = HAS_STATIC if layout.has_static else 0
    flags = dict.fromkeys(rows.pk, base | (HAS_COLLECTION_TOMBSTONES if layout.has_collections else 0))
    if not layout.has_collections:
        for cells in rows.other:
            for pk, (_, tombstones) in zip(rows.pk, cells):
                if tombstones:
                    flags[pk] |= HAS_COLLECTION_TOMBSTONES
    return flags


def _same(values: list[int]) -> int | None:
    """The one value all of `values` share, if they do."""
    return values[0] if values and values.count(values[0]) == len(values) else None


class _Writer:
    """The statements filling one file. A file whose rows share one write timestamp and have no
    TTL (a load without writetime/TTL fields) binds only what varies per row (keys and values)
    and writes the rest into the statements: most of SQLite's cost per row is binding."""

    def __init__(self, conn: sqlite3.Connection, rows: Chunk) -> None:
        self.conn = conn
        self.rows = rows
        ts = _same(rows.ts)
        self.ts = ts if ts is not None and _same(rows.ttl) == 0 else None

    def rows_table(self, static: bool) -> None:
        rows, conn = self.rows, self.conn
        if static:
            constants = {"kind": STATIC_KIND, "ck": b"", "marker_ts": None, "marker_ttl": 0}
            constants.update(marker_expiry=0, tombstone=None)
            conn.executemany(upsert("rows", constants), ((pk,) for pk in dict.fromkeys(rows.pk)))
        elif self.ts is not None:
            constants = {"kind": REGULAR_KIND, "marker_ts": self.ts, "marker_ttl": 0, "marker_expiry": 0}
            conn.executemany(upsert("rows", {**constants, "tombstone": None}), zip(rows.pk, rows.ck))
        else:
            expiry = (now + ttl if ttl else 0 for ttl, now in zip(rows.ttl, rows.now))
            conn.executemany(
                upsert("rows", {"kind": REGULAR_KIND, "tombstone": None}),
                zip(rows.pk, rows.ck, rows.ts, rows.ttl, expiry),
            )

    def native(self, column: ColumnDef, values: list[bytes | None]) -> None:
        rows, conn = self.rows, self.conn
        static = column.kind is ColumnKind.STATIC
        constants: dict[str, object] = {"kind": STATIC_KIND if static else REGULAR_KIND, "col": column.name}
        constants["path"] = b""
        if static:
            constants["ck"] = b""
        if self.ts is None:
            conn.executemany(upsert("cells", constants), _native_cells(rows, values, static))
            return
        constants.update(ts=self.ts, ttl=0)
        keys: Iterable[tuple[bytes, ...]] = zip(rows.pk) if static else zip(rows.pk, rows.ck)
        live = upsert("cells", {**constants, "dead": 0, "expiry": 0})
        if None not in values:
            conn.executemany(live, ((*k, v) for k, v in zip(keys, values)))
            return
        pairs = list(zip(keys, values, rows.now))
        conn.executemany(live, ((*k, v) for k, v, _ in pairs if v is not None))
        dead = upsert("cells", {**constants, "dead": 1, "value": b""})
        conn.executemany(dead, ((*k, now) for k, v, now in pairs if v is None))

    def other(self, column: ColumnDef, cells: list[RowCells]) -> None:
        rows, conn = self.rows, self.conn
        kind = STATIC_KIND if column.kind is ColumnKind.STATIC else REGULAR_KIND
        conn.executemany(upsert("cells", {}), _other_cells(rows, cells, kind))
        if self.ts is not None and is_multi_cell(column.type):  # one tombstone per row, at ts - 1
            constants = {"kind": kind, "col": column.name, "ts": self.ts - 1}
            conn.executemany(upsert("collection_tombstones", constants), zip(rows.pk, rows.ck))
        else:
            conn.executemany(upsert("collection_tombstones", {}), _tombstones(rows, cells, kind))


def write_rows(path: Path, layout: Layout, defs: Sequence[ColumnDef], rows: Chunk) -> int:
    """A new tablet file at `path` holding the (sorted) `rows`; returns its partitions.

    `defs` are the plan's mapped column definitions (`FilePlan.columns()`)."""
    flags = _flags(layout, rows)
    tokens = dict(zip(rows.pk, rows.token))
    conn = new_image(path)
    try:
        conn.executemany(
            upsert("partitions", {"tombstone": None}),
            ((pk, token, flags[pk]) for pk, token in tokens.items()),
        )
        writer = _Writer(conn, rows)
        if layout.has_static:
            writer.rows_table(static=True)
        natives = [(defs[i], values) for i, values in zip(layout.native, rows.native)]
        others = [(defs[i], cells) for i, cells in zip(layout.other, rows.other)]
        if writer.ts is not None:
            staged = [(c, v, widths(v)) for c, v in others if is_multi_cell(c.type)]
            staged = [s for s in staged if s[2] <= MAX_ELEMENTS]
            stage = Stage(writer.ts, [c for c, _ in natives], [(c, w) for c, _, w in staged], _same(rows.now))
            stage.create(conn)
            stage.load(conn, rows.pk, rows.ck, rows.now, [v for _, v in natives], [v for _, v, _ in staged])
            stage.fill(conn)
            done = {id(v) for _, v, _ in staged}
            others = [(c, v) for c, v in others if id(v) not in done]
            natives = []
        else:
            writer.rows_table(static=False)
        for column, values in natives:
            writer.native(column, values)
        for column, cells in others:
            writer.other(column, cells)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return len(tokens)
