"""CQL values <-> protocol v4 bytes, for every type in `tabletdb.cql.types`.

Python value conventions (what `deserialize` returns and `serialize` accepts):

- tinyint, smallint, int, bigint, varint, counter: `int`
- float, double: `float` (an `int` is accepted on input); decimal: `decimal.Decimal` (or `int`)
- text, ascii: `str`; blob: `bytes` (bytearray/memoryview accepted); boolean: `bool`
- uuid, timeuuid: `uuid.UUID`; inet: `ipaddress.IPv4Address` / `IPv6Address` (a `str` is accepted)
- timestamp: `int` milliseconds since the epoch; date: `int` days since the epoch (signed; the wire
  form is unsigned with 2**31 = epoch); time: `int` nanoseconds since midnight
- duration: `tabletdb.cql.duration.Duration`
- list, vector: `tuple`; set: `tuple` sorted in CQL order without duplicates; map: `tuple` of
  `(key, value)` pairs sorted by key in CQL order (a `Mapping` is accepted); tuple: `tuple`;
  UDT: `tuple` of field values, one per field of the type (a `Mapping` by field name is accepted).
- Null is `None`. Every returned value is hashable, so frozen collections can sit in sets.

Empty values: CQL lets a client send a zero-length value for any native type (e.g. `blobAsInt(0x)`).
`deserialize` returns None for such a value of a type whose normal values are never empty (all
natives but text, ascii, blob), mirroring the drivers; `validate` accepts them.

Invalid input raises InvalidRequest naming the type. Custom types are opaque blobs.
"""

from __future__ import annotations

import functools
import ipaddress
import struct
import uuid
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from tabletdb.cql import wire
from tabletdb.cql.compare import compare, exact_decimal
from tabletdb.cql.duration import Duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.numbers import brief_int
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

DATE_EPOCH = 2**31
NANOS_PER_DAY = 86_400 * 10**9
_INT_SIZES = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8, "counter": 8, "timestamp": 8}
_STRINGLIKE = frozenset({"text", "ascii", "blob"})


def _bad(t: CqlType, why: str) -> InvalidRequest:
    return InvalidRequest(f"Invalid value for type {t.cql()}: {why}")


def _want(t: CqlType, value: Any, *kinds: type) -> None:
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _bad(t, f"expected {' or '.join(k.__name__ for k in kinds)}, got {type(value).__name__}")


# ---------------------------------------------------------------------------------------------
# natives


def _ser_fixed_int(t: NativeType, v: Any) -> bytes:
    _want(t, v, int)
    size = _INT_SIZES[t.name]
    try:
        return int(v).to_bytes(size, "big", signed=True)
    except OverflowError:
        raise _bad(t, f"{brief_int(v)} does not fit in {8 * size} bits") from None


def _de_fixed_int(t: NativeType, data: bytes) -> int:
    if len(data) != _INT_SIZES[t.name]:
        raise _bad(t, f"expected {_INT_SIZES[t.name]} bytes, got {len(data)}")
    return int.from_bytes(data, "big", signed=True)


def varint_bytes(n: int) -> bytes:
    """Minimal big-endian two's complement, as CQL varint and decimal's unscaled part use."""
    magnitude_bits = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(magnitude_bits // 8 + 1, "big", signed=True)


def _ser_varint(t: NativeType, v: Any) -> bytes:
    _want(t, v, int)
    return varint_bytes(int(v))


def _de_varint(t: NativeType, data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)


def _ser_decimal(t: NativeType, v: Any) -> bytes:
    _want(t, v, Decimal, int)
    d = Decimal(v)
    if not d.is_finite():
        raise _bad(t, f"{d} is not a finite decimal")
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int(Decimal((sign, digits, 0)))  # not int(str): refused past 4300 digits
    scale = -exponent
    if not wire_int32_ok(scale):
        raise _bad(t, f"scale {scale} out of 32-bit range")
    return struct.pack(">i", scale) + varint_bytes(unscaled)


def wire_int32_ok(n: int) -> bool:
    return -(2**31) <= n < 2**31


def _de_decimal(t: NativeType, data: bytes) -> Decimal:
    if len(data) < 5:
        raise _bad(t, f"expected at least 5 bytes, got {len(data)}")
    scale = struct.unpack(">i", data[:4])[0]
    unscaled = int.from_bytes(data[4:], "big", signed=True)
    return exact_decimal(unscaled, scale)


def _ser_float(t: NativeType, v: Any) -> bytes:
    _want(t, v, float, int)
    try:
        return struct.pack(">f" if t.name == "float" else ">d", float(v))
    except (OverflowError, struct.error):
        raise _bad(t, f"{brief_int(v) if isinstance(v, int) else v} is out of range") from None


def _de_float(t: NativeType, data: bytes) -> float:
    size = 4 if t.name == "float" else 8
    if len(data) != size:
        raise _bad(t, f"expected {size} bytes, got {len(data)}")
    return float(struct.unpack(">f" if size == 4 else ">d", data)[0])


def _ser_text(t: NativeType, v: Any) -> bytes:
    _want(t, v, str)
    if t.name == "ascii":
        if not v.isascii():
            raise _bad(t, f"non-ASCII characters in {v!r}")
        return bytes(v, "ascii")
    try:
        return bytes(v, "utf-8")
    except UnicodeEncodeError as e:
        raise _bad(t, f"string cannot be encoded as UTF-8 ({e.reason})") from None


def _de_text(t: NativeType, data: bytes) -> str:
    if t.name == "ascii":
        if not data.isascii():
            raise _bad(t, "non-ASCII bytes in an ascii value")
        return data.decode("ascii")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _bad(t, f"bytes are not valid UTF-8 ({e.reason} at {e.start})") from None


def _ser_blob(t: NativeType, v: Any) -> bytes:
    _want(t, v, bytes, bytearray, memoryview)
    return bytes(v)


def _de_blob(t: NativeType, data: bytes) -> bytes:
    return bytes(data)


def _ser_boolean(t: NativeType, v: Any) -> bytes:
    _want(t, v, bool)
    return b"\x01" if v else b"\x00"


def _de_boolean(t: NativeType, data: bytes) -> bool:
    if len(data) != 1:
        raise _bad(t, f"expected 1 byte, got {len(data)}")
    return data != b"\x00"


def _ser_uuid(t: NativeType, v: Any) -> bytes:
    _want(t, v, uuid.UUID)
    if t.name == "timeuuid" and v.bytes[6] >> 4 != 1:
        raise _bad(t, f"{v} is not a type 1 (time-based) UUID")
    return bytes(v.bytes)


def _de_uuid(t: NativeType, data: bytes) -> uuid.UUID:
    if len(data) != 16:
        raise _bad(t, f"expected 16 bytes, got {len(data)}")
    if t.name == "timeuuid" and data[6] >> 4 != 1:
        raise _bad(t, f"version {data[6] >> 4} UUID is not a timeuuid (version 1)")
    return uuid.UUID(bytes=bytes(data))


def _ser_inet(t: NativeType, v: Any) -> bytes:
    _want(t, v, ipaddress.IPv4Address, ipaddress.IPv6Address, str)
    if isinstance(v, str):
        try:
            v = ipaddress.ip_address(v)
        except ValueError:
            raise _bad(t, f"{v!r} is not an IP address") from None
    return bytes(v.packed)


def _de_inet(t: NativeType, data: bytes) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if len(data) == 4:
        return ipaddress.IPv4Address(bytes(data))
    if len(data) == 16:
        return ipaddress.IPv6Address(bytes(data))
    raise _bad(t, f"expected 4 or 16 bytes, got {len(data)}")


def _ser_date(t: NativeType, v: Any) -> bytes:
    _want(t, v, int)
    raw = int(v) + DATE_EPOCH
    if not 0 <= raw < 2**32:
        raise _bad(t, f"{brief_int(v)} days since epoch is out of range")
    return raw.to_bytes(4, "big")


def _de_date(t: NativeType, data: bytes) -> int:
    if len(data) != 4:
        raise _bad(t, f"expected 4 bytes, got {len(data)}")
    return int.from_bytes(data, "big") - DATE_EPOCH


def _ser_time(t: NativeType, v: Any) -> bytes:
    _want(t, v, int)
    if not 0 <= v < NANOS_PER_DAY:
        raise _bad(t, f"{brief_int(v)} ns is not within a day [0, {NANOS_PER_DAY})")
    return int(v).to_bytes(8, "big", signed=True)


def _de_time(t: NativeType, data: bytes) -> int:
    if len(data) != 8:
        raise _bad(t, f"expected 8 bytes, got {len(data)}")
    n = int.from_bytes(data, "big", signed=True)
    if not 0 <= n < NANOS_PER_DAY:
        raise _bad(t, f"{n} ns is not within a day")
    return n


def _ser_duration(t: NativeType, v: Any) -> bytes:
    _want(t, v, Duration)
    return wire.pack_vint(v.months) + wire.pack_vint(v.days) + wire.pack_vint(v.nanoseconds)


def _de_duration(t: NativeType, data: bytes) -> Duration:
    months, pos = wire.read_vint(data, 0, t)
    days, pos = wire.read_vint(data, pos, t)
    nanos, pos = wire.read_vint(data, pos, t)
    if pos != len(data):
        raise _bad(t, f"{len(data) - pos} extra bytes after a duration")
    return Duration(months, days, nanos)


_Ser = Callable[[NativeType, Any], bytes]
_De = Callable[[NativeType, bytes], Any]
_NATIVES: dict[str, tuple[_Ser, _De]] = {
    **{name: (_ser_fixed_int, _de_fixed_int) for name in _INT_SIZES},
    "varint": (_ser_varint, _de_varint),
    "decimal": (_ser_decimal, _de_decimal),
    "float": (_ser_float, _de_float),
    "double": (_ser_float, _de_float),
    "text": (_ser_text, _de_text),
    "ascii": (_ser_text, _de_text),
    "blob": (_ser_blob, _de_blob),
    "boolean": (_ser_boolean, _de_boolean),
    "uuid": (_ser_uuid, _de_uuid),
    "timeuuid": (_ser_uuid, _de_uuid),
    "inet": (_ser_inet, _de_inet),
    "date": (_ser_date, _de_date),
    "time": (_ser_time, _de_time),
    "duration": (_ser_duration, _de_duration),
}


# ---------------------------------------------------------------------------------------------
# public API


def serialize(t: CqlType, value: Any) -> bytes:
    """Encode a non-null Python value of type `t` (conventions in the module docstring)."""
    if value is None:
        raise _bad(t, "null cannot be serialized as a value; send a null [bytes] instead")
    if isinstance(t, NativeType):
        if t.name == "timestamp" and isinstance(value, float) and value.is_integer():
            value = int(value)
        return _NATIVES[t.name][0](t, value)
    if isinstance(t, ListType):
        items = [serialize(t.element, v) for v in _sequence(t, value)]
        return wire.join_collection(items, len(items))
    if isinstance(t, SetType):
        items = _sorted_unique(t.element, [serialize(t.element, v) for v in _sequence(t, value)])
        return wire.join_collection(items, len(items))
    if isinstance(t, MapType):
        return _serialize_map(t, value)
    if isinstance(t, TupleType):
        return _serialize_fields(t, t.elements, _sequence(t, value))
    if isinstance(t, UserType):
        return _serialize_fields(t, t.field_types, _udt_fields(t, value))
    if isinstance(t, VectorType):
        return _serialize_vector(t, _sequence(t, value))
    if isinstance(t, CustomType):
        _want(t, value, bytes, bytearray, memoryview)
        return bytes(value)
    raise _bad(t, "values of an unresolved type cannot be encoded")


def deserialize(t: CqlType, data: bytes) -> Any:
    """Decode protocol bytes of type `t`; raise InvalidRequest if they are malformed."""
    data = bytes(data)
    if isinstance(t, NativeType):
        if not data and t.name not in _STRINGLIKE:
            return None
        return _NATIVES[t.name][1](t, data)
    if isinstance(t, ListType):
        return tuple(deserialize(t.element, e) for e in wire.split_collection(data, t, 1))
    if isinstance(t, SetType):
        items = _sorted_unique(t.element, wire.split_collection(data, t, 1))
        return tuple(deserialize(t.element, e) for e in items)
    if isinstance(t, MapType):
        return tuple((deserialize(t.key, k), deserialize(t.value, v)) for k, v in _map_entries(t, data))
    if isinstance(t, TupleType | UserType):
        types = t.elements if isinstance(t, TupleType) else t.field_types
        fields = wire.split_fields(data, t, len(types))
        fields += [None] * (len(types) - len(fields))
        return tuple(None if f is None else deserialize(ft, f) for ft, f in zip(types, fields))
    if isinstance(t, VectorType):
        return tuple(deserialize(t.element, e) for e in wire.split_vector(t, data))
    if isinstance(t, CustomType):
        return data
    raise _bad(t, "values of an unresolved type cannot be decoded")


FIXED_WIDTHS: dict[str, int] = {
    "tinyint": 1,
    "smallint": 2,
    "int": 4,
    "date": 4,
    "bigint": 8,
    "timestamp": 8,
    "uuid": 16,
}
"""Native types whose every value of exactly this many bytes decodes (and an empty one is null):
their validation needs only the length. Not timeuuid (its version nibble is checked) nor counter
(not bound in INSERTs)."""


def bound_validator(t: CqlType) -> Callable[[bytes], None]:
    """A check of bound bytes of ``t`` that accepts and rejects exactly as ``deserialize`` does,
    with the same error, computed once per plan: for a fixed-width type only the length is looked
    at (a full decode builds an int or a UUID that the caller throws away), for blob nothing, for
    anything else - and for every wrong length, so the message is ``deserialize``'s - the full
    decode."""
    if isinstance(t, NativeType):
        if t.name == "blob":
            return _accept_any
        width = FIXED_WIDTHS.get(t.name)
        if width is not None:

            def fixed(data: bytes) -> None:
                size = len(data)
                if size != width and size:
                    deserialize(t, data)  # raises with deserialize's message

            return fixed

    def full(data: bytes) -> None:
        deserialize(t, data)

    return full


def _accept_any(data: bytes) -> None:
    return None


def validate(t: CqlType, data: bytes) -> None:
    """Check that client-sent bytes are a well-formed value of `t` (empty values allowed)."""
    if isinstance(t, NativeType):
        if data and t.name != "blob":
            _NATIVES[t.name][1](t, bytes(data))
        return
    if isinstance(t, ListType | SetType):
        for e in wire.split_collection(bytes(data), t, 1):
            validate(t.element, e)
    elif isinstance(t, MapType):
        for k, v in _map_entries(t, bytes(data)):
            validate(t.key, k)
            validate(t.value, v)
    elif isinstance(t, TupleType | UserType):
        types = t.elements if isinstance(t, TupleType) else t.field_types
        for ft, f in zip(types, wire.split_fields(bytes(data), t, len(types))):
            if f is not None:
                validate(ft, f)
    elif isinstance(t, VectorType):
        for e in wire.split_vector(t, bytes(data)):
            validate(t.element, e)


def _serialize_vector(t: VectorType, values: list[Any]) -> bytes:
    if len(values) != t.dimension:
        raise _bad(t, f"expected {t.dimension} elements, got {len(values)}")
    if any(v is None for v in values):
        raise _bad(t, "vectors cannot contain nulls")
    items = [serialize(t.element, v) for v in values]
    if wire.fixed_size(t.element) is not None:
        return b"".join(items)
    return b"".join(wire.pack_uvint(len(i)) + i for i in items)


def _serialize_map(t: MapType, value: Any) -> bytes:
    pairs = value.items() if isinstance(value, Mapping) else _sequence(t, value)
    entries: dict[bytes, bytes] = {}
    for pair in pairs:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise _bad(t, f"map entries must be (key, value) pairs, got {pair!r}")
        entries[serialize(t.key, pair[0])] = serialize(t.value, pair[1])
    keys = _sorted_unique(t.key, list(entries))
    flat = [b for k in keys for b in (k, entries[k])]
    return wire.join_collection(flat, len(keys))


def _map_entries(t: MapType, data: bytes) -> list[tuple[bytes, bytes]]:
    flat = wire.split_collection(data, t, 2)
    pairs = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
    return [(k, pairs[k]) for k in _sorted_unique(t.key, list(pairs))]


def _serialize_fields(t: CqlType, types: tuple[CqlType, ...], values: list[Any]) -> bytes:
    if len(values) > len(types):
        raise _bad(t, f"expected at most {len(types)} fields, got {len(values)}")
    return b"".join(wire.pack_bytes(None if v is None else serialize(ft, v)) for ft, v in zip(types, values))


def _udt_fields(t: UserType, value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        unknown = set(value) - set(t.field_names)
        if unknown:
            raise _bad(t, f"unknown field(s) {', '.join(sorted(map(str, unknown)))}")
        return [value.get(name) for name in t.field_names]
    return _sequence(t, value)


def _sequence(t: CqlType, value: Any) -> list[Any]:
    if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, Iterable):
        raise _bad(t, f"expected a sequence, got {type(value).__name__}")
    return list(value)


def _sorted_unique(element: CqlType, items: list[bytes]) -> list[bytes]:
    """Items in CQL order of `element`, keeping the first of any equal ones."""

    def cmp(a: bytes, b: bytes) -> int:
        return compare(element, a, b)

    ordered = sorted(items, key=functools.cmp_to_key(cmp))
    out: list[bytes] = []
    for item in ordered:
        if not out or compare(element, out[-1], item) != 0:
            out.append(item)
    return out
