"""``writetime()`` and ``ttl()`` of a part of a column: an element of a non-frozen set or map
(``writetime(m['k'])``, ``ttl(s[e])``), each element being a cell of its own, as ScyllaDB
selects them. What holds no cell of its own is refused with ScyllaDB's messages: a list element
(its position is not a key), an element of a frozen collection and a field of a frozen UDT (the
whole value is one cell), a subscript of a tuple or of a scalar. (A non-frozen UDT's field cells
are read by ``query.select`` from ``OutRow.cells``.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tabletdb.coordinator.rows import OutRow
from tabletdb.cql import ast, codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.literals import literal_value
from tabletdb.cql.types import CqlType, ListType, MapType, SetType, UserType
from tabletdb.cql.unparse import cql_text
from tabletdb.schema.model import TableDef
from tabletdb.statements.cells import is_multi_cell
from tabletdb.statements.keys import element_path

CellFn = Callable[[OutRow], Any]


def element_meta(fn: str, ref: ast.ElementRef, table: TableDef) -> tuple[str, CellFn]:
    """The result column's name and the per-row reader of ``fn(column[key])``."""
    col = table.column(ref.column)
    if col is None:
        raise InvalidRequest(f"Undefined column name {ref.column}")
    if col.is_primary_key:
        raise InvalidRequest(f"{fn.upper()} is not legal on primary key component {col.name}")
    t = col.type
    if not isinstance(t, SetType | MapType | ListType):
        raise InvalidRequest(f"Column {col.name} is not a map/set/list, cannot be subscripted")
    if isinstance(t, ListType) or not is_multi_cell(t):
        raise InvalidRequest(f"{fn.upper()} on a subscript is only valid for non-frozen map or set columns")
    key_type = t.key if isinstance(t, MapType) else t.element
    path = _path(ref, key_type, col.name)
    name = col.name
    shown = f"{fn}({cql_text(ast.ColumnRef(name))}[{cql_text(ref.key)}])"
    writetime = fn == "writetime"

    def read(row: OutRow) -> Any:
        if path is None:
            return None
        for cell in row.elements.get(name, ()):
            if cell.path == path:
                return cell.timestamp if writetime else cell.ttl_remaining
        return None

    return shown, read


def _path(ref: ast.ElementRef, key_type: CqlType, column: str) -> bytes | None:
    """The storage path of the constant subscript (None for ``null``: no element, a null result)."""
    key = ref.key.term if isinstance(ref.key, ast.TypeCast) else ref.key
    if isinstance(key, ast.Null):
        return None
    if isinstance(key, ast.BindMarker):
        raise InvalidRequest("Bind markers are not supported in the select clause")
    if not isinstance(key, ast.Literal):
        raise InvalidRequest(
            f"Invalid element selector {cql_text(ref)}: a constant of type {key_type.cql()} is needed"
        )
    value = literal_value(key_type, key.kind, key.text, f"key({column})")
    return element_path(key_type, codec.serialize(key_type, value))


def check_field_meta(fn: str, t: CqlType, column: str, is_primary_key: bool) -> None:
    """Refuse ``fn(column.field)`` where the field has no cell of its own, as ScyllaDB does."""
    if is_primary_key:
        raise InvalidRequest(f"{fn.upper()} is not legal on primary key component {column}")
    if not isinstance(t, UserType):
        raise InvalidRequest(f"Invalid field selection: {column} of type {t.cql()} is not a user type")
    if not t.is_multi_cell:
        raise InvalidRequest(f"{fn.upper()} on a field selection is only valid for non-frozen UDT columns")


__all__ = ["CellFn", "check_field_meta", "element_meta"]
