"""Values between CQL (driver or codec form) and Spark rows.

`to_spark` takes what scylla-driver returns (datetime, `cassandra.util.Date/Time/Duration`,
SortedSet, OrderedMap, named tuples) *and* what `tabletdb.cql.codec` returns (int milliseconds,
int days, int nanoseconds, tuples of pairs), so the reader and the bulk loader share it. It yields
the Python objects Spark expects for `schema_map.spark_type(t)`.

`to_driver` is the inverse for writes: a Spark row value -> something the driver's prepared
statement serializes to exactly that CQL value. Both raise `ValueConversionError` naming the type
and the value, which is what ends up in a failed task's message or a load's rejects.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from cassandra import util as cutil

from tabletdb.cql.types import (
    CqlType,
    CustomType,
    ListType,
    MapType,
    NativeType,
    SetType,
    TupleType,
    UserType,
    VectorType,
)
from tabletdb.spark.schema_map import has_complex_keys

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class ValueConversionError(ValueError):
    pass


def _fail(t: CqlType, value: Any, why: str) -> ValueConversionError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ValueConversionError(f"{t.cql()} value {shown}: {why}")


# --- CQL -> Spark ---------------------------------------------------------------------------------


def to_spark(t: CqlType, value: Any) -> Any:
    if value is None:
        return None
    try:
        if isinstance(t, NativeType):
            return _native_to_spark(t.name, value)
        if isinstance(t, ListType | SetType | VectorType):
            return [to_spark(t.element, v) for v in value]
        if isinstance(t, MapType):
            items = value.items() if isinstance(value, Mapping) or hasattr(value, "items") else value
            pairs = [(to_spark(t.key, k), to_spark(t.value, v)) for k, v in items]
            return pairs if has_complex_keys(t) else dict(pairs)
        if isinstance(t, TupleType):
            return tuple(to_spark(e, v) for e, v in zip(t.elements, _padded(value, len(t.elements))))
        if isinstance(t, UserType):
            return tuple(to_spark(ft, v) for ft, v in zip(t.field_types, _padded(value, len(t.field_types))))
        if isinstance(t, CustomType):
            return bytes(value)
    except ValueConversionError:
        raise
    except (TypeError, ValueError, OverflowError, AttributeError) as exc:
        raise _fail(t, value, str(exc)) from None
    raise _fail(t, value, "unsupported CQL type")


def _padded(value: Any, n: int) -> list[Any]:
    """Tuples and UDTs read from an older schema may miss trailing fields: they are null."""
    items = list(value)
    return items + [None] * (n - len(items))


def _native_to_spark(name: str, value: Any) -> Any:
    if name in ("varint", "decimal"):
        return str(value)
    if name in ("uuid", "timeuuid", "inet"):
        return str(value)
    if name == "timestamp":
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return EPOCH + dt.timedelta(milliseconds=int(value))
    if name == "date":
        days = value.days_from_epoch if isinstance(value, cutil.Date) else int(value)
        return EPOCH_DATE + dt.timedelta(days=days)
    if name == "time":
        return value.nanosecond_time if isinstance(value, cutil.Time) else int(value)
    if name == "duration":
        return (int(value.months), int(value.days), int(value.nanoseconds))
    if name == "blob":
        return bytes(value)
    return value


# --- Spark -> driver ------------------------------------------------------------------------------


def to_driver(t: CqlType, value: Any) -> Any:
    if value is None:
        return None
    try:
        if isinstance(t, NativeType):
            return _native_to_driver(t, value)
        if isinstance(t, ListType | SetType | VectorType):
            return tuple(to_driver(t.element, v) for v in value)
        if isinstance(t, MapType):
            items = value.items() if isinstance(value, Mapping) else value
            return DriverMap((to_driver(t.key, k), to_driver(t.value, v)) for k, v in items)
        if isinstance(t, TupleType):
            return tuple(to_driver(e, v) for e, v in zip(t.elements, _padded(value, len(t.elements))))
        if isinstance(t, UserType):
            return tuple(to_driver(ft, v) for ft, v in zip(t.field_types, _padded(value, len(t.field_types))))
        if isinstance(t, CustomType):
            return bytes(value)
    except ValueConversionError:
        raise
    except (TypeError, ValueError, OverflowError, AttributeError, InvalidOperation) as exc:
        raise _fail(t, value, str(exc) or type(exc).__name__) from None
    raise _fail(t, value, "unsupported CQL type")


class DriverMap(tuple[tuple[Any, Any], ...]):
    """A map value for the driver: it only needs `len()` and `items()`. Being a tuple keeps it
    hashable (a frozen map can be a set element or a map key) and keeps the pairs' order; the
    server orders map and set elements itself. Collections go to the driver as tuples for the
    same reason."""

    def items(self) -> tuple[tuple[Any, Any], ...]:
        return tuple(self)


_INT_RANGES = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64}


def _native_to_driver(t: NativeType, value: Any) -> Any:
    name = t.name
    if name in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail(t, value, "not an integer")
        bits = _INT_RANGES[name]
        if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            raise _fail(t, value, f"out of range for a {bits}-bit integer")
        return value
    if name == "varint":
        return int(str(value).strip())
    if name == "decimal":
        d = Decimal(str(value).strip())
        if not d.is_finite():
            raise _fail(t, value, "decimal must be finite")
        return d
    if name in ("uuid", "timeuuid"):
        u = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        if name == "timeuuid" and u.version != 1:
            raise _fail(t, value, "not a version-1 (time) UUID")
        return u
    if name == "inet":
        return str(ipaddress.ip_address(str(value).strip()))
    if name == "timestamp":
        return _timestamp_ms(t, value)
    if name == "date":
        if isinstance(value, dt.datetime):
            value = value.date()
        if not isinstance(value, dt.date):
            raise _fail(t, value, "not a date")
        return cutil.Date((value - EPOCH_DATE).days)
    if name == "time":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 86_400 * 10**9:
            raise _fail(t, value, "time must be nanoseconds since midnight in [0, 86400e9)")
        return cutil.Time(value)
    if name == "duration":
        months, days, nanos = (
            (value["months"], value["days"], value["nanoseconds"]) if isinstance(value, Mapping) else value
        )
        return cutil.Duration(int(months), int(days), int(nanos))
    if name in ("text", "ascii"):
        if not isinstance(value, str):
            raise _fail(t, value, "not a string")
        if name == "ascii" and not value.isascii():
            raise _fail(t, value, "non-ASCII characters in an ascii column")
        return value
    if name == "blob":
        return bytes(value)
    if name == "boolean":
        if not isinstance(value, bool):
            raise _fail(t, value, "not a boolean")
        return value
    if name in ("float", "double"):
        return float(value)
    raise _fail(t, value, "unsupported native type")


def _timestamp_ms(t: CqlType, value: Any) -> int:
    """Spark hands naive datetimes in the worker's local zone (`fromtimestamp`); `astimezone`
    reads a naive value in that same zone, so the instant survives; sub-milliseconds floor."""
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo else value.astimezone(dt.UTC)
        return (aware - EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return (value - EPOCH_DATE).days * 86_400_000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _fail(t, value, "not a timestamp")
