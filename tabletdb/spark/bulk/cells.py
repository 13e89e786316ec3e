"""A batch's non-key columns as cell fragments, as the node's INSERT writes them.

Native-typed columns stay serialized values (`tablet_file` turns them into cells with one SQL
statement per column). Non-frozen lists, sets and maps become a collection tombstone just below
the write timestamp plus one cell per element (`statements.cells.whole_value`'s layout), built
here without its per-element objects: list elements take positions above the list middle
numbered from the write timestamp and the element's index, so a load run again writes the very
same cells (the node's INSERT numbers them from a process-wide counter instead). Every other type
(frozen values, tuples, UDTs) goes through `whole_value` itself, so its layout is the INSERT's
whatever it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import CqlError
from tabletdb.cql.types import ListType, MapType, SetType
from tabletdb.schema.model import ColumnDef
from tabletdb.spark.bulk.columns import Elements
from tabletdb.statements.cells import CellChanges, WriteTime, is_multi_cell, whole_value
from tabletdb.statements.keys import LIST_MIDDLE, element_path

Fragment = tuple[Any, ...]
"""A cell without its row: (column, path, timestamp, dead, value, expiry, ttl)."""
RowCells = tuple[tuple[Fragment, ...], tuple[tuple[str, int], ...]]
"""One row's cells of one column, and its collection tombstones (column, timestamp)."""


@dataclass(frozen=True)
class Built:
    cells: list[RowCells | None]
    """Per row (None for rows not built)."""
    late: dict[int, str]


def _live(when: WriteTime) -> tuple[int, int]:
    """(expiry, ttl) of a live cell written at `when`."""
    return (when.now + when.ttl if when.ttl else 0), when.ttl


def _elements(column: ColumnDef, value: Any, when: WriteTime) -> tuple[Fragment, ...]:
    t = column.type
    name = column.name
    ts = when.timestamp
    expiry, ttl = _live(when)
    if isinstance(t, ListType | SetType):
        serialized = value if isinstance(value, Elements) else [codec.serialize(t.element, e) for e in value]
        if isinstance(t, SetType):
            return tuple((name, element_path(t.element, e), ts, 0, b"", expiry, ttl) for e in serialized)
        base = LIST_MIDDLE + ts * 1024
        return tuple(
            (name, (base + i).to_bytes(8, "big"), ts, 0, e, expiry, ttl) for i, e in enumerate(serialized)
        )
    assert isinstance(t, MapType)
    return tuple(
        (
            name,
            element_path(t.key, codec.serialize(t.key, k)),
            ts,
            0,
            codec.serialize(t.value, v),
            expiry,
            ttl,
        )
        for k, v in value
    )


def _whole(column: ColumnDef, value: Any, when: WriteTime) -> RowCells:
    changes = CellChanges([], [])
    whole_value(column, value, when, changes)
    fragments = tuple(
        (c.column, c.path, c.timestamp, 1 if c.value is None else 0, c.value or b"", c.expiry, c.ttl)
        for c in changes.cells
    )
    return fragments, tuple(changes.collection_tombstones)


def build_cells(column: ColumnDef, values: Sequence[Any], whens: Sequence[WriteTime | None]) -> Built:
    """Cells of a non-native column for each row with a `when` (others: None)."""
    multi = is_multi_cell(column.type)
    out: list[RowCells | None] = []
    late: dict[int, str] = {}
    for row, (value, when) in enumerate(zip(values, whens)):
        if when is None:
            out.append(None)
            continue
        try:
            if multi:
                tombstone = ((column.name, when.timestamp - 1),)
                out.append((() if value is None else _elements(column, value, when), tombstone))
            else:
                out.append(_whole(column, value, when))
        except CqlError as exc:
            late[row] = exc.message
            out.append(None)
    return Built(out, late)
