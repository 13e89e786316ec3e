"""What a range read returns for one column, in SQL and from a row read in Python.

A value page (``range_reads.live_rows``) returns, per asked column, one byte string or None. A
single-cell column gives its live cell's value. A multi-cell column (a non-frozen collection or
user type: one cell per element or field, the element's key in the cell path) gives its live
cells packed in path order: a 4-byte big-endian count, then each cell as the items of its
``Shape``, each item a 4-byte big-endian length and its bytes — the CQL protocol's collection
layout. So a list's ``VALUES`` is already the list's CQL value, with no Python per element; a set
or map still needs its paths (the elements' byte-ordered form) turned back into elements, and a
user type its fields merged by time, which the layers that know the types do.

The packing runs inside SQLite (``value_sql``): SQLite 3.40 has no ``unhex``, so the cells are
packed as hexadecimal text (``printf('%08X', length(...)) || hex(...)``) concatenated by
``group_concat`` over the cells in path order, and Python turns the text into bytes with one
``bytes.fromhex`` per value. Partitions the SQL leaves to ``PartitionReader`` are packed from their
``LiveRow`` the same way (``value_of_row``), so both give the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from enum import IntEnum

from tabletdb.storage.reconcile import LiveRow


class Shape(IntEnum):
    """How a column's live cells come back (module docstring)."""

    CELL = 0
    """A single-cell column: the value of its cell with an empty path."""
    VALUES = 1
    """Each live cell's value (a list)."""
    PATHS = 2
    """Each live cell's path (a set: its elements are in the paths, values are empty)."""
    PAIRS = 3
    """Each live cell's path and value (a map)."""
    TIMED = 4
    """Each live cell's path, value and write timestamp as 8 big-endian bytes (a non-frozen
    user type: a whole-value cell of an older file gives way to newer field cells)."""


ColumnRead = tuple[str, Shape]
"""A column to return and how."""

ITEMS = {Shape.VALUES: 1, Shape.PATHS: 1, Shape.PAIRS: 2, Shape.TIMED: 3}
"""Items per cell of each multi-cell shape (``cql.wire.split_collection``'s ``per_entry``)."""

_HEX_ITEM = "printf('%08X', length({x})) || hex({x})"
_HEX_ITEMS = {
    Shape.VALUES: _HEX_ITEM.format(x="c.value"),
    Shape.PATHS: _HEX_ITEM.format(x="c.path"),
    Shape.PAIRS: _HEX_ITEM.format(x="c.path") + " || " + _HEX_ITEM.format(x="c.value"),
    Shape.TIMED: _HEX_ITEM.format(x="c.path")
    + " || "
    + _HEX_ITEM.format(x="c.value")
    + " || '00000008' || printf('%016X', c.ts)",
}


def sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def value_sql(column: str, shape: Shape, cell_live: str, tombstone: str) -> str:
    """A scalar subquery, correlated with the row ``r``, giving ``column``'s value as ``shape``
    asks (as hexadecimal text for a multi-cell shape: ``from_sql`` makes it bytes). ``cell_live``
    decides a cell ``c``; ``tombstone`` is the timestamp of the column's collection tombstone in
    this row (NULL: none), which shadows the cells written at or before it."""
    match = f"c.pk = r.pk AND c.kind = r.kind AND c.ck = r.ck AND c.col = {sql_literal(column)}"
    if shape is Shape.CELL:
        return f"(SELECT c.value FROM cells c WHERE {match} AND c.path = x'' AND {cell_live})"
    return (
        f"(SELECT printf('%08X', count(*)) || group_concat(item, '') FROM"
        f" (SELECT {_HEX_ITEMS[shape]} AS item FROM cells c WHERE {match} AND {cell_live}"
        f" AND ({tombstone} IS NULL OR c.ts > {tombstone}) ORDER BY c.path))"
    )


def from_sql(raw: bytes | str | None) -> bytes | None:
    """A value of ``value_sql`` as bytes."""
    if raw is None or isinstance(raw, bytes):
        return raw
    return bytes.fromhex(raw)


_INT32 = struct.Struct(">i")
_TIMESTAMP = struct.Struct(">q")


def _item(data: bytes) -> bytes:
    return _INT32.pack(len(data)) + data


def values_of_row(row: LiveRow, columns: Sequence[ColumnRead]) -> tuple[bytes | None, ...]:
    """What ``value_sql`` gives for each of ``columns`` of a row read by ``PartitionReader``
    (whose live cells come in column, path order)."""
    by_column: dict[str, list[tuple[bytes, bytes, int]]] = {}
    for cell in row.cells:
        by_column.setdefault(cell.column, []).append((cell.path, cell.value, cell.timestamp))
    return tuple(_packed(by_column.get(name, ()), shape) for name, shape in columns)


def _packed(cells: Sequence[tuple[bytes, bytes, int]], shape: Shape) -> bytes | None:
    if shape is Shape.CELL:
        return next((value for path, value, _ in cells if path == b""), None)
    if not cells:
        return None
    out = [_INT32.pack(len(cells))]
    for path, value, ts in cells:
        if shape is Shape.VALUES:
            out.append(_item(value))
        elif shape is Shape.PATHS:
            out.append(_item(path))
        else:
            out += (_item(path), _item(value))
            if shape is Shape.TIMED:
                out.append(_item(_TIMESTAMP.pack(ts)))
    return b"".join(out)
