"""Length-prefixed msgpack frames: the byte format of every internode connection.

A frame is a 4-byte big-endian payload length followed by one msgpack value. The decoder is
sans-I/O (feed bytes, get values) so it is tested without sockets and reused by any transport;
`read_frame` adapts it to an asyncio stream.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import msgpack

LENGTH = struct.Struct(">I")
MAX_FRAME = 256 << 20
"""A bigger length can only come from a corrupt or hostile peer; it must not allocate gigabytes."""


class FrameError(Exception):
    """The peer sent bytes that are not a well-formed frame; the connection must be closed."""


def encode_frame(obj: Any) -> bytes:
    payload = msgpack.packb(obj, use_bin_type=True)
    if len(payload) > MAX_FRAME:
        raise FrameError(f"frame of {len(payload)} bytes exceeds the {MAX_FRAME}-byte limit")
    return LENGTH.pack(len(payload)) + payload


def decode_payload(payload: bytes) -> Any:
    try:
        return msgpack.unpackb(payload, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as exc:
        raise FrameError(f"frame payload of {len(payload)} bytes is not valid msgpack: {exc}") from exc


class FrameDecoder:
    """Accumulates bytes and yields every complete frame's value."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data
        out: list[Any] = []
        while len(self._buffer) >= LENGTH.size:
            (length,) = LENGTH.unpack_from(self._buffer)
            if length > MAX_FRAME:
                raise FrameError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
            end = LENGTH.size + length
            if len(self._buffer) < end:
                break
            out.append(decode_payload(bytes(self._buffer[LENGTH.size : end])))
            del self._buffer[:end]
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered."""
        return len(self._buffer)


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """Read one frame; raises asyncio.IncompleteReadError at a clean or torn end of stream."""
    header = await reader.readexactly(LENGTH.size)
    (length,) = LENGTH.unpack(header)
    if length > MAX_FRAME:
        raise FrameError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
    return decode_payload(await reader.readexactly(length))
