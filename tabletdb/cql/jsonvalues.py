"""CQL values <-> JSON, for SELECT JSON / toJson() and INSERT JSON / fromJson().

Follows Cassandra's JSON mapping: numbers (integers, varint, decimal, finite floats) as JSON
numbers, NaN and infinities as null (JSON has no such numbers); text, ascii, uuid, timeuuid,
inet, duration as strings; blobs as `"0x..."`; timestamps as `"yyyy-mm-dd hh:mm:ss.fffZ"` (UTC),
dates as `"yyyy-mm-dd"`, times as `"hh:mm:ss.nnnnnnnnn"`; lists, sets, vectors and tuples as
arrays; UDTs as objects keyed by field name; maps as objects whose keys are strings — a text key
as itself, any other key as its JSON text (`{"1": "a"}` for map<int, text>).

On input, `from_json` takes the already-parsed JSON (parse with `parse_float=Decimal` to keep
decimals exact) and is lenient the way Cassandra is: numbers may also come as strings, timestamps
as integer milliseconds, and map keys are JSON-parsed when the key type is not textual.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from tabletdb.cql.codec import deserialize, serialize
from tabletdb.cql.duration import Duration, format_duration
from tabletdb.cql.errors import CqlError, InvalidRequest
from tabletdb.cql.format import format_float
from tabletdb.cql.literals import literal_value
from tabletdb.cql.numbers import int_text, parse_int
from tabletdb.cql.temporal import format_date, format_time, format_timestamp
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

_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint", "counter", "varint"})
_TEXTUAL = frozenset({"text", "ascii"})


def to_json(t: CqlType, value: Any) -> str:
    """JSON text of `value` of type `t` (None -> `null`), spaced as Cassandra prints it."""
    if value is None:
        return "null"
    if isinstance(t, NativeType):
        return _native_to_json(t.name, value)
    if isinstance(t, ListType | SetType | VectorType):
        return "[" + ", ".join(to_json(t.element, v) for v in value) + "]"
    if isinstance(t, TupleType):
        return "[" + ", ".join(to_json(et, v) for et, v in zip(t.elements, value)) + "]"
    if isinstance(t, MapType):
        pairs = value.items() if isinstance(value, Mapping) else value
        return "{" + ", ".join(f"{_map_key_json(t.key, k)}: {to_json(t.value, v)}" for k, v in pairs) + "}"
    if isinstance(t, UserType):
        fields = zip(t.field_names, t.field_types, value)
        return (
            "{"
            + ", ".join(f"{json.dumps(_json_field_name(n))}: {to_json(ft, v)}" for n, ft, v in fields)
            + "}"
        )
    if isinstance(t, CustomType):
        return json.dumps("0x" + bytes(value).hex())
    raise ValueError(f"cannot render a value of unresolved type {t.cql()} as JSON")


def _json_field_name(name: str) -> str:
    """Case-sensitive names are double-quoted inside the JSON key, so from_json can tell them apart."""
    return name if name == name.lower() else f'"{name}"'


def _map_key_json(t: CqlType, key: Any) -> str:
    text = to_json(t, key)
    return text if text.startswith('"') else json.dumps(text)


def _native_to_json(name: str, value: Any) -> str:
    if name in _INTEGERS:
        return int_text(int(value))
    if name in ("float", "double"):
        v = float(value)
        return "null" if math.isnan(v) or math.isinf(v) else _json_float(v, name == "float")
    if name == "decimal":
        return str(Decimal(value))  # the same notation as Java's BigDecimal.toString
    if name == "boolean":
        return "true" if value else "false"
    if name == "blob":
        return json.dumps("0x" + bytes(value).hex())
    if name == "timestamp":
        return json.dumps(format_timestamp(value))
    if name == "date":
        return json.dumps(format_date(value))
    if name == "time":
        return json.dumps(format_time(value))
    if name == "duration":
        assert isinstance(value, Duration)
        return json.dumps(format_duration(value))
    return json.dumps(str(value), ensure_ascii=False)  # text, ascii, uuid, timeuuid, inet


def _json_float(v: float, single: bool) -> str:
    """Java's Float/Double.toString layout (`1.0`, `0.001`, `1.0E7`, `1.5E-4`) over the shortest digits."""
    digits_text = format_float(abs(v), single)
    sign = "-" if math.copysign(1.0, v) < 0 else ""
    d = Decimal(digits_text)
    if d == 0:
        return sign + "0.0"
    if Decimal("0.001") <= d < Decimal(10_000_000):
        plain = format(d, "f")
        return sign + (plain if "." in plain else plain + ".0")
    _, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    fraction = mantissa[1:] or "0"
    return f"{sign}{mantissa[0]}.{fraction}E{power}"


def from_json(t: CqlType, parsed: Any, receiver: str = "value") -> Any:
    """A value of type `t` (codec conventions) from parsed JSON; InvalidRequest names `receiver`."""
    try:
        value = _from_json(t, parsed)
        if value is None or isinstance(t, NativeType):
            return value
        return deserialize(t, serialize(t, value))  # canonical order for sets and maps
    except CqlError as e:
        raise InvalidRequest(f"Error decoding JSON value for {receiver}: {e.message}") from None


def _from_json(t: CqlType, parsed: Any) -> Any:
    if parsed is None:
        return None
    if isinstance(t, NativeType):
        return _native_from_json(t, parsed)
    if isinstance(t, ListType | SetType | VectorType | TupleType):
        if not isinstance(parsed, list):
            raise InvalidRequest(f"Expected a list for {t.cql()}, got {_kind(parsed)}")
        if isinstance(t, TupleType):
            if len(parsed) > len(t.elements):
                raise InvalidRequest(f"Tuple contains extra items: expected {len(t.elements)} for {t.cql()}")
            return tuple(_from_json(et, v) for et, v in zip(t.elements, parsed))
        return tuple(_from_json(t.element, v) for v in parsed)
    if isinstance(t, MapType):
        if not isinstance(parsed, dict):
            raise InvalidRequest(f"Expected a map for {t.cql()}, got {_kind(parsed)}")
        return tuple((_map_key_from_json(t.key, k), _from_json(t.value, v)) for k, v in parsed.items())
    if isinstance(t, UserType):
        return _udt_from_json(t, parsed)
    if isinstance(t, CustomType) and isinstance(parsed, str):
        return literal_value(NativeType("blob"), "hex", parsed, "value")
    raise InvalidRequest(f"Cannot decode JSON for type {t.cql()}")


def _map_key_from_json(t: CqlType, key: str) -> Any:
    if isinstance(t, NativeType) and t.name in _TEXTUAL:
        return key
    try:
        return _from_json(t, json.loads(key, parse_float=Decimal, parse_int=parse_int))
    except (ValueError, RecursionError):  # not JSON (or nested too deeply for it): as a string
        return _from_json(t, key)


def _udt_from_json(t: UserType, parsed: Any) -> tuple[Any, ...]:
    if not isinstance(parsed, dict):
        raise InvalidRequest(f"Expected a map for user type {t.cql()}, got {_kind(parsed)}")
    values: dict[str, Any] = {}
    for key, v in parsed.items():
        # As in CQL, an unquoted field name is case-insensitive; a double-quoted one is exact.
        name = key[1:-1] if len(key) > 1 and key.startswith('"') and key.endswith('"') else key.lower()
        if name not in t.field_names:
            raise InvalidRequest(f"Unknown field '{name}' in value of user defined type {t.name}")
        values[name] = v
    return tuple(_from_json(ft, values.get(n)) for n, ft in zip(t.field_names, t.field_types))


def _kind(parsed: Any) -> str:
    return type(parsed).__name__


def _native_from_json(t: NativeType, parsed: Any) -> Any:
    name = t.name
    if isinstance(parsed, bool):
        if name != "boolean":
            raise InvalidRequest(f"Expected a {name} value, got a boolean")
        return parsed
    if name in _TEXTUAL:
        if not isinstance(parsed, str):
            raise InvalidRequest(f"Expected a string for {name}, got {_kind(parsed)}")
        return literal_value(t, "string", parsed, "value")
    if name == "boolean":
        if not isinstance(parsed, str) or parsed.lower() not in ("true", "false"):
            raise InvalidRequest(f"Unable to make boolean from {parsed!r}")
        return parsed.lower() == "true"
    if isinstance(parsed, int):
        if name in ("float", "double", "decimal", "timestamp", "time") or name in _INTEGERS:
            return literal_value(t, "integer", int_text(parsed), "value")
        raise InvalidRequest(f"Expected a string for {name}, got an integer")
    if isinstance(parsed, float | Decimal):
        if name in ("float", "double", "decimal"):
            return literal_value(
                t, "float", repr(parsed) if isinstance(parsed, float) else str(parsed), "value"
            )
        raise InvalidRequest(f"Expected a {name} value, got a floating-point number {parsed}")
    if not isinstance(parsed, str):
        raise InvalidRequest(f"Expected a {name} value, got {_kind(parsed)}")
    return _native_from_string(t, parsed)


def _native_from_string(t: NativeType, text: str) -> Any:
    name = t.name
    if name in _INTEGERS:
        return literal_value(t, "integer", text, "value")
    if name in ("float", "double", "decimal"):
        return literal_value(t, "float", text, "value")
    if name == "blob":
        if not text.startswith("0x"):
            raise InvalidRequest(f"String representation of blob is missing 0x prefix: {text}")
        return literal_value(t, "hex", text, "value")
    if name in ("uuid", "timeuuid"):
        return literal_value(t, "uuid", text, "value")
    if name == "duration":
        return literal_value(t, "duration", text, "value")
    return literal_value(t, "string", text, "value")  # inet, date, time, timestamp
