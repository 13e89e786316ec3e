"""Order-preserving ("byte-comparable") encoding of clustering keys.

Storage keeps rows in SQLite ordered by one BLOB per row; comparing two such blobs bytewise
(memcmp, then shorter first) must give CQL clustering order, honouring each column's ASC/DESC.

Layout. A key is the concatenation of its components; each component is one marker byte then,
for a value, its payload:

    ASC  component: 0x3E null, 0x3F empty value, 0x40 value + payload
    DESC component: 0x40 value + inverted payload, 0x41 empty value, 0x42 null

Payloads are prefix-free (no payload is a proper prefix of another), so concatenation and byte
inversion (for DESC) both preserve order. Inside collections, tuples and UDTs, elements use the
ASC markers and a sequence ends with 0x20, below every marker, so shorter sorts first.

Slices. `lower_bound`/`upper_bound` turn a clustering prefix into byte strings such that a key
with encoding `k` is in the slice exactly when `lower <= k < upper`:

    lower_bound(P, inclusive=True)  = enc(P)         upper_bound(P, inclusive=True)  = enc(P) + 0x60
    lower_bound(P, inclusive=False) = enc(P) + 0x60  upper_bound(P, inclusive=False) = enc(P)

This works because every key that starts with prefix P encodes as enc(P) followed by nothing
or by a marker byte (at most 0x42 < 0x60), and every key outside P's range differs from it
inside enc(P). The empty prefix gives b"" and b"\\x60": the whole partition.

Decoding returns CQL-equal canonical serialized values: booleans as 0/1, one NaN, decimals
without trailing zeros (1.00 -> 1, which CQL compares equal anyway), tuples/UDTs without
trailing nulls (an all-null one as a single null field).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from tabletdb.cql import wire
from tabletdb.cql.codec import varint_bytes
from tabletdb.cql.compare import decode_decimal, signed_low_bytes, uuid_timestamp
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

NULL, EMPTY, VALUE = 0x3E, 0x3F, 0x40
DESC_EMPTY, DESC_NULL = 0x41, 0x42
SEQUENCE_END = 0x20
AFTER_PREFIX = b"\x60"

_SIGNED_SIZES = {"tinyint": 1, "smallint": 2, "int": 4, "bigint": 8, "counter": 8, "timestamp": 8, "time": 8}

Component = tuple[CqlType, bool, bytes | None]
_INVERT_TABLE = bytes(range(255, -1, -1))


class CorruptClusteringKey(ValueError):
    """Stored key bytes that no encoder produced: a storage fault, not a client error."""


def encode_clustering(components: Sequence[Component]) -> bytes:
    """Encode (type, descending, serialized value or None) components of a clustering key or prefix."""
    out = bytearray()
    for t, descending, value in components:
        if value is None:
            out.append(DESC_NULL if descending else NULL)
        elif not value:
            out.append(DESC_EMPTY if descending else EMPTY)
        else:
            payload = _encode(t, value)
            out.append(VALUE)
            out += _invert(payload) if descending else payload
    return bytes(out)


def lower_bound(prefix: Sequence[Component], inclusive: bool) -> bytes:
    """Smallest encoding in a slice that starts at `prefix` (see the module docstring)."""
    enc = encode_clustering(prefix)
    return enc if inclusive or not prefix else enc + AFTER_PREFIX


def upper_bound(prefix: Sequence[Component], inclusive: bool) -> bytes:
    """Exclusive end of a slice that ends at `prefix` (see the module docstring)."""
    enc = encode_clustering(prefix)
    return enc + AFTER_PREFIX if inclusive or not prefix else enc


def decode_clustering(types: Sequence[tuple[CqlType, bool]], data: bytes) -> list[bytes | None]:
    """The serialized component values of an encoded key or prefix (as many as it holds)."""
    reader = _Reader(data)
    out: list[bytes | None] = []
    for t, descending in types:
        if reader.at_end():
            break
        marker = reader.byte()
        if marker == (DESC_NULL if descending else NULL):
            out.append(None)
        elif marker == (DESC_EMPTY if descending else EMPTY):
            out.append(b"")
        elif marker == VALUE:
            reader.mask = 0xFF if descending else 0
            out.append(_decode(t, reader))
            reader.mask = 0
        else:
            raise CorruptClusteringKey(
                f"Corrupt clustering key: marker {marker:#x} for a {t.cql()} component"
            )
    if not reader.at_end():
        raise CorruptClusteringKey(
            f"Corrupt clustering key: {len(data) - reader.pos} bytes left after {len(out)}"
        )
    return out


def _invert(data: bytes) -> bytes:
    return data.translate(_INVERT_TABLE)


class _Reader:
    """Reads encoded bytes, un-inverting them while inside a DESC component (`mask` = 0xFF)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.mask = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def byte(self) -> int:
        if self.at_end():
            raise CorruptClusteringKey("Corrupt clustering key: truncated")
        b = self.data[self.pos] ^ self.mask
        self.pos += 1
        return b

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CorruptClusteringKey("Corrupt clustering key: truncated")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return _invert(chunk) if self.mask else chunk


# ---------------------------------------------------------------------------------------------
# payload encoders: serialized non-empty value -> prefix-free order-preserving bytes


def _check_size(t: CqlType, value: bytes, size: int) -> None:
    if len(value) != size:
        raise InvalidRequest(f"Invalid value for type {t.cql()}: expected {size} bytes, got {len(value)}")


def _encode(t: CqlType, value: bytes) -> bytes:
    if isinstance(t, NativeType):
        return _encode_native(t, value)
    if isinstance(t, ListType | SetType):
        return _encode_sequence([t.element], wire.split_collection(value, t, 1))
    if isinstance(t, MapType):
        return _encode_sequence([t.key, t.value], wire.split_collection(value, t, 2))
    if isinstance(t, VectorType):
        return _encode_sequence([t.element], wire.split_vector(t, value))
    if isinstance(t, TupleType | UserType):
        types = t.elements if isinstance(t, TupleType) else t.field_types
        fields = wire.split_fields(value, t, len(types))
        while fields and fields[-1] is None:
            fields.pop()
        out = bytearray()
        for ft, f in zip(types, fields):
            out += bytes([NULL]) if f is None else _element(ft, f)
        out.append(SEQUENCE_END)
        return bytes(out)
    return _escape(value)


def _element(t: CqlType, value: bytes) -> bytes:
    return bytes([VALUE]) + _encode(t, value) if value else bytes([EMPTY])


def _encode_sequence(types: list[CqlType], items: list[bytes]) -> bytes:
    body = b"".join(_element(types[i % len(types)], item) for i, item in enumerate(items))
    return body + bytes([SEQUENCE_END])


def _escape(value: bytes) -> bytes:
    """Bytewise order, prefix-free: 0x00 -> 0x00 0xFF, then a 0x00 0x00 terminator."""
    return value.replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def _encode_native(t: NativeType, value: bytes) -> bytes:
    name = t.name
    if name in _SIGNED_SIZES:
        _check_size(t, value, _SIGNED_SIZES[name])
        return bytes([value[0] ^ 0x80]) + value[1:]
    if name == "date":
        _check_size(t, value, 4)
        return value
    if name == "boolean":
        _check_size(t, value, 1)
        return b"\x01" if value != b"\x00" else b"\x00"
    if name in ("float", "double"):
        return _encode_float(t, value)
    if name == "varint":
        return _encode_varint(int.from_bytes(value, "big", signed=True))
    if name == "decimal":
        return _encode_decimal(decode_decimal(value))
    if name in ("uuid", "timeuuid"):
        _check_size(t, value, 16)
        version = value[6] >> 4
        if name == "timeuuid" and version != 1:
            raise InvalidRequest(f"Invalid value for type timeuuid: version {version} UUID")
        timestamp = uuid_timestamp(value).to_bytes(8, "big")
        if name == "timeuuid":
            return timestamp + signed_low_bytes(value)
        return bytes([version]) + (timestamp + value[8:] if version == 1 else value)
    if name == "inet" and len(value) not in (4, 16):
        raise InvalidRequest(f"Invalid value for type inet: expected 4 or 16 bytes, got {len(value)}")
    return _escape(value)


def _encode_float(t: NativeType, value: bytes) -> bytes:
    size = 4 if t.name == "float" else 8
    _check_size(t, value, size)
    bits = int.from_bytes(value, "big")
    exponent_mask = (0x7F800000, 0x7FF0000000000000)[size == 8]
    mantissa_mask = (0x007FFFFF, 0x000FFFFFFFFFFFFF)[size == 8]
    if bits & exponent_mask == exponent_mask and bits & mantissa_mask:
        bits = exponent_mask | (mantissa_mask + 1) >> 1  # one canonical (quiet, positive) NaN
    sign = 1 << (8 * size - 1)
    bits = bits ^ ((1 << (8 * size)) - 1) if bits & sign else bits | sign
    return bits.to_bytes(size, "big")


def _encode_varint(n: int) -> bytes:
    """Sign byte, 4-byte magnitude length, magnitude; negatives have length and magnitude inverted."""
    magnitude = abs(n).to_bytes((abs(n).bit_length() + 7) // 8, "big")
    body = len(magnitude).to_bytes(4, "big") + magnitude
    return b"\x01" + _invert(body) if n < 0 else b"\x02" + body


def _encode_decimal(d: Decimal) -> bytes:
    """Sign byte (1 -, 2 zero, 3 +), then for |d| = 0.digits x 10^E: E (8 bytes, offset) and digits."""
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    digits_str = "".join(map(str, digits)).lstrip("0").rstrip("0")
    if not digits_str:
        return b"\x02"
    leading = "".join(map(str, digits)).lstrip("0")
    trailing_zeros = len(leading) - len(digits_str)
    magnitude_exp = exponent + trailing_zeros + len(digits_str)  # d = 0.digits_str x 10^magnitude_exp
    body = (magnitude_exp + 2**63).to_bytes(8, "big") + bytes(int(c) + 1 for c in digits_str) + b"\x00"
    return b"\x01" + _invert(body) if sign else b"\x03" + body


# ---------------------------------------------------------------------------------------------
# payload decoders: read one payload back into serialized CQL bytes


def _decode(t: CqlType, r: _Reader) -> bytes:
    if isinstance(t, NativeType):
        return _decode_native(t, r)
    if isinstance(t, ListType | SetType | MapType | VectorType):
        types = [t.key, t.value] if isinstance(t, MapType) else [t.element]
        items = _decode_sequence(types, r)
        if isinstance(t, VectorType):
            if wire.fixed_size(t.element) is not None:
                return b"".join(items)
            return b"".join(wire.pack_uvint(len(i)) + i for i in items)
        return wire.join_collection(items, len(items) // len(types))
    if isinstance(t, TupleType | UserType):
        types_ = t.elements if isinstance(t, TupleType) else t.field_types
        out = bytearray()
        for ft in types_:
            marker = r.byte()
            if marker == SEQUENCE_END:
                # An all-null tuple is non-empty on the wire (empty would be the "empty value").
                return bytes(out) or wire.pack_bytes(None)
            out += wire.pack_bytes(None if marker == NULL else _decode_element(ft, marker, r))
        if r.byte() != SEQUENCE_END:
            raise CorruptClusteringKey(f"Corrupt clustering key: too many fields for {t.cql()}")
        return bytes(out)
    return _unescape(r)


def _decode_element(t: CqlType, marker: int, r: _Reader) -> bytes:
    if marker == EMPTY:
        return b""
    if marker != VALUE:
        raise CorruptClusteringKey(f"Corrupt clustering key: element marker {marker:#x} in {t.cql()}")
    return _decode(t, r)


def _decode_sequence(types: list[CqlType], r: _Reader) -> list[bytes]:
    items: list[bytes] = []
    while (marker := r.byte()) != SEQUENCE_END:
        items.append(_decode_element(types[len(items) % len(types)], marker, r))
    return items


def _unescape(r: _Reader) -> bytes:
    out = bytearray()
    while True:
        b = r.byte()
        if b != 0:
            out.append(b)
            continue
        if r.byte() == 0:
            return bytes(out)
        out.append(0)


def _decode_native(t: NativeType, r: _Reader) -> bytes:
    name = t.name
    if name in _SIGNED_SIZES:
        raw = r.take(_SIGNED_SIZES[name])
        return bytes([raw[0] ^ 0x80]) + raw[1:]
    if name == "date":
        return r.take(4)
    if name == "boolean":
        return r.take(1)
    if name in ("float", "double"):
        size = 4 if name == "float" else 8
        bits = int.from_bytes(r.take(size), "big")
        sign = 1 << (8 * size - 1)
        bits = bits ^ sign if bits & sign else bits ^ ((1 << (8 * size)) - 1)
        return bits.to_bytes(size, "big")
    if name == "varint":
        return varint_bytes(_decode_varint(r))
    if name == "decimal":
        return _decode_decimal(r)
    if name in ("uuid", "timeuuid"):
        version = 1 if name == "timeuuid" else r.byte()
        if version != 1:
            return r.take(16)
        ts = int.from_bytes(r.take(8), "big")
        low = r.take(8)
        if name == "timeuuid":
            low = bytes(b ^ 0x80 for b in low)
        high = (ts & 0xFFFFFFFF).to_bytes(4, "big") + ((ts >> 32) & 0xFFFF).to_bytes(2, "big")
        return high + (0x1000 | (ts >> 48)).to_bytes(2, "big") + low
    return _unescape(r)


def _decode_varint(r: _Reader) -> int:
    sign = r.byte()
    if sign == 0x02:
        return int.from_bytes(r.take(int.from_bytes(r.take(4), "big")), "big")
    saved, r.mask = r.mask, r.mask ^ 0xFF
    magnitude = int.from_bytes(r.take(int.from_bytes(r.take(4), "big")), "big")
    r.mask = saved
    return -magnitude


def _decode_decimal(r: _Reader) -> bytes:
    sign = r.byte()
    if sign == 0x02:
        return b"\x00\x00\x00\x00\x00"
    saved = r.mask
    if sign == 0x01:
        r.mask ^= 0xFF
    magnitude_exp = int.from_bytes(r.take(8), "big") - 2**63
    digits = []
    while (b := r.byte()) != 0:
        digits.append(b - 1)
    r.mask = saved
    # int(Decimal) is exact and, unlike int(str), not limited to 4300 digits
    unscaled = int(Decimal((int(sign == 0x01), tuple(digits), 0)))
    scale = len(digits) - magnitude_exp
    if not -(2**31) <= scale < 2**31:
        raise CorruptClusteringKey(f"Corrupt clustering key: decimal scale {scale} out of range")
    return scale.to_bytes(4, "big", signed=True) + varint_bytes(unscaled)
