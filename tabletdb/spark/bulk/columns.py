"""One input column fitted to one table column for a batch of rows: values and rejects.

Native-typed columns come out serialized (the codec's bytes), fast where `text_values` /
`typed_values` are sure and through `coerce.fit_cell` (the row-at-a-time rules, with their
reject reasons) for every other value. Other types (collections, tuples, UDTs) come out as the
codec's Python values for `cells` to write, all through `fit_cell`. Key columns always come
out serialized.

A value the rules accept but the codec cannot serialize (a decimal whose scale overflows) is a
*late* reject: the row-at-a-time load found it only when building the row's mutation, after
every column had fitted, so its reason ranks after theirs.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeAlias

import pyarrow as pa

from tabletdb.cql import codec
from tabletdb.cql.errors import CqlError
from tabletdb.cql.types import ListType, NativeType, SetType
from tabletdb.spark.bulk.serial import null_rows
from tabletdb.spark.bulk.typed_values import from_typed
from tabletdb.spark.coerce import RowRejected, fit_cell
from tabletdb.spark.schema_map import CLUSTERING, PARTITION_KEY, Column

_DECODER = json.JSONDecoder(parse_float=Decimal)  # json.loads(raw, parse_float=Decimal), made once
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
"""(value, end) of the JSON value at an index, StopIteration if there is none (C, with _json)."""
_IS_STR = frozenset({str}).__contains__  # exactly str, not a subclass: type(e) is str
_IS_INT = frozenset({int}).__contains__  # exactly int: not bool
_PACKERS = {"int": struct.Struct(">i"), "bigint": struct.Struct(">q")}


class Elements(tuple[bytes, ...]):
    """A non-frozen list's or set's elements, already serialized (`cells` writes them as they are)."""


Input: TypeAlias = pa.Array | Sequence[Any]
"""A batch's input column: an Arrow array, or Python values (JSON lines)."""


@dataclass
class Fitted:
    values: list[Any]
    """Per row: serialized bytes (native types and keys) or the codec's value; None for null
    and for rejected rows."""
    reasons: dict[int, str] = field(default_factory=dict)
    late: dict[int, str] = field(default_factory=dict)


def is_key(column: Column) -> bool:
    return column.kind in (PARTITION_KEY, CLUSTERING)


def serialized(column: Column) -> bool:
    """Whether the column's values come out serialized."""
    return isinstance(column.cql_type, NativeType) or is_key(column)


def fit_column(column: Column, data: Input) -> Fitted:
    if isinstance(data, pa.Array | pa.ChunkedArray):
        array = data.combine_chunks() if isinstance(data, pa.ChunkedArray) else data
        if isinstance(column.cql_type, NativeType):
            fast = from_typed(column.cql_type.name, array)
            fitted = Fitted(fast.values)
            _slow(column, fitted, fast.pending, [array[i].as_py() for i in fast.pending])
            if is_key(column):
                _missing(column, fitted, null_rows(array))
            return fitted
        data = array.to_pylist()
    fitted = Fitted([None] * len(data))
    t = column.cql_type
    if isinstance(t, ListType | SetType) and t.is_multi_cell and isinstance(t.element, NativeType):
        rows = []
        for row, raw in enumerate(data):
            fitted.values[row] = elements = _elements(t.element.name, raw)
            if elements is None and raw is not None:
                rows.append(row)
        _slow(column, fitted, rows, [data[r] for r in rows])
    else:
        _slow(column, fitted, range(len(data)), data)
    return fitted


def _elements(name: str, raw: Any) -> Elements | None:
    """The serialized elements of a list or set of text, int or bigint given as JSON text or a
    Python list, when every element is exactly of its type (None otherwise: the slow way).

    JSON text is scanned by the decoder's C scanner straight away: text with whitespace around
    the value (or anything after it) is not taken here and goes the slow way, which accepts what
    it should. The checks and the encoding run as C loops (`map`), not a Python frame per element."""
    parsed = raw
    if isinstance(raw, str):
        try:
            parsed, end = _SCAN(raw, 0)
        except StopIteration:
            return None
        if end != len(raw):
            return None
    if type(parsed) is not list:
        return None
    try:
        if name == "text":
            if all(map(_IS_STR, map(type, parsed))):
                return Elements(map(str.encode, parsed))
        elif name in _PACKERS and all(map(_IS_INT, map(type, parsed))):
            return Elements(map(_PACKERS[name].pack, parsed))
    except (UnicodeEncodeError, struct.error):  # a lone surrogate, an int out of range
        return None
    return None


def _missing(column: Column, fitted: Fitted, rows: list[int]) -> None:
    for row in rows:
        fitted.reasons[row] = f"missing value for primary key column {column.name}"


def _slow(column: Column, fitted: Fitted, rows: Sequence[int], raws: Sequence[Any]) -> None:
    """The row-at-a-time rules for `raws` (the values of `rows`)."""
    serialize = serialized(column)
    t = column.cql_type
    for row, raw in zip(rows, raws):
        try:
            value = fit_cell(column, raw, spark_form=False)
        except RowRejected as exc:
            fitted.reasons[row] = str(exc)
            continue
        if serialize and value is not None:
            try:
                value = codec.serialize(t, value)
            except CqlError as exc:
                fitted.late[row] = exc.message
                continue
        fitted.values[row] = value
