"""Fitting loose input rows (CSV text, JSON, Parquet values) to a table's columns, or saying why not.

Every input value goes through CQL's own JSON reading rules (`tabletdb.cql.jsonvalues.from_json`,
the rules of INSERT JSON): a CSV cell is the value's text (numbers, `0x` blobs, ISO dates and
timestamps, `1h30m` durations, `true`/`false`), and a collection, tuple or UDT cell is JSON text
(`[1, 2]`, `{"k": 1}`, `{"street": "x"}`). Typed Parquet/JSON values are first put into that
form. The result is the Spark form of the value (`values.to_spark`), so a row that passes here
is one the data source can write; a row that does not becomes a reject with the reason.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tabletdb.cql.errors import CqlError
from tabletdb.cql.jsonvalues import from_json
from tabletdb.cql.literals import literal_value
from tabletdb.cql.types import CqlType, MapType, NativeType, TupleType, UserType
from tabletdb.spark.schema_map import CLUSTERING, PARTITION_KEY, Column, SchemaError, TableSchema
from tabletdb.spark.values import EPOCH, ValueConversionError, to_spark

_TEXTUAL = frozenset({"text", "ascii"})


class RowRejected(ValueError):
    """The row does not fit the table; the message is the reason written to the rejects."""


@dataclass(frozen=True)
class ColumnMapping:
    """Which input field feeds which table column (by name, case-insensitively if not exact)."""

    columns: tuple[Column, ...]
    positions: tuple[int, ...]  # index of each column's field in the input row
    extras: tuple[str, ...] = ()  # writetime/TTL fields, written after the columns
    extra_positions: tuple[int, ...] = ()

    @property
    def key_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind in (PARTITION_KEY, CLUSTERING))


def map_columns(table: TableSchema, input_names: Sequence[str], extras: Sequence[str] = ()) -> ColumnMapping:
    """Match input fields to columns; an unknown field or an absent key column fails the whole load
    up front, since no row of that input could ever fit. `extras` (the writetime and TTL fields)
    must be input fields and are kept apart from the columns."""
    absent = [e for e in extras if e not in input_names]
    if absent:
        raise SchemaError(f"the input has no field {', '.join(absent)} (named as writetime/TTL field)")
    by_lower = {c.name.lower(): c for c in table.columns}
    exact = {c.name: c for c in table.columns}
    chosen: list[Column] = []
    positions: list[int] = []
    unknown = []
    for i, name in enumerate(input_names):
        if name in extras:
            continue
        column = exact.get(name) or by_lower.get(name.lower())
        if column is None:
            unknown.append(name)
        elif column not in chosen:
            chosen.append(column)
            positions.append(i)
    if unknown:
        raise SchemaError(
            f"input field(s) {', '.join(unknown)} match no column of {table.keyspace}.{table.table} "
            f"(columns: {', '.join(c.name for c in table.columns)})"
        )
    missing = [c.name for c in table.primary_key if c not in chosen]
    if missing:
        raise SchemaError(f"the input has no field for primary key column(s) {', '.join(missing)}")
    extra_positions = tuple(list(input_names).index(e) for e in extras)
    return ColumnMapping(tuple(chosen), tuple(positions), tuple(extras), extra_positions)


def json_object_row(table: TableSchema, obj: Any, extras: Sequence[str] = ()) -> list[Any]:
    """One JSON-lines object as a row of every table column then the `extras` fields (absent fields
    are null, as with INSERT JSON); a non-object or a field that names no column is a reject."""
    if not isinstance(obj, dict):
        raise RowRejected(f"expected a JSON object per line, got {type(obj).__name__}")
    by_lower = {c.name.lower(): i for i, c in enumerate(table.columns)}
    exact = {c.name: i for i, c in enumerate(table.columns)}
    for i, extra in enumerate(extras):
        exact[extra] = len(table.columns) + i
    row: list[Any] = [None] * (len(table.columns) + len(extras))
    for key, value in obj.items():
        index = exact.get(key, by_lower.get(key.lower()))
        if index is None:
            raise RowRejected(f"field {key!r} matches no column of {table.keyspace}.{table.table}")
        row[index] = value
    return row


def fit_row(mapping: ColumnMapping, row: Sequence[Any], *, spark_form: bool = True) -> tuple[Any, ...]:
    """The row's values in Spark form (or, without `spark_form`, in the codec's form, as
    `from_json` gives them: what the file load encodes), in `mapping.columns` order;
    RowRejected says what is wrong."""
    out = [
        fit_cell(column, row[position] if position < len(row) else None, spark_form=spark_form)
        for column, position in zip(mapping.columns, mapping.positions)
    ]
    for name, position in zip(mapping.extras, mapping.extra_positions):
        out.append(whole_number(name, row[position] if position < len(row) else None))
    return tuple(out)


def fit_cell(column: Column, raw: Any, *, spark_form: bool = True) -> Any:
    """One input value fitted to `column` (see `fit_row`); RowRejected says why it does not fit,
    naming the column. The bulk load's columnwise path (`spark.bulk`) decides the values its
    fast paths are unsure of here, so both paths reject with the same words."""
    if raw is None and column.kind in (PARTITION_KEY, CLUSTERING):
        raise RowRejected(f"missing value for primary key column {column.name}")
    try:
        return fit_value(column.cql_type, raw, column.name, spark_form=spark_form)
    except (CqlError, ValueConversionError) as exc:
        raise RowRejected(f"column {column.name} ({column.cql_type.cql()}): {_message(exc)}") from None
    except json.JSONDecodeError as exc:  # a collection, tuple or UDT cell's literal text
        raise RowRejected(
            f"column {column.name} ({column.cql_type.cql()}): {raw!r} is not a "
            f"{column.cql_type.cql()} literal ({exc.msg} at character {exc.pos})"
        ) from None
    except ValueError as exc:
        raise RowRejected(f"column {column.name} ({column.cql_type.cql()}): {exc}") from None


def whole_number(name: str, raw: Any) -> int | None:
    """A writetime (microseconds) or TTL (seconds) field; null means none for that row."""
    if raw is None or (isinstance(raw, int) and not isinstance(raw, bool)):
        return raw
    if isinstance(raw, str) and raw.strip().lstrip("-").isdigit():
        return int(raw.strip())
    raise RowRejected(f"field {name}: {raw!r} is not a whole number")


_DECODING = re.compile(r"^Error decoding JSON value for [^:]*: ")


def _message(exc: Exception) -> str:
    """The reason without INSERT JSON's wording: values from CSV or Parquet were never JSON, and
    the reject already names the column."""
    return _DECODING.sub("", exc.message if isinstance(exc, CqlError) else str(exc))


_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}


def _already_fits(t: CqlType, raw: Any) -> bool:
    """Whether a typed input value is already the codec's value for native type `t` (a Parquet
    long for a bigint, any string for text, ...): then it needs no reading. Only exact types:
    anything else takes the general path and its rules."""
    if not isinstance(t, NativeType):
        return False
    kind, name = type(raw), t.name
    if kind is str:
        return name == "text" or (name == "ascii" and raw.isascii())
    if kind is int:
        bits = _INT_BITS.get(name)
        return bits is not None and -(1 << (bits - 1)) <= raw < 1 << (bits - 1)
    if kind is float:
        return name == "double"
    return (kind is bool and name == "boolean") or (kind is bytes and name == "blob")


_LITERAL_KINDS = {
    **dict.fromkeys(("tinyint", "smallint", "int", "bigint", "varint", "counter"), "integer"),
    **dict.fromkeys(("float", "double", "decimal"), "float"),
    **dict.fromkeys(("uuid", "timeuuid"), "uuid"),
    **dict.fromkeys(("timestamp", "date", "time", "inet"), "string"),
    "duration": "duration",
}
"""How a native type's text is read as a literal (what `from_json` ends in for a string)."""


def _text_value(t: NativeType, text: str) -> Any:
    """The value of a native-typed text field, the short way: `from_json` of a string ends in
    `literal_value` of the kind below after four calls of type dispatch, which per field of a
    large CSV cost as much as the reading itself. None when the short way does not apply or the
    text is bad, so the general path decides (and words the reject)."""
    name = t.name
    kind = _LITERAL_KINDS.get(name)
    if kind is None:
        if name == "boolean":
            return _BOOLEANS.get(text.lower())
        if name == "blob" and text.startswith("0x"):
            kind = "hex"
        else:
            return None
    try:
        return literal_value(t, kind, text, "value")
    except (CqlError, ValueError):
        return None


_BOOLEANS = {"true": True, "false": False}


_ZERO_SUB_MILLIS = re.compile(r"(\.\d{3})0+(?=[^0-9]|$)")
"""Fraction digits past the millisecond that are all zeros (`12.248000Z`, as Python's isoformat
and many exporters write): the instant is exactly a timestamp's, so a load keeps it. CQL
literals refuse any fourth digit (ScyllaDB's rule, `cql.temporal`); a load's nonzero ones are
still refused with that reason, as they would change the instant."""


def fit_value(t: CqlType, raw: Any, receiver: str = "value", *, spark_form: bool = True) -> Any:
    if raw is None:
        return None
    if isinstance(raw, str) and isinstance(t, NativeType) and t.name == "timestamp":
        raw = _ZERO_SUB_MILLIS.sub(r"\1", raw, count=1)
    if not spark_form and _already_fits(t, raw):
        return raw
    if isinstance(raw, str) and isinstance(t, NativeType):
        value = _text_value(t, raw)
        if value is not None:
            return to_spark(t, value) if spark_form else value
    if isinstance(raw, str):
        # A native value's text is what from_json reads; anything structured is JSON text.
        parsed = raw if isinstance(t, NativeType) else json.loads(raw, parse_float=Decimal)
    else:
        parsed = _jsonish(t, raw)
    value = from_json(t, parsed, receiver)
    return to_spark(t, value) if spark_form else value


def _jsonish(t: CqlType, v: Any) -> Any:
    """A typed input value in the shape `from_json` reads for type `t`."""
    if v is None:
        return None
    if isinstance(v, str) and not (isinstance(t, NativeType) and t.name in _TEXTUAL):
        return json.loads(v, parse_float=Decimal) if not isinstance(t, NativeType) else v
    if isinstance(v, dt.datetime):
        aware = v if v.tzinfo else v.astimezone(dt.UTC)
        return (aware - EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, bytes | bytearray | memoryview):
        return "0x" + bytes(v).hex()
    if isinstance(v, float) and isinstance(t, NativeType) and t.name == "decimal":
        return Decimal(repr(v))
    is_duration = isinstance(t, NativeType) and t.name == "duration"
    if isinstance(v, Mapping) and (isinstance(t, TupleType) or is_duration):
        v = tuple(v.values())  # an Arrow struct arrives as a dict (a Spark Row is a tuple)
    if is_duration and isinstance(v, Sequence):
        months, days, nanos = v
        return (
            f"{months}mo{days}d{nanos}ns"
            if min(months, days, nanos) >= 0
            else f"-{-months}mo{-days}d{-nanos}ns"
        )
    if isinstance(t, UserType) and isinstance(v, Sequence) and not isinstance(v, str):
        fields = v.asDict() if hasattr(v, "asDict") else dict(zip(t.field_names, v))
        return {json.dumps(k): _jsonish(ft, fields.get(k)) for k, ft in zip(t.field_names, t.field_types)}
    if isinstance(t, UserType) and isinstance(v, Mapping):
        return {
            json.dumps(k) if k in t.field_names else k: _jsonish(_field_type(t, k), x) for k, x in v.items()
        }
    if isinstance(t, TupleType) and isinstance(v, Sequence):
        return [_jsonish(e, x) for e, x in zip(t.elements, v)]
    if isinstance(t, MapType):
        # a map keyed by a collection, tuple or UDT is an array of (key, value) structs in Spark
        # (`schema_map.has_complex_keys`), each arriving as a dict from Arrow
        pairs = v.items() if isinstance(v, Mapping) else (_pair(p) for p in v)
        return {_map_key(t.key, k): _jsonish(t.value, x) for k, x in pairs}
    element = getattr(t, "element", None)
    if element is not None and isinstance(v, Sequence):
        return [_jsonish(element, x) for x in v]
    return v


def _pair(entry: Any) -> Any:
    """A map entry: a (key, value) pair, or an Arrow struct {"key": ..., "value": ...}."""
    if isinstance(entry, Mapping) and set(entry) == {"key", "value"}:
        return entry["key"], entry["value"]
    return entry


def _field_type(t: UserType, name: str) -> CqlType:
    lowered = name.lower()
    for field, ft in zip(t.field_names, t.field_types):
        if field == lowered:
            return ft
    return t  # unknown field: from_json rejects it with the field's name


def _map_key(t: CqlType, key: Any) -> str:
    """`from_json` reads map keys as strings: text keys as they are, others as JSON text."""
    value = _jsonish(t, key)
    if isinstance(value, str) and isinstance(t, NativeType) and t.name in _TEXTUAL:
        return value
    return json.dumps(value, default=str)
