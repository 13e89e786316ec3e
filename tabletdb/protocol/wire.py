"""Primitive native-protocol notations: readers over a received body, writers into a bytearray.

Every reader checks bounds and raises `ProtocolError` naming what it was reading, so a truncated
or lying body turns into a clean protocol error on its stream instead of an IndexError deep in the
server. Writers append to a caller-owned bytearray so a response is built with one allocation.
"""

from __future__ import annotations

import ipaddress
import struct
import uuid

from tabletdb.cql.errors import ProtocolError
from tabletdb.cql.values import UNSET, Unset, Value

__all__ = ["UNSET", "Reader", "Unset", "Value"]

_BYTE = struct.Struct(">B")
_SHORT = struct.Struct(">H")
_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_LONG = struct.Struct(">q")


class Reader:
    """A cursor over one frame body. Methods consume and return one notation each."""

    __slots__ = ("_buf", "_pos")

    def __init__(self, buf: bytes) -> None:
        self._buf = buf
        self._pos = 0

    @property
    def remaining(self) -> int:
        return len(self._buf) - self._pos

    def position(self) -> tuple[bytes, int]:
        """The body and the offset of the next unread byte, for a decoder that reads in bulk."""
        return self._buf, self._pos

    def seek(self, pos: int) -> None:
        """Continue at ``pos`` (after a bulk read of the body from ``position``)."""
        if not 0 <= pos <= len(self._buf):
            raise ProtocolError(f"Offset {pos} outside a body of {len(self._buf)} bytes")
        self._pos = pos

    def _take(self, n: int, what: str) -> bytes:
        pos = self._pos
        end = pos + n
        if n < 0 or end > len(self._buf):
            raise ProtocolError(
                f"Truncated message: needed {n} bytes for {what} at offset {pos}, "
                f"only {len(self._buf) - pos} left"
            )
        self._pos = end
        return self._buf[pos:end]

    def _truncated(self, size: int, what: str) -> ProtocolError:
        left = len(self._buf) - self._pos
        return ProtocolError(
            f"Truncated message: needed {size} bytes for {what} at offset {self._pos}, only {left} left"
        )

    # The fixed-size readers are the hot path: struct raises on a short buffer, so the bounds
    # check costs nothing until it fails.

    def byte(self) -> int:
        pos = self._pos
        try:
            value: int = _BYTE.unpack_from(self._buf, pos)[0]
        except struct.error:
            raise self._truncated(1, "[byte]") from None
        self._pos = pos + 1
        return value

    def short(self) -> int:
        pos = self._pos
        try:
            value: int = _SHORT.unpack_from(self._buf, pos)[0]
        except struct.error:
            raise self._truncated(2, "[short]") from None
        self._pos = pos + 2
        return value

    def i32(self) -> int:
        pos = self._pos
        try:
            value: int = _INT.unpack_from(self._buf, pos)[0]
        except struct.error:
            raise self._truncated(4, "[int]") from None
        self._pos = pos + 4
        return value

    def i64(self) -> int:
        pos = self._pos
        try:
            value: int = _LONG.unpack_from(self._buf, pos)[0]
        except struct.error:
            raise self._truncated(8, "[long]") from None
        self._pos = pos + 8
        return value

    def consistency(self) -> int:
        return self.short()

    def string(self) -> str:
        return self._decode(self._take(self.short(), "[string]"), "[string]")

    def long_string(self) -> str:
        n = self.i32()
        if n < 0:
            raise ProtocolError(f"Negative [long string] length {n}")
        return self._decode(self._take(n, "[long string]"), "[long string]")

    def blob(self) -> bytes | None:
        n = self.i32()
        if n < 0:
            return None
        return self._take(n, "[bytes]")

    def short_bytes(self) -> bytes:
        return self._take(self.short(), "[short bytes]")

    def value(self) -> Value:
        n = self.i32()
        if n >= 0:
            return self._take(n, "[value]")
        if n == -1:
            return None
        if n == -2:
            return UNSET
        raise ProtocolError(f"Invalid [value] length {n}: must be >= -2")

    def string_list(self) -> list[str]:
        return [self.string() for _ in range(self.short())]

    def string_map(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for _ in range(self.short()):
            key = self.string()
            out[key] = self.string()
        return out

    def string_multimap(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for _ in range(self.short()):
            key = self.string()
            out[key] = self.string_list()
        return out

    def bytes_map(self) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for _ in range(self.short()):
            key = self.string()
            out[key] = self.blob()
        return out

    def inet(self) -> tuple[str, int]:
        size = self.byte()
        if size not in (4, 16):
            raise ProtocolError(f"Invalid [inet] address length {size}: must be 4 or 16")
        addr = ipaddress.ip_address(self._take(size, "[inet] address"))
        return str(addr), self.i32()

    def read_uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self._take(16, "[uuid]"))

    def rest(self) -> bytes:
        """Everything not yet consumed (e.g. a nested body)."""
        return self._take(self.remaining, "the rest of the body")

    def expect_end(self, what: str) -> None:
        if self._pos != len(self._buf):
            raise ProtocolError(f"{self.remaining} unexpected trailing bytes after {what}")

    @staticmethod
    def _decode(raw: bytes, what: str) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"Invalid UTF-8 in {what}: {exc.reason}") from None


def write_byte(out: bytearray, v: int) -> None:
    out.append(v)


def write_short(out: bytearray, v: int) -> None:
    out += _SHORT.pack(v)


def write_int(out: bytearray, v: int) -> None:
    out += _INT.pack(v)


def write_uint(out: bytearray, v: int) -> None:
    """An `[int]` whose value is a bit set (flags with bit 31 used, e.g. the LWT mark)."""
    out += _UINT.pack(v)


def write_long(out: bytearray, v: int) -> None:
    out += _LONG.pack(v)


def write_string(out: bytearray, s: str) -> None:
    raw = s.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise ValueError(f"[string] too long: {len(raw)} bytes (max 65535): {s[:60]!r}...")
    out += _SHORT.pack(len(raw))
    out += raw


def write_long_string(out: bytearray, s: str) -> None:
    raw = s.encode("utf-8")
    out += _INT.pack(len(raw))
    out += raw


def write_bytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        out += b"\xff\xff\xff\xff"
    else:
        out += _INT.pack(len(b))
        out += b


def write_short_bytes(out: bytearray, b: bytes) -> None:
    if len(b) > 0xFFFF:
        raise ValueError(f"[short bytes] too long: {len(b)} bytes (max 65535)")
    out += _SHORT.pack(len(b))
    out += b


def write_value(out: bytearray, v: Value) -> None:
    if isinstance(v, Unset):
        out += b"\xff\xff\xff\xfe"
    else:
        write_bytes(out, v)


def write_string_list(out: bytearray, items: list[str]) -> None:
    out += _SHORT.pack(len(items))
    for s in items:
        write_string(out, s)


def write_string_map(out: bytearray, m: dict[str, str]) -> None:
    out += _SHORT.pack(len(m))
    for k, v in m.items():
        write_string(out, k)
        write_string(out, v)


def write_string_multimap(out: bytearray, m: dict[str, list[str]]) -> None:
    out += _SHORT.pack(len(m))
    for k, vs in m.items():
        write_string(out, k)
        write_string_list(out, vs)


def write_bytes_map(out: bytearray, m: dict[str, bytes | None]) -> None:
    out += _SHORT.pack(len(m))
    for k, v in m.items():
        write_string(out, k)
        write_bytes(out, v)


def write_inet(out: bytearray, address: str, port: int) -> None:
    packed = ipaddress.ip_address(address).packed
    out.append(len(packed))
    out += packed
    out += _INT.pack(port)


def write_consistency(out: bytearray, cl: int) -> None:
    out += _SHORT.pack(cl)
