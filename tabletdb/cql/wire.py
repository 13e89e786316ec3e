"""Low-level pieces of CQL value encodings shared by the codec, the comparator and the clustering encoder.

Kept apart from `codec` so that `compare` can split serialized collections and tuples without
importing the codec (which itself needs `compare` to put set elements in CQL order).
"""

from __future__ import annotations

import struct

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import CqlType, NativeType, VectorType

_INT32 = struct.Struct(">i")

# Natives whose values have one fixed size. Vectors of these are packed without length prefixes
# (as Cassandra 5 and the drivers do); every other element type gets an unsigned-vint length.
FIXED_SIZES: dict[str, int] = {
    "boolean": 1,
    "float": 4,
    "int": 4,
    "double": 8,
    "bigint": 8,
    "counter": 8,
    "timestamp": 8,
    "uuid": 16,
    "timeuuid": 16,
}


def fixed_size(t: CqlType) -> int | None:
    """Serialized size of every value of `t` inside a vector, or None when it varies."""
    if isinstance(t, NativeType):
        return FIXED_SIZES.get(t.name)
    if isinstance(t, VectorType):
        inner = fixed_size(t.element)
        return None if inner is None else inner * t.dimension
    return None


def pack_int32(n: int) -> bytes:
    return _INT32.pack(n)


def pack_bytes(value: bytes | None) -> bytes:
    """A protocol `[bytes]`: int32 length (-1 for null) then the bytes."""
    if value is None:
        return _INT32.pack(-1)
    return _INT32.pack(len(value)) + value


def read_int32(data: bytes, pos: int, what: CqlType) -> tuple[int, int]:
    if pos + 4 > len(data):
        raise InvalidRequest(f"Not enough bytes to read a length in a value of type {what.cql()}")
    return _INT32.unpack_from(data, pos)[0], pos + 4


def read_bytes(data: bytes, pos: int, what: CqlType) -> tuple[bytes | None, int]:
    """Read one `[bytes]`; None for a negative length (null)."""
    size, pos = read_int32(data, pos, what)
    if size < 0:
        return None, pos
    if pos + size > len(data):
        raise InvalidRequest(
            f"Not enough bytes for an element of a value of type {what.cql()}: need {size}, "
            f"have {len(data) - pos}"
        )
    return data[pos : pos + size], pos + size


def split_collection(data: bytes, what: CqlType, per_entry: int) -> list[bytes]:
    """Split a v3+ collection into its serialized elements (keys and values alternate for maps).

    `per_entry` is 1 for lists/sets and 2 for maps. Null elements are rejected: CQL collections
    cannot hold nulls.
    """
    count, pos = read_int32(data, 0, what)
    if count < 0:
        raise InvalidRequest(f"Negative element count {count} in a value of type {what.cql()}")
    out: list[bytes] = []
    for _ in range(count * per_entry):
        item, pos = read_bytes(data, pos, what)
        if item is None:
            raise InvalidRequest(f"null is not supported inside collections ({what.cql()})")
        out.append(item)
    if pos != len(data):
        raise InvalidRequest(f"{len(data) - pos} unexpected extra bytes after a value of type {what.cql()}")
    return out


def join_collection(items: list[bytes], entries: int) -> bytes:
    return pack_int32(entries) + b"".join(pack_bytes(i) for i in items)


def split_fields(data: bytes, what: CqlType, max_fields: int) -> list[bytes | None]:
    """Split a tuple/UDT value into its fields; trailing fields may be absent (returned short)."""
    out: list[bytes | None] = []
    pos = 0
    while pos < len(data):
        if len(out) >= max_fields:
            raise InvalidRequest(f"Too many fields in a value of type {what.cql()}: expected {max_fields}")
        item, pos = read_bytes(data, pos, what)
        out.append(item)
    return out


def pack_uvint(n: int) -> bytes:
    """Cassandra's unsigned vint: the count of leading 1 bits in the first byte = extra bytes."""
    if n < 0:
        raise ValueError(f"unsigned vint cannot hold {n}")
    for extra in range(9):
        bits = 7 - extra + 8 * extra if extra < 8 else 64
        if n < (1 << bits):
            prefix = (0xFF << (8 - extra)) & 0xFF
            raw = n.to_bytes(extra + 1, "big")
            return bytes([raw[0] | prefix]) + raw[1:]
    raise ValueError(f"{n} does not fit in an unsigned vint")


def read_uvint(data: bytes, pos: int, what: CqlType) -> tuple[int, int]:
    if pos >= len(data):
        raise InvalidRequest(f"Not enough bytes to read a vint in a value of type {what.cql()}")
    first = data[pos]
    extra = 0
    while extra < 8 and first & (0x80 >> extra):
        extra += 1
    if pos + 1 + extra > len(data):
        raise InvalidRequest(f"Truncated vint in a value of type {what.cql()}")
    value = first & (0xFF >> extra) if extra < 8 else 0
    for b in data[pos + 1 : pos + 1 + extra]:
        value = (value << 8) | b
    return value, pos + 1 + extra


def pack_vint(n: int) -> bytes:
    """Signed vint: zig-zag then unsigned vint."""
    return pack_uvint(-2 * n - 1 if n < 0 else 2 * n)


def read_vint(data: bytes, pos: int, what: CqlType) -> tuple[int, int]:
    raw, pos = read_uvint(data, pos, what)
    return (raw >> 1) ^ -(raw & 1), pos


def split_vector(t: VectorType, data: bytes) -> list[bytes]:
    """The serialized elements of a vector value (fixed-size packed, or uvint-length prefixed)."""
    size = fixed_size(t.element)
    if size is not None:
        if len(data) != size * t.dimension:
            raise InvalidRequest(
                f"Invalid value for type {t.cql()}: expected {size * t.dimension} bytes, got {len(data)}"
            )
        return [data[i * size : (i + 1) * size] for i in range(t.dimension)]
    out: list[bytes] = []
    pos = 0
    for _ in range(t.dimension):
        length, pos = read_uvint(data, pos, t)
        if pos + length > len(data):
            raise InvalidRequest(
                f"Invalid value for type {t.cql()}: element {len(out)} needs {length} bytes, "
                f"only {len(data) - pos} left"
            )
        out.append(data[pos : pos + length])
        pos += length
    if pos != len(data):
        raise InvalidRequest(
            f"Invalid value for type {t.cql()}: {len(data) - pos} extra bytes after {t.dimension} elements"
        )
    return out
