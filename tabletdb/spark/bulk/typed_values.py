"""Fast paths for typed input (Parquet columns, as Spark hands them over in Arrow).

A typed value that already is the codec's value for the column (`coerce._already_fits`: a long
for a bigint, a double for a double, a boolean, bytes for a blob) is serialized columnwise, and
so are the conversions `coerce._jsonish` does for Spark's types (a timestamp to milliseconds,
floored; a date to days). A string column feeding a non-text type is read as text
(`text_values`), as the row-at-a-time rules read it. Anything else is left to those rules.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from tabletdb.spark.bulk.serial import SIGNED, big_endian, booleans, days
from tabletdb.spark.bulk.text_values import Fast, all_pending, from_text

_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": None}


def _integers(name: str, values: pa.Array) -> Fast:
    target = SIGNED[name]
    if values.type.bit_width <= target.bit_width:
        return Fast(big_endian(values.cast(target)), [])
    low, high = -(1 << (target.bit_width - 1)), 1 << (target.bit_width - 1)
    fits = pc.and_(pc.greater_equal(values, low), pc.less(values, high)).fill_null(False)
    outside = pc.and_(values.is_valid(), pc.invert(fits))
    pending = pc.indices_nonzero(outside).to_pylist() if pc.any(outside).as_py() else []
    inside = pc.if_else(fits, values, pa.scalar(None, values.type))
    return Fast(big_endian(inside.cast(target)), pending)


def _millis(values: pa.Array) -> Fast | None:
    """Timestamps as milliseconds since the epoch, floored (sub-millisecond digits dropped
    towards the past, as `(t - epoch) // 1 ms` does), in Arrow compute: Arrow's integer division
    truncates towards zero, so a negative quotient with a remainder is one less."""
    factor = _MICROS.get(values.type.unit)
    if factor is None:
        return None
    raw = values.cast(pa.int64())
    try:
        if factor >= 1000:
            millis = pc.multiply_checked(raw, factor // 1000)
        else:
            quotient = pc.divide(raw, 1000)
            below = pc.less(raw, pc.multiply(quotient, 1000))
            millis = pc.subtract(quotient, below.cast(pa.int64()))
    except pa.ArrowInvalid:  # beyond int64 milliseconds: the row-at-a-time rules word it
        return None
    return Fast(big_endian(millis), [])


def from_typed(type_name: str, values: pa.Array) -> Fast:
    """The fast path for a typed array feeding native type `type_name` (all rows pending when
    there is none)."""
    kind = values.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        fast = from_text(type_name, values)
        return fast if fast is not None else all_pending(values)
    if pa.types.is_integer(kind) and type_name in SIGNED:
        if pa.types.is_unsigned_integer(kind):
            return all_pending(values)
        return _integers(type_name, values)
    found: Fast | None = None
    if pa.types.is_float64(kind) and type_name == "double":
        found = Fast(big_endian(values), [])
    elif pa.types.is_boolean(kind) and type_name == "boolean":
        found = Fast(booleans(values), [])
    elif (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)) and type_name == "blob":
        found = Fast(values.to_pylist(), [])
    elif pa.types.is_timestamp(kind) and type_name == "timestamp":
        found = _millis(values)
    elif pa.types.is_date32(kind) and type_name == "date":
        found = Fast(days(values), [])
    return found if found is not None else all_pending(values)
