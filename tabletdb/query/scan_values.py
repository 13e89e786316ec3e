"""Replica value-page bytes turned into the CQL values a result sends (``query.scan_select``).

A value page holds a single-cell column's stored bytes and a multi-cell column's live cells
packed as ``storage.column_reads`` describes. What the general path (``coordinator.rows``
decodes, ``query.select.encode_rows`` encodes) would send is rebuilt here with as little Python
per value as the type allows:

* stored bytes of a ``PASS_THROUGH`` type, and a list of one, are sent as they are (a list's
  packed values are its CQL value); a double is its 8 bytes;
* a set's or map's elements are in the cell paths in their byte-ordered form, so each path is
  turned back into the element (``statements.keys.element_of_path``), in path order, which is
  the order the type sorts in;
* a non-frozen user type merges its field cells by time (``statements.udt_cells.live_fields``);
* anything else is decoded and encoded again, as the general path does.
"""

from __future__ import annotations

from collections.abc import Callable

from tabletdb.cql import codec, wire
from tabletdb.cql.types import DOUBLE, CqlType, ListType, MapType, NativeType, SetType, UserType
from tabletdb.statements.cells import is_multi_cell
from tabletdb.statements.insert_plan import PASS_THROUGH
from tabletdb.statements.keys import element_of_path
from tabletdb.statements.udt_cells import join_fields, live_fields

Encoder = Callable[[bytes | None], bytes | None]


def encoder_of(t: CqlType) -> Encoder | None:
    """None: the page's bytes are sent as they are; else the function that makes the CQL value."""
    if is_multi_cell(t):
        return _multi_cell(t)
    if _passes(t):
        return None
    if isinstance(t, NativeType) and t.name == "double":
        return _double
    return _again(t)


def _passes(t: CqlType) -> bool:
    return isinstance(t, NativeType) and t.name in PASS_THROUGH


def _again(t: CqlType) -> Encoder:
    def again(raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        value = codec.deserialize(t, raw)
        return None if value is None else codec.serialize(t, value)

    return again


def _double(raw: bytes | None) -> bytes | None:
    """A double decoded and encoded again is its 8 bytes unchanged (CPython copies IEEE doubles
    bit for bit, NaN payloads too); only empty or malformed values need the codec."""
    if raw is None or len(raw) == 8:
        return raw
    value = codec.deserialize(DOUBLE, raw)
    return None if value is None else codec.serialize(DOUBLE, value)


def _multi_cell(t: CqlType) -> Encoder | None:
    if isinstance(t, ListType):
        return None if _passes(t.element) else _again(t)
    if isinstance(t, SetType | MapType):
        return _keyed(t)
    assert isinstance(t, UserType)
    return _user_type(t)


def _keyed(t: SetType | MapType) -> Encoder:
    """A set's paths, or a map's (path, value) pairs, as the collection's CQL value."""
    key_type = t.element if isinstance(t, SetType) else t.key
    per_cell = 1 if isinstance(t, SetType) else 2
    finish = None if _passes(key_type) and (isinstance(t, SetType) or _passes(t.value)) else _again(t)

    def keyed(raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        items = wire.split_collection(raw, t, per_cell)
        for i in range(0, len(items), per_cell):
            items[i] = element_of_path(key_type, items[i])
        value = wire.join_collection(items, len(items) // per_cell)
        return value if finish is None else finish(value)

    return keyed


def _user_type(t: UserType) -> Encoder:
    """(path, value, timestamp) cells merged into the fields' value, then encoded as the general
    path encodes it."""
    finish = _again(t)

    def fields(raw: bytes | None) -> bytes | None:
        if raw is None:
            return None
        items = wire.split_collection(raw, t, 3)
        cells = (
            (items[i], items[i + 1], int.from_bytes(items[i + 2], "big", signed=True))
            for i in range(0, len(items), 3)
        )
        found = live_fields(t, cells)
        return None if found is None else finish(join_fields(found))

    return fields
