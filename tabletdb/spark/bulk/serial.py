"""Arrow arrays as the codec's serialized values (`cql.codec`), without a Python call per value.

Fixed-width numbers are byte-swapped in one `array.array` call and cut into values by
`struct.iter_unpack` (one C loop making the bytes objects; Arrow's own `to_pylist` of a
fixed-size binary array goes through a scalar object per value, about 4x the cost), so a column
of a million ints costs a few C loops. Nulls come out as None.
"""

from __future__ import annotations

import array
import struct
import sys
from functools import cache
from operator import itemgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_INT_CODES = {array.array(code).itemsize: code for code in ("b", "h", "i", "l", "q")}
_FLOAT_CODES = {4: "f", 8: "d"}
_FIRST = itemgetter(0)
_BOOLEANS: dict[Any, bytes | None] = {True: b"\x01", False: b"\x00", None: None}
SIGNED = {"tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(), "bigint": pa.int64()}
"""The Arrow type holding each CQL integer type's values exactly."""


def null_rows(values: pa.Array) -> list[int]:
    """Indices of the null entries."""
    if not values.null_count:
        return []
    return pc.indices_nonzero(values.is_null()).to_pylist()  # type: ignore[no-any-return]


def big_endian(values: pa.Array) -> list[bytes | None]:
    """A fixed-width integer or floating-point array as big-endian bytes per value."""
    width = values.type.byte_width
    codes = _FLOAT_CODES if pa.types.is_floating(values.type) else _INT_CODES
    filled = values.fill_null(0) if values.null_count else values
    start = filled.offset * width
    data = array.array(codes[width])
    data.frombytes(memoryview(filled.buffers()[1])[start : start + len(filled) * width])
    if sys.byteorder == "little" and width > 1:
        data.byteswap()
    out: list[bytes | None] = list(map(_FIRST, _cutter(width).iter_unpack(data)))
    for row in null_rows(values):
        out[row] = None
    return out


@cache
def _cutter(width: int) -> struct.Struct:
    """Cuts a buffer into `width`-byte values."""
    return struct.Struct(f"{width}s")


def booleans(values: pa.Array) -> list[bytes | None]:
    return list(map(_BOOLEANS.__getitem__, values.to_pylist()))


def utf8(values: pa.Array) -> list[bytes | None]:
    """A string array's UTF-8 bytes per value (Arrow strings are valid UTF-8)."""
    target = pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary()
    return values.cast(target).to_pylist()  # type: ignore[no-any-return]


def days(values: pa.Array) -> list[bytes | None]:
    """date32 days since the epoch as CQL's date: unsigned, the epoch at 2**31."""
    shifted = pc.add(values.cast(pa.int32()).cast(pa.int64()), 1 << 31).cast(pa.uint32())
    return big_endian(shifted)
