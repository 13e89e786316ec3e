"""Column values turned into storage cells, one assignment at a time.

Non-frozen lists, sets and maps are stored element by element (one cell per element, its key in
the cell path) so appends, removals and element updates need no read; a whole-value assignment
is a collection tombstone just below the write timestamp plus the new elements, as in
Cassandra. A non-frozen user type is stored the same way, one cell per field (``udt_cells``).
Every other type (frozen collections and UDTs, tuples, scalars) is one cell.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import BIGINT, CqlType, ListType, MapType, SetType, UserType
from tabletdb.schema.model import ColumnDef
from tabletdb.statements.keys import element_path, list_paths
from tabletdb.statements.udt_cells import field_path, split_value
from tabletdb.storage.mutation import Cell, RowMarker, RowWrite
from tabletdb.storage.reconcile import LiveCell


@dataclass(frozen=True)
class WriteTime:
    """Timestamp (µs), TTL (s, 0: none) and the write's wall-clock seconds (for expiry)."""

    timestamp: int
    ttl: int
    now: int

    def cell(self, column: str, value: bytes | None, path: bytes = b"") -> Cell:
        if value is None:
            return Cell(column, None, self.timestamp, path, 0, self.now)
        return Cell(column, value, self.timestamp, path, self.ttl, self.now + self.ttl if self.ttl else 0)


@dataclass
class CellChanges:
    cells: list[Cell]
    collection_tombstones: list[tuple[str, int]]

    def __bool__(self) -> bool:
        return bool(self.cells or self.collection_tombstones)

    def row_write(
        self, clustering: bytes = b"", *, static: bool = False, marker: RowMarker | None = None
    ) -> RowWrite:
        """These changes as the storage row they apply to (the static row with `static`)."""
        return RowWrite(
            clustering,
            static=static,
            marker=marker,
            cells=tuple(self.cells),
            collection_tombstones=tuple(self.collection_tombstones),
        )


def is_multi_cell(t: CqlType) -> bool:
    """Stored as one cell per element or field: non-frozen collections and user types."""
    return isinstance(t, ListType | SetType | MapType | UserType) and t.is_multi_cell


def whole_value(col: ColumnDef, value: Any, when: WriteTime, out: CellChanges) -> None:
    """``col = value`` (value a Python value; None deletes)."""
    t = col.type
    if not is_multi_cell(t):
        out.cells.append(when.cell(col.name, None if value is None else codec.serialize(t, value)))
        return
    out.collection_tombstones.append((col.name, when.timestamp - 1))
    if value is None:
        return
    if isinstance(t, UserType):  # its non-null fields; with none set the value is null
        for i, raw in enumerate(split_value(t, codec.serialize(t, value))):
            if raw is not None:
                out.cells.append(when.cell(col.name, raw, field_path(i)))
        return
    add_elements(col, value, when, out)


def add_elements(
    col: ColumnDef, value: Any, when: WriteTime, out: CellChanges, *, prepend: bool = False
) -> None:
    """``col = col + value`` (or ``value + col`` for lists with ``prepend``)."""
    t = col.type
    if isinstance(t, SetType):
        for element in value:
            out.cells.append(
                when.cell(col.name, b"", element_path(t.element, codec.serialize(t.element, element)))
            )
    elif isinstance(t, MapType):
        for key, element in value:
            path = element_path(t.key, codec.serialize(t.key, key))
            out.cells.append(when.cell(col.name, codec.serialize(t.value, element), path))
    elif isinstance(t, ListType):
        items = list(value)
        for path, element in zip(list_paths(when.timestamp, len(items), prepend=prepend), items):
            out.cells.append(when.cell(col.name, codec.serialize(t.element, element), path))
    else:
        raise InvalidRequest(f"Invalid operation (+) for non-collection column {col.name}")


def remove_elements(
    col: ColumnDef, value: Any, when: WriteTime, out: CellChanges, current: Callable[[], Sequence[LiveCell]]
) -> None:
    """``col = col - value``: set elements / map keys by path; list values need the current list."""
    t = col.type
    if isinstance(t, SetType):
        for element in value:
            out.cells.append(
                when.cell(col.name, None, element_path(t.element, codec.serialize(t.element, element)))
            )
    elif isinstance(t, MapType):
        for key in value:
            out.cells.append(when.cell(col.name, None, element_path(t.key, codec.serialize(t.key, key))))
    elif isinstance(t, ListType):
        unwanted = {codec.serialize(t.element, v) for v in value}
        for cell in current():
            if cell.value in unwanted:
                out.cells.append(when.cell(col.name, None, cell.path))
    else:
        raise InvalidRequest(f"Invalid operation (-) for non-collection column {col.name}")


@dataclass(frozen=True)
class ListKey:
    """``l[SCYLLA_TIMEUUID_LIST_INDEX(key)]``: a list element named by the timeuuid key a CDC log
    showed for it (``cdc.list_keys``) instead of by index; written without reading the list."""

    path: bytes


def set_element(
    col: ColumnDef,
    key: Any,
    value: Any,
    when: WriteTime,
    out: CellChanges,
    current: Callable[[], Sequence[LiveCell]],
) -> None:
    """``col[key] = value`` (value None deletes the element)."""
    t = col.type
    if isinstance(t, MapType) and t.is_multi_cell:
        if key is None:
            raise InvalidRequest(f"Invalid null map key for column {col.name}")
        path = element_path(t.key, codec.serialize(t.key, key))
        out.cells.append(
            when.cell(col.name, None if value is None else codec.serialize(t.value, value), path)
        )
    elif isinstance(t, ListType) and t.is_multi_cell and isinstance(key, ListKey):
        out.cells.append(
            when.cell(col.name, None if value is None else codec.serialize(t.element, value), key.path)
        )
    elif isinstance(t, ListType) and t.is_multi_cell:
        cells = list(current())
        if key is None or not 0 <= int(key) < len(cells):
            raise InvalidRequest(
                f"List index {key} out of bound, list has size {len(cells)} (column {col.name})"
            )
        path = cells[int(key)].path
        out.cells.append(
            when.cell(col.name, None if value is None else codec.serialize(t.element, value), path)
        )
    elif isinstance(t, SetType):
        raise InvalidRequest(f"Invalid operation (set element) for set column {col.name}")
    else:
        raise InvalidRequest(
            f"Invalid operation (element access) for frozen or non-collection column {col.name}"
        )


def counter_add(
    col: ColumnDef, delta: int, when: WriteTime, out: CellChanges, current: Sequence[LiveCell]
) -> None:
    """Counters on one node: read-modify-write of a bigint cell, serialized per partition."""
    base = int(codec.deserialize(BIGINT, current[0].value)) if current else 0
    total = base + delta
    if not -(1 << 63) <= total < (1 << 63):
        raise InvalidRequest(f"Counter {col.name} would overflow")
    out.cells.append(when.cell(col.name, codec.serialize(BIGINT, total)))
