"""Setting and deleting single fields of non-frozen user-type columns (``SET u.f = ?``, ``DELETE u.f``).

A UDT value is stored as one cell here (Cassandra stores one cell per field), so a field update
reads the column's current value and writes the whole value back with the field replaced; the
data path runs such statements under the table's lock, so concurrent field updates on one node
are not lost. Observable results follow Cassandra's per-field cells: setting a field of a row
that has no value creates a value with only that field, null deletes the field, an unset value
changes nothing, and a value whose fields are all null reads as null.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, UserType
from tabletdb.schema.model import ColumnDef
from tabletdb.statements.cells import CellChanges, WriteTime
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
    """``col.field = value`` (None deletes the field) as a rewrite of the whole value."""
    t = col.type
    assert isinstance(t, UserType)
    cells = current()
    old: tuple[Any, ...] = ()
    if cells:
        decoded = codec.deserialize(t, cells[0].value)
        old = tuple(decoded) if decoded is not None else ()
    fields = list(old) + [None] * (len(t.field_names) - len(old))
    fields[t.field_names.index(field)] = value
    if all(f is None for f in fields):
        out.cells.append(when.cell(col.name, None))
    else:
        out.cells.append(when.cell(col.name, codec.serialize(t, tuple(fields))))
