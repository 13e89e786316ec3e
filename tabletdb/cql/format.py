"""Python values (conventions of `codec`) -> CQL literal text, for DESCRIBE output and UDA initconds.

The text parses back, through the grammar and `literals`, to an equal value of the same type.
Numbers print in their shortest exact form without a trailing `.0` (Scylla prints `1`, not
`1.0`, for whole floating values), which `format_float` also provides for table options.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from tabletdb.cql.duration import Duration, format_duration
from tabletdb.cql.identifiers import quote_identifier, quote_string
from tabletdb.cql.literals import round_to_float32
from tabletdb.cql.numbers import int_text
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


def format_float(value: float, single: bool = False) -> str:
    """Shortest text that reads back as `value` (as a float32 if `single`), no trailing `.0`."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    if single:
        for digits in range(1, 10):
            candidate = f"{value:.{digits}g}"
            if round_to_float32(float(candidate)) == value:
                text = candidate
                break
    if "e" in text or "E" in text:
        mantissa, exponent = text.lower().split("e")
        mantissa = _strip_point_zero(mantissa)
        exp = int(exponent)
        return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    return _strip_point_zero(text)


def _strip_point_zero(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_value(t: CqlType, value: Any) -> str:
    """`value` of type `t` as a CQL literal; None prints as `null`."""
    if value is None:
        return "null"
    if isinstance(t, NativeType):
        return _format_native(t.name, value)
    if isinstance(t, ListType | VectorType):
        return "[" + ", ".join(format_value(t.element, v) for v in value) + "]"
    if isinstance(t, SetType):
        return "{" + ", ".join(format_value(t.element, v) for v in value) + "}"
    if isinstance(t, MapType):
        pairs = value.items() if isinstance(value, dict) else value
        return (
            "{" + ", ".join(f"{format_value(t.key, k)}: {format_value(t.value, v)}" for k, v in pairs) + "}"
        )
    if isinstance(t, TupleType):
        return "(" + ", ".join(format_value(et, v) for et, v in zip(t.elements, value)) + ")"
    if isinstance(t, UserType):
        fields = zip(t.field_names, t.field_types, value)
        return "{" + ", ".join(f"{quote_identifier(n)}: {format_value(ft, v)}" for n, ft, v in fields) + "}"
    if isinstance(t, CustomType):
        return "0x" + bytes(value).hex()
    raise ValueError(f"cannot format a value of unresolved type {t.cql()}")


def _format_native(name: str, value: Any) -> str:
    if name in ("text", "ascii", "inet"):
        return quote_string(str(value))
    if name == "boolean":
        return "true" if value else "false"
    if name in ("float", "double"):
        return format_float(float(value), single=name == "float")
    if name == "decimal":
        return _format_decimal(Decimal(value))
    if name == "blob":
        return "0x" + bytes(value).hex()
    if name == "timestamp":
        return quote_string(format_timestamp(value))
    if name == "date":
        return quote_string(format_date(value))
    if name == "time":
        return quote_string(format_time(value))
    if name == "duration":
        assert isinstance(value, Duration)
        return format_duration(value)
    if isinstance(value, int):
        return int_text(value)
    return str(value)  # uuid, timeuuid


def _format_decimal(d: Decimal) -> str:
    """Python's str(Decimal) follows the same rules as Java's BigDecimal.toString (plain or `1E+3`)."""
    return str(d)
