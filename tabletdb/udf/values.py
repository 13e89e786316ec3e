"""CQL values <-> the values a Lua function sees, as ScyllaDB maps them (pure: no Lua here).

The Lua side is described with plain Python data, which the runtime shell (`udf.lua`) turns into
Lua values and back:

- a Lua string is `bytes` (Lua strings are byte strings: blobs travel as they are, text as UTF-8);
- a Lua integer is `int` (64-bit), a Lua float is `float`, a boolean is `bool`, nil is `None`;
- a Lua table is a `LuaTable` (its key/value pairs, in any order);
- ScyllaDB's decimal userdata (how it passes varint and decimal: exact, with `+` and `-`) is a
  `LuaDecimal`.

Into Lua (`to_lua`): integers as integers, float/double as numbers, varint/decimal as decimals,
text/ascii/blob/uuid/timeuuid/inet as strings, timestamp as milliseconds since the epoch, date as
ScyllaDB's unsigned day number (days since the epoch + 2^31), time as nanoseconds since midnight,
duration as `{months=, days=, nanoseconds=}`, list/tuple/vector as sequences `{v1, v2, ...}`, set as
`{v1=true, ...}`, map as `{k1=v1, ...}`, a UDT as `{field=value, ...}`.

Back (`from_lua`) ScyllaDB is lenient where a number can be read as the type (a float with an
integer value is an integer, a numeric string is a number, a number is text) and refuses the rest
with its messages; dates and timestamps also take a string or a date table `{year=, month=,
day=, hour=, min=, sec=}` (a timestamp's hour defaults to 12). Range checks and the order of set
and map elements are the codec's: the shell serializes what comes back.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Union

from tabletdb.cql.duration import Duration, parse_duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.temporal import parse_date, parse_time, parse_timestamp
from tabletdb.cql.types import (
    CqlType,
    ListType,
    MapType,
    NativeType,
    SetType,
    TupleType,
    UserType,
    VectorType,
)

DATE_BIAS = 1 << 31
"""ScyllaDB hands a date to Lua as its unsigned wire number: days since the epoch + 2^31."""

_INT64 = (-(1 << 63), (1 << 63) - 1)
_FIXED_INTS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64}


@dataclass(frozen=True)
class LuaDecimal:
    """ScyllaDB's exact number in Lua (varint and decimal arguments)."""

    value: Decimal


@dataclass(frozen=True)
class LuaTable:
    """A Lua table as its key/value pairs (order carries no meaning)."""

    pairs: tuple[tuple[LuaValue, LuaValue], ...]

    def get(self, key: LuaValue) -> LuaValue:
        for k, v in self.pairs:
            if k == key and type(k) is type(key):
                return v
        return None


LuaValue = Union[None, bool, int, float, bytes, LuaDecimal, LuaTable]  # noqa: UP007 (recursive alias)


def _seq(values: list[LuaValue]) -> LuaTable:
    return LuaTable(tuple((i + 1, v) for i, v in enumerate(values)))


def to_lua(t: CqlType, value: Any) -> LuaValue:
    """The Lua value of a CQL value (codec conventions) of type `t`; None is nil."""
    if value is None:
        return None
    if isinstance(t, NativeType):
        return _native_to_lua(t.name, value)
    if isinstance(t, ListType | VectorType):
        return _seq([to_lua(t.element, v) for v in value])
    if isinstance(t, TupleType):
        return _seq([to_lua(et, v) for et, v in zip(t.elements, value)])
    if isinstance(t, SetType):
        return LuaTable(tuple((to_lua(t.element, v), True) for v in value))
    if isinstance(t, MapType):
        items = value.items() if isinstance(value, dict) else value
        return LuaTable(tuple((to_lua(t.key, k), to_lua(t.value, v)) for k, v in items))
    if isinstance(t, UserType):
        return LuaTable(
            tuple(
                (name.encode(), to_lua(ft, v))
                for name, ft, v in zip(t.field_names, t.field_types, value)
                if v is not None
            )
        )
    raise InvalidRequest(f"Values of type {t.cql()} cannot be passed to a Lua function")


def _native_to_lua(name: str, value: Any) -> LuaValue:
    if name in _FIXED_INTS or name in ("timestamp", "time"):
        return int(value)
    if name == "date":
        return int(value) + DATE_BIAS
    if name in ("varint", "decimal"):
        return LuaDecimal(Decimal(value))
    if name in ("float", "double"):
        return float(value)
    if name == "boolean":
        return bool(value)
    if name == "blob":
        return bytes(value)
    if name == "duration":
        return LuaTable(
            ((b"months", value.months), (b"days", value.days), (b"nanoseconds", value.nanoseconds))
        )
    return str(value).encode()  # text, ascii, uuid, timeuuid, inet


# ---------------------------------------------------------------------------------- from Lua


def _number(v: LuaValue) -> int | float | Decimal | bytes | LuaTable:
    """ScyllaDB's reading of a Lua value as a number: an integral float or decimal is an
    integer, a numeric string its number; other strings and tables come back as they are."""
    if isinstance(v, bool) or v is None:
        raise InvalidRequest("unexpected value")
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v.is_integer() else v
    if isinstance(v, LuaDecimal):
        d = v.value
        return int(d) if d.is_finite() and d == d.to_integral_value() else d
    if isinstance(v, bytes):
        try:
            d = Decimal(v.decode("ascii").strip())
        except (InvalidOperation, UnicodeDecodeError, ValueError):
            return v
        if d.is_nan():
            return v
        return int(d) if d.is_finite() and d == d.to_integral_value() else (d if d.is_finite() else float(d))
    return v


def _integer(v: LuaValue) -> int:
    n = _number(v)
    if isinstance(n, bytes | LuaTable):
        raise InvalidRequest("value is not a number")
    if not isinstance(n, int):
        raise InvalidRequest("value is not an integer")
    return n


def _string(v: LuaValue) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, LuaTable | bool) or v is None:
        raise InvalidRequest("unexpected value")
    if isinstance(v, LuaDecimal):
        return str(v.value).encode()
    if isinstance(v, float) and v.is_integer() and math.isfinite(v):
        return str(int(v)).encode()
    return str(v).encode()


def from_lua(t: CqlType, v: LuaValue) -> Any:
    """The CQL value (codec conventions) a Lua value stands for as type `t`; nil is null.
    Raises InvalidRequest with ScyllaDB's reason when it cannot be one."""
    if v is None:
        return None
    if isinstance(t, NativeType):
        return _native_from_lua(t.name, v)
    if isinstance(t, ListType):
        return tuple(from_lua(t.element, e) for e in _sequence(v))
    if isinstance(t, SetType):
        table = _table(v)
        if any(value is False or value is None for _, value in table.pairs):
            raise InvalidRequest("sets are represented with tables with true values")
        return tuple(from_lua(t.element, k) for k, _ in table.pairs)
    if isinstance(t, MapType):
        return tuple((from_lua(t.key, k), from_lua(t.value, e)) for k, e in _table(v).pairs)
    if isinstance(t, TupleType | VectorType):
        types = t.elements if isinstance(t, TupleType) else (t.element,) * t.dimension
        return tuple(from_lua(et, e) for et, e in zip(types, _fixed_sequence(v, len(types))))
    if isinstance(t, UserType):
        return _udt(t, _table(v))
    raise InvalidRequest(f"Values of type {t.cql()} cannot be returned by a Lua function")


def _table(v: LuaValue) -> LuaTable:
    if not isinstance(v, LuaTable):
        raise InvalidRequest("value is not a table")
    return v


def _sequence(v: LuaValue) -> list[LuaValue]:
    pairs = sorted(((_integer(k), e) for k, e in _table(v).pairs), key=lambda p: p[0])
    if [k for k, _ in pairs] != list(range(1, len(pairs) + 1)):
        raise InvalidRequest("table is not a sequence")
    return [e for _, e in pairs]


def _fixed_sequence(v: LuaValue, size: int) -> list[LuaValue]:
    found: dict[int, LuaValue] = {}
    for k, e in _table(v).pairs:
        i = _integer(k)
        if not 1 <= i <= size:
            raise InvalidRequest(f"key {i} is not valid for a sequence of size {size}")
        found[i] = e
    for i in range(1, size + 1):
        if i not in found:
            raise InvalidRequest(f"key {i} missing in sequence of size {size}")
    return [found[i] for i in range(1, size + 1)]


def _udt(t: UserType, table: LuaTable) -> tuple[Any, ...]:
    values: dict[str, Any] = {}
    for k, e in table.pairs:
        name = _string(k).decode("utf-8", "replace")
        if name not in t.field_names:
            raise InvalidRequest(f"invalid UDT field '{name}'")
        values[name] = from_lua(t.field_types[t.field_names.index(name)], e)
    for name in t.field_names:
        if name not in values:
            raise InvalidRequest(f"key {name} missing in udt {t.name}")
    return tuple(values[name] for name in t.field_names)


def _native_from_lua(name: str, v: LuaValue) -> Any:
    if name == "boolean":
        return v is not False
    if name in _FIXED_INTS or name == "varint":
        n = _integer(v)
        bits = _FIXED_INTS.get(name)
        if bits is not None and not -(1 << (bits - 1)) <= n < 1 << (bits - 1):
            raise InvalidRequest(f"value {n} is out of range for {name}")
        return n
    if name == "decimal":
        return _decimal(v)
    if name in ("float", "double"):
        if isinstance(v, float):
            return v  # as it came: -0.0 keeps its sign
        number = _number(v)
        if isinstance(number, bytes | LuaTable):
            raise InvalidRequest("value is not a number")
        return float(number)
    if name in ("text", "ascii"):
        return _text(name, _string(v))
    if name == "blob":
        return _string(v)
    if name in ("uuid", "timeuuid"):
        return _parse(name, _string(v), uuid.UUID)
    if name == "inet":
        return _parse(name, _string(v), ipaddress.ip_address)
    if name == "timestamp":
        return _timestamp(v)
    if name == "date":
        return _date(v)
    if name == "time":
        return _time(v)
    if name == "duration":
        return _duration(v)
    raise InvalidRequest(f"Values of type {name} cannot be returned by a Lua function")


def _decimal(v: LuaValue) -> Decimal:
    if isinstance(v, LuaDecimal):
        return v.value  # as it came (ScyllaDB drops the scale of an integral one: 1.0 -> 1)
    n = _number(v)
    if isinstance(n, bytes | LuaTable):
        raise InvalidRequest("value is not a number")
    if isinstance(n, float):
        raise InvalidRequest("value is not a decimal")
    return n if isinstance(n, Decimal) else Decimal(n)


def _text(name: str, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"value is not valid utf8, invalid character at byte offset {exc.start}"
        ) from None
    if name == "ascii" and not text.isascii():
        raise InvalidRequest("value is not valid ascii")
    return text


def _parse(name: str, raw: bytes, parse: Any) -> Any:
    try:
        return parse(raw.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequest(f"Unable to make {name} from '{raw.decode('utf-8', 'replace')}'") from None


def _timestamp(v: LuaValue) -> int:
    if isinstance(v, bytes):
        return parse_timestamp(v.decode("utf-8", "replace"))
    if isinstance(v, LuaTable):
        year, month, day, hour, minute, second = _date_table(v)
        try:
            when = datetime.datetime(year, month, day, 12 if hour is None else hour, minute or 0, second or 0)
        except (ValueError, OverflowError) as exc:
            raise InvalidRequest(f"invalid date table: {exc}") from None
        epoch = datetime.datetime(1970, 1, 1)
        return (when - epoch) // datetime.timedelta(milliseconds=1)
    n = _number(v)
    if not isinstance(n, int):
        raise InvalidRequest("timestamp must be a string, integer or date table")
    if not _INT64[0] <= n <= _INT64[1]:
        raise InvalidRequest("timestamp value must fit in signed 64 bits")
    return n


def _date(v: LuaValue) -> int:
    if isinstance(v, bytes):
        return parse_date(v.decode("utf-8", "replace"))
    if isinstance(v, LuaTable):
        year, month, day, hour, minute, second = _date_table(v)
        if hour is not None or minute is not None or second is not None:
            raise InvalidRequest("date type has no hour, minute or second")
        try:
            return (datetime.date(year, month, day) - datetime.date(1970, 1, 1)).days
        except (ValueError, OverflowError) as exc:
            raise InvalidRequest(f"invalid date table: {exc}") from None
    n = _number(v)
    if not isinstance(n, int):
        raise InvalidRequest("date must be a string, integer or date table")
    if not 0 <= n < 1 << 32:
        raise InvalidRequest("date value must fit in 32 bits")
    return n - DATE_BIAS


_DATE_FIELDS = (b"year", b"month", b"day", b"hour", b"min", b"sec")


def _date_table(v: LuaTable) -> tuple[int, int, int, int | None, int | None, int | None]:
    found: dict[bytes, int] = {}
    for k, e in v.pairs:
        key = _string(k)
        if key not in _DATE_FIELDS:
            raise InvalidRequest(f"invalid date table field: '{key.decode('utf-8', 'replace')}'")
        n = _integer(e)
        if not -(1 << 31) <= n < 1 << 31:
            raise InvalidRequest(f"{key.decode()} is too large: '{n}'")
        found[key] = n
    if not all(f in found for f in _DATE_FIELDS[:3]):
        raise InvalidRequest("date table must have year, month and day")
    return (
        found[b"year"],
        found[b"month"],
        found[b"day"],
        found.get(b"hour"),
        found.get(b"min"),
        found.get(b"sec"),
    )


def _time(v: LuaValue) -> int:
    if isinstance(v, bytes):
        return parse_time(v.decode("utf-8", "replace"))
    n = _number(v)
    if not isinstance(n, int):
        raise InvalidRequest("time must be a string or an integer")
    return n


def _duration(v: LuaValue) -> Duration:
    if isinstance(v, bytes):
        return parse_duration(v.decode("utf-8", "replace"))
    if not isinstance(v, LuaTable):
        raise InvalidRequest("a duration must be of the form { months = v1, days = v2, nanoseconds = v3 }")
    parts = {"months": 0, "days": 0, "nanoseconds": 0}
    for k, e in v.pairs:
        key = _string(k).decode("utf-8", "replace")
        if key not in parts:
            raise InvalidRequest(f"invalid duration field: '{key}'")
        parts[key] = _integer(e)
    try:
        return Duration(parts["months"], parts["days"], parts["nanoseconds"])
    except ValueError as exc:
        raise InvalidRequest(f"invalid duration: {exc}") from None


__all__ = ["DATE_BIAS", "LuaDecimal", "LuaTable", "LuaValue", "from_lua", "to_lua"]
