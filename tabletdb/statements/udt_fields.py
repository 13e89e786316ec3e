"""Setting and deleting single fields of non-frozen user-type columns (``SET u.f = ?``, ``DELETE u.f``).

A non-frozen UDT is one cell per field (``statements.udt_cells``), so a field update writes that
field's cell (a tombstone for null) and nothing else; an unset value changes nothing. The data
path still reads the column first (under the partition's lock, or in a Paxos round): a value
stored whole by an earlier version is rewritten field by field with the update, because its one
cell would otherwise outlive a field deletion that has no cell to show it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, UserType
from tabletdb.schema.model import ColumnDef
from tabletdb.statements.cells import CellChanges, WriteTime
from tabletdb.statements.udt_cells import WHOLE_VALUE_PATH, field_path, split_value
from tabletdb.storage.reconcile import LiveCell

CurrentCells = Callable[[], Sequence[LiveCell]]


def field_type(col: ColumnDef, field: str) -> CqlType:
    t = col.type
    if not isinstance(t, UserType):
        raise InvalidRequest(f"Invalid field selection: {col.name} of type {t.cql()} is not a user type")
    if field not in t.field_names:
        raise InvalidRequest(f"UDT column {col.name} does not have a field named {field}")
    return t.field_types[t.field_names.index(field)]


def check_settable(col: ColumnDef, field: str) -> CqlType:
    """The field's type; frozen UDTs are refused, as in Cassandra."""
    found = field_type(col, field)
    if not col.type.is_multi_cell:
        raise InvalidRequest(f"Invalid operation ({col.name}.{field} = ?) for frozen UDT column {col.name}")
    return found


def check_deletable(col: ColumnDef, field: str) -> None:
    field_type(col, field)
    if not col.type.is_multi_cell:
        raise InvalidRequest(f"Frozen UDT column {col.name} does not support field deletion")


def set_field(
    col: ColumnDef, field: str, value: Any, when: WriteTime, out: CellChanges, current: CurrentCells
) -> None:
    """``col.field = value`` (None deletes the field): one field cell."""
    t = col.type
    assert isinstance(t, UserType)
    index = t.field_names.index(field)
    raw = None if value is None else codec.serialize(t.field_types[index], value)
    old = [c for c in current() if c.path == WHOLE_VALUE_PATH]
    if old:  # stored whole by an earlier version: rewrite it as fields, with this one changed
        fields = split_value(t, old[0].value)
        fields[index] = raw
        out.collection_tombstones.append((col.name, when.timestamp - 1))
        for i, f in enumerate(fields):
            if f is not None:
                out.cells.append(when.cell(col.name, f, field_path(i)))
        return
    out.cells.append(when.cell(col.name, raw, field_path(index)))
