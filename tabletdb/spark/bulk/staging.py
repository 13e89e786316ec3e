"""Filling a tablet file through a staging table: one bound row per input row, cells by SQL.

Binding values costs SQLite's Python module about a microsecond per BLOB, and a cell's
upsert binds its whole key again (partition and clustering key) for every cell of a row. Here
each row is bound once, into a TEMP table (keys, the native columns' values, the elements of
non-frozen lists, sets and maps), and every data table is then filled from it by
`INSERT ... SELECT` inside SQLite — all regular columns' cells by one statement, in key order
(`Stage._regular_cells`), static ones per column: the same rows the per-cell upserts would
write, with the store's own conflict clauses, at a fraction of the cost.

Used for files whose rows share one write timestamp and have no TTL (every load without
writetime/TTL fields): then a row's timestamp, TTL and expiry are constants of the statements.
A collection column whose rows hold more than `MAX_ELEMENTS` elements is left to the caller.
A list's element paths depend only on the write timestamp and the element's index
(`cells._list_paths`), so with one timestamp they are constants of the statements, and only a
set's or map's paths are bound.
"""

from __future__ import annotations

import sqlite3
from itertools import zip_longest
from operator import itemgetter
from typing import Any

from tabletdb.cql.types import ListType
from tabletdb.schema.model import ColumnDef, ColumnKind
from tabletdb.spark.bulk.cells import ListFragments, RowCells
from tabletdb.statements.keys import LIST_MIDDLE
from tabletdb.storage.sqlite_schema import DATA_TABLES, REGULAR_KIND, STATIC_KIND

MAX_ELEMENTS = 16
DATA_TABLE_COLUMNS = {table: (columns, conflict) for table, columns, conflict in DATA_TABLES}


def sql_literal(value: object) -> str:
    """`value` (bytes, text, an integer or None) as an SQL literal, for statements built once per file."""
    if isinstance(value, bytes):
        return f"x'{value.hex()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return "NULL" if value is None else str(int(value))  # type: ignore[call-overload]


def _insert_select(table: str, values: dict[str, str], where: str = "true") -> str:
    """`INSERT INTO table SELECT ... FROM temp.stage` with `values` (SQL expressions over the
    stage's columns) per column of `table`, and the table's last-write-wins conflict clause."""
    columns, conflict = DATA_TABLE_COLUMNS[table]
    selected = ", ".join(values[c] for c in columns)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {selected} FROM temp.stage "
        f"WHERE {where} ORDER BY rowid{conflict}"
    )


class Stage:
    """One file's staging table and the statements filling the data tables from it."""

    def __init__(
        self,
        ts: int,
        native: list[ColumnDef],
        collections: list[tuple[ColumnDef, int]],
        now: int | None = None,
    ) -> None:
        """`native`: columns of one serialized value per row; `collections`: non-frozen
        collection columns with the most elements a row of this file holds; `now`: the rows'
        one deletion time (a dead cell's expiry), when they share it (then it is not bound)."""
        self.ts = ts
        self.now = now
        self.now_sql = "now" if now is None else sql_literal(now)
        self.native = native
        self.collections = collections
        names = ["pk", "ck", *(["now"] if now is None else []), *(f"v{j}" for j in range(len(native)))]
        for c, (column, width) in enumerate(collections):
            if not _is_list(column):
                names += [f"p{c}_{i}" for i in range(width)]
            names += [f"e{c}_{i}" for i in range(width)]
        self.names = names

    def create(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute(f"CREATE TEMP TABLE stage ({', '.join(self.names)})")

    def load(self, conn: sqlite3.Connection, pk: list[bytes], ck: list[bytes], now: list[int],
             values: list[list[bytes | None]], cells: list[list[RowCells]]) -> None:  # fmt: skip
        """Bind every row once: keys, native values, then each collection's paths (not a
        list's) and values, per position (None past a row's last element)."""
        columns: list[Any] = [pk, ck, *([now] if self.now is None else []), *values]
        for (column, width), rows in zip(self.collections, cells):
            fragments = list(map(_FRAGMENTS, rows))
            if not _is_list(column):
                columns += _positions(([f[1] for f in row] for row in fragments), width)
            columns += _positions(map(_elements, fragments), width)
        marks = ", ".join("?" for _ in self.names)
        conn.executemany(f"INSERT INTO temp.stage VALUES ({marks})", zip(*columns))

    def fill(self, conn: sqlite3.Connection) -> None:
        """The data tables' rows, cells and collection tombstones from the stage (the caller
        writes the partitions and static rows)."""
        ts = sql_literal(self.ts)
        keys = {"pk": "pk", "ck": "ck"}
        row = {"kind": sql_literal(REGULAR_KIND), "marker_ts": ts, "marker_ttl": "0", "marker_expiry": "0"}
        conn.execute(_insert_select("rows", {**keys, **row, "tombstone": "NULL"}))
        self._regular_cells(conn)
        for j, column in enumerate(self.native):
            if column.kind is not ColumnKind.STATIC:
                continue
            cell = {**self._cell_keys(column), "ts": ts}
            value = f"v{j}"
            live = {**cell, "path": "x''", "dead": "0", "value": value, "expiry": "0", "ttl": "0"}
            conn.execute(_insert_select("cells", live, f"{value} IS NOT NULL"))
            dead = {**cell, "path": "x''", "dead": "1", "value": "x''", "expiry": self.now_sql, "ttl": "0"}
            conn.execute(_insert_select("cells", dead, f"{value} IS NULL"))
        for c, (column, width) in enumerate(self.collections):
            cell = {**self._cell_keys(column), "ts": ts}
            if column.kind is ColumnKind.STATIC:
                for i in range(width):
                    path = _list_path(self.ts, i) if _is_list(column) else f"p{c}_{i}"
                    element = {**cell, "path": path, "dead": "0", "value": f"e{c}_{i}"}
                    element.update(expiry="0", ttl="0")
                    conn.execute(_insert_select("cells", element, f"e{c}_{i} IS NOT NULL"))
            tombstone = {k: cell[k] for k in ("pk", "kind", "ck", "col")}
            below = sql_literal(self.ts - 1)
            conn.execute(_insert_select("collection_tombstones", {**tombstone, "ts": below}))

    def _regular_cells(self, conn: sqlite3.Connection) -> None:
        """Every regular column's cells in one statement, in the table's key order: the stage's
        rows (in key order) crossed with one *slot* per native column and per collection
        element position, the slots in (column, path) order. Filled column by column instead,
        each statement would insert between the cells of the ones before it, splitting pages
        all over the B-tree; this way SQLite appends. A native column's null is a dead cell; a
        missing element writes nothing."""
        slots: list[tuple[bytes, int, str, str, str | None]] = []  # (col, index, value, path, bound path)
        for j, column in enumerate(self.native):
            if column.kind is not ColumnKind.STATIC:
                slots.append((column.name.encode(), 0, f"v{j}", "x''", None))
        for c, (column, width) in enumerate(self.collections):
            if column.kind is ColumnKind.STATIC:
                continue
            for i in range(width):
                if _is_list(column):
                    slots.append((column.name.encode(), i, f"e{c}_{i}", _list_path(self.ts, i), None))
                else:
                    slots.append((column.name.encode(), i, f"e{c}_{i}", "NULL", f"p{c}_{i}"))
        if not slots:
            return
        slots.sort()
        conn.execute("CREATE TEMP TABLE slots (j INTEGER PRIMARY KEY, col TEXT, path BLOB, native INTEGER)")
        for j, (col, _, value, path, _) in enumerate(slots):
            native = 1 if value.startswith("v") else 0
            conn.execute(f"INSERT INTO temp.slots VALUES ({j}, ?, {path}, {native})", (col.decode(),))
        value_of = " ".join(f"WHEN {j} THEN s.{slot[2]}" for j, slot in enumerate(slots))
        bound = [(j, slot[4]) for j, slot in enumerate(slots) if slot[4] is not None]
        path_of = (
            "CASE c.j " + " ".join(f"WHEN {j} THEN s.{p}" for j, p in bound) + " ELSE c.path END"
            if bound
            else "c.path"
        )
        ts = sql_literal(self.ts)
        values = {
            "pk": "pk",
            "kind": sql_literal(REGULAR_KIND),
            "ck": "ck",
            "col": "col",
            "path": "path",
            "ts": ts,
            "dead": "v IS NULL",
            "value": "ifnull(v, x'')",
            "expiry": f"CASE WHEN v IS NULL THEN {self.now_sql} ELSE 0 END",
            "ttl": "0",
        }
        columns, conflict = DATA_TABLE_COLUMNS["cells"]
        now = ", s.now AS now" if self.now is None else ""
        conn.execute(
            f"INSERT INTO cells ({', '.join(columns)}) SELECT {', '.join(values[c] for c in columns)} "
            f"FROM (SELECT s.rowid AS r, c.j AS o, s.pk AS pk, s.ck AS ck, c.col AS col, "
            f"c.native AS native, {path_of} AS path, CASE c.j {value_of} END AS v{now} "
            "FROM temp.stage AS s CROSS JOIN temp.slots AS c) "
            f"WHERE native OR v IS NOT NULL ORDER BY r, o{conflict}"
        )

    def _cell_keys(self, column: ColumnDef) -> dict[str, str]:
        static = column.kind is ColumnKind.STATIC
        kind = sql_literal(STATIC_KIND if static else REGULAR_KIND)
        return {"pk": "pk", "kind": kind, "ck": "x''" if static else "ck", "col": sql_literal(column.name)}


_FRAGMENTS = itemgetter(0)


def _is_list(column: ColumnDef) -> bool:
    return isinstance(column.type, ListType)


def _list_path(ts: int, index: int) -> str:
    """The path of a list's element `index` written at `ts` (`cells._list_paths`), as SQL."""
    return sql_literal((LIST_MIDDLE + ts * 1024 + index).to_bytes(8, "big"))


def _elements(fragments: Any) -> Any:
    """A row's element values: a `ListFragments`' own, else the fragments' values."""
    if isinstance(fragments, ListFragments):
        return fragments.elements
    return [f[4] for f in fragments]


def _positions(rows: Any, width: int) -> list[tuple[Any, ...]]:
    """Per-row sequences turned into `width` columns (one C-level transposition), None-padded."""
    columns = list(zip_longest(*rows))
    assert len(columns) == width, (len(columns), width)
    return columns


def widths(cells: list[RowCells]) -> int:
    """The most elements a row holds."""
    return max((len(row[0]) for row in cells), default=0)
