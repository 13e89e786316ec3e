"""CQL ordering of serialized values: compare(t, a, b) -> negative, zero or positive.

This is the order clustering columns sort by, `ORDER BY` uses and sets/maps keep their elements
in. It follows Cassandra's comparators:

- an empty value (zero bytes) sorts before every other value of any type;
- integers, counter, timestamp, time: signed; date: its unsigned wire form (= signed days);
  varint and decimal numerically (so decimal 1.0 == 1.00);
- float/double as Java's `Float.compare`: -0.0 < 0.0, NaN above +Infinity, all NaNs equal;
- text, ascii, blob, duration, custom: unsigned bytewise; boolean: false < true;
- uuid: version first; two version-1 uuids by timestamp then unsigned low 8 bytes, other versions
  by unsigned bytes. timeuuid: timestamp, then the low 8 bytes as *signed* bytes (Cassandra's two
  types really do differ there);
- inet: unsigned bytewise, as Cassandra and Scylla do (so an IPv4 address is not always before
  an IPv6 one: ::1 < 10.0.0.1);
- list, set, vector: element by element, then the shorter first; map: key, value, key, ...;
- tuple, UDT: field by field with null before any value; missing trailing fields equal nulls.
"""

from __future__ import annotations

import math
import struct
from decimal import Decimal

from tabletdb.cql import wire
from tabletdb.cql.errors import InvalidRequest
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

_SIGNED = frozenset({"tinyint", "smallint", "int", "bigint", "counter", "timestamp", "time"})


def _sign(n: int | float | Decimal) -> int:
    return (n > 0) - (n < 0)


def compare(t: CqlType, a: bytes, b: bytes) -> int:
    """Three-way comparison of two serialized non-null values of type `t`."""
    if not a or not b:
        return (len(a) > 0) - (len(b) > 0)
    if isinstance(t, NativeType):
        return _compare_native(t.name, a, b)
    if isinstance(t, ListType | SetType):
        return _compare_sequences([t.element], wire.split_collection(a, t, 1), wire.split_collection(b, t, 1))
    if isinstance(t, MapType):
        return _compare_sequences(
            [t.key, t.value], wire.split_collection(a, t, 2), wire.split_collection(b, t, 2)
        )
    if isinstance(t, VectorType):
        return _compare_sequences([t.element], wire.split_vector(t, a), wire.split_vector(t, b))
    if isinstance(t, TupleType | UserType):
        types = t.elements if isinstance(t, TupleType) else t.field_types
        return compare_fields(types, wire.split_fields(a, t, len(types)), wire.split_fields(b, t, len(types)))
    return _sign(_cmp_bytes(a, b))


def _cmp_bytes(a: bytes, b: bytes) -> int:
    return (a > b) - (a < b)


def _compare_sequences(types: list[CqlType], xs: list[bytes], ys: list[bytes]) -> int:
    """Element-wise over `types` repeated (one type for lists, key/value for maps), then length."""
    for i, (x, y) in enumerate(zip(xs, ys)):
        c = compare(types[i % len(types)], x, y)
        if c:
            return c
    return _sign(len(xs) - len(ys))


def compare_fields(types: tuple[CqlType, ...], xs: list[bytes | None], ys: list[bytes | None]) -> int:
    """Tuple/UDT order: null first; absent trailing fields count as nulls."""
    width = max(len(xs), len(ys))
    xs = xs + [None] * (width - len(xs))
    ys = ys + [None] * (width - len(ys))
    for ft, x, y in zip(types, xs, ys):
        if x is None or y is None:
            if x is None and y is None:
                continue
            return -1 if x is None else 1
        c = compare(ft, x, y)
        if c:
            return c
    return 0


def _compare_native(name: str, a: bytes, b: bytes) -> int:
    if name in _SIGNED:
        return _sign(int.from_bytes(a, "big", signed=True) - int.from_bytes(b, "big", signed=True))
    if name == "varint":
        return _sign(int.from_bytes(a, "big", signed=True) - int.from_bytes(b, "big", signed=True))
    if name == "decimal":
        x, y = decode_decimal(a), decode_decimal(b)
        return (x > y) - (x < y)  # exact; subtraction would round to the context's 28 digits
    if name in ("float", "double"):
        return _compare_floats(float_key(name, a), float_key(name, b))
    if name == "boolean":
        return (a != b"\x00") - (b != b"\x00")
    if name == "uuid":
        return _compare_uuid(a, b)
    if name == "timeuuid":
        return _compare_timeuuid(a, b)
    return _cmp_bytes(a, b)


def exact_decimal(unscaled: int, scale: int) -> Decimal:
    """``unscaled x 10^-scale`` with every digit kept: Decimal arithmetic (``scaleb``, ``*``) rounds
    to the context's 28 digits, and a CQL decimal has no precision limit."""
    sign, digits, _ = Decimal(unscaled).as_tuple()  # not str(): Python refuses it past 4300 digits
    return Decimal((sign, digits, -scale))


def decode_decimal(data: bytes) -> Decimal:
    """The exact value: built from its digits, never through arithmetic in the default decimal
    context, which rounds to 28 digits, flushes exponents below -999999 to zero and overflows
    above 999999 (distinct keys would collide, large ones fail)."""
    if len(data) < 5:
        raise InvalidRequest(f"Invalid value for type decimal: expected at least 5 bytes, got {len(data)}")
    scale = struct.unpack(">i", data[:4])[0]
    unscaled = int.from_bytes(data[4:], "big", signed=True)
    return exact_decimal(unscaled, scale)


def float_key(name: str, data: bytes) -> float:
    size = 4 if name == "float" else 8
    if len(data) != size:
        raise InvalidRequest(f"Invalid value for type {name}: expected {size} bytes, got {len(data)}")
    return float(struct.unpack(">f" if size == 4 else ">d", data)[0])


def _compare_floats(x: float, y: float) -> int:
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) - math.isnan(y)
    if x == y:
        return _sign(math.copysign(1.0, x) - math.copysign(1.0, y))
    return -1 if x < y else 1


def uuid_timestamp(data: bytes) -> int:
    """The 60-bit timestamp of a version-1 uuid, from its time_hi, time_mid and time_low fields."""
    return (
        (int.from_bytes(data[6:8], "big") & 0x0FFF) << 48
        | int.from_bytes(data[4:6], "big") << 32
        | int.from_bytes(data[0:4], "big")
    )


def signed_low_bytes(data: bytes) -> bytes:
    """The low 8 bytes with each byte's sign flipped, so unsigned comparison = signed-byte order."""
    return bytes(x ^ 0x80 for x in data[8:16])


def _check_uuid(name: str, data: bytes) -> None:
    if len(data) != 16:
        raise InvalidRequest(f"Invalid value for type {name}: expected 16 bytes, got {len(data)}")


def _compare_timeuuid(a: bytes, b: bytes) -> int:
    _check_uuid("timeuuid", a)
    _check_uuid("timeuuid", b)
    return _sign(uuid_timestamp(a) - uuid_timestamp(b)) or _cmp_bytes(
        signed_low_bytes(a), signed_low_bytes(b)
    )


def _compare_uuid(a: bytes, b: bytes) -> int:
    _check_uuid("uuid", a)
    _check_uuid("uuid", b)
    va, vb = a[6] >> 4, b[6] >> 4
    if va != vb:
        return _sign(va - vb)
    if va == 1:
        return _sign(uuid_timestamp(a) - uuid_timestamp(b)) or _cmp_bytes(a[8:], b[8:])
    return _cmp_bytes(a, b)
