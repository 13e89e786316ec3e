"""Frame layer: the 9-byte header, incremental frame splitting, and body compression.

The decoder is incremental (bytes arrive in arbitrary chunks) and never trusts a length before
checking it against the limits: the first frame of a connection is capped at 100,000 bytes, like
Scylla, so a stray HTTP client or a port scanner cannot make us buffer megabytes; later frames are
capped by a configurable maximum. Until the connection has authenticated every frame stays under
the first-frame cap (`PRE_AUTH_MAX_BODY`), so an unauthenticated client cannot make the node
buffer the configured maximum (256 MB by default) per connection. A compressed body's declared
decompressed size is checked against the same limit before anything is decompressed: a 1 MB lz4
body may claim 255 MB.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol

import cramjam
import lz4.block

from tabletdb.cql.errors import CqlError, InvalidRequest, ProtocolError

HEADER = struct.Struct(">BBhBi")
HEADER_SIZE = HEADER.size  # 9

FLAG_COMPRESSION = 0x01
FLAG_TRACING = 0x02
FLAG_CUSTOM_PAYLOAD = 0x04
FLAG_WARNING = 0x08
FLAG_USE_BETA = 0x10

RESPONSE_BIT = 0x80
SUPPORTED_VERSIONS = (3, 4)
CURRENT_VERSION = 4

FIRST_FRAME_MAX_BODY = 100_000
PRE_AUTH_MAX_BODY = FIRST_FRAME_MAX_BODY
"""Largest frame body (compressed or, once decompressed, not) accepted before authentication:
STARTUP, OPTIONS and a SASL PLAIN token fit in far less, like Scylla's first-frame cap."""
DEFAULT_MAX_FRAME_SIZE = 256 * 1024 * 1024


class OpCode:
    ERROR = 0x00
    STARTUP = 0x01
    READY = 0x02
    AUTHENTICATE = 0x03
    CREDENTIALS = 0x04
    OPTIONS = 0x05
    SUPPORTED = 0x06
    QUERY = 0x07
    RESULT = 0x08
    PREPARE = 0x09
    EXECUTE = 0x0A
    REGISTER = 0x0B
    EVENT = 0x0C
    BATCH = 0x0D
    AUTH_CHALLENGE = 0x0E
    AUTH_RESPONSE = 0x0F
    AUTH_SUCCESS = 0x10


@dataclass(frozen=True, slots=True)
class Frame:
    """One complete frame as received; `body` is still compressed if the flag says so."""

    version: int
    flags: int
    stream: int
    opcode: int
    body: bytes


class FrameFatal(ProtocolError):
    """A framing problem after which the byte stream cannot be resynchronised.

    Carries the stream id to answer on (the offending frame's, or 0 when it is unknown).
    """

    def __init__(self, message: str, stream: int) -> None:
        super().__init__(message)
        self.stream = stream


class VersionMismatch(FrameFatal):
    """The client speaks a protocol version we do not: drivers downgrade on this message text."""

    def __init__(self, version: int, stream: int) -> None:
        super().__init__(f"Invalid or unsupported protocol version: {version}", stream)
        self.version = version


class DeclaredTooBig(ProtocolError):
    """A compressed body declaring more than the frame limit: refused before decompressing."""


@dataclass(frozen=True, slots=True)
class RefusedFrame:
    """A frame refused from its header alone and skipped whole: the stream stays in sync, so the
    client gets `error` for that request and the connection carries on."""

    stream: int
    error: CqlError


class _TooBig(Exception):
    def __init__(self, error: CqlError, stream: int, length: int) -> None:
        super().__init__(error.message)
        self.error = error
        self.stream = stream
        self.length = length


def encode_frame(version: int, flags: int, stream: int, opcode: int, body: bytes | bytearray) -> bytes:
    return HEADER.pack(version, flags, stream, opcode, len(body)) + body


class FrameDecoder:
    """Splits an incoming byte stream into frames, enforcing version and size limits.

    A framing error after which the stream cannot be resynchronised is stored in `fatal` (frames
    before it are still returned); from then on the decoder yields nothing and the caller must
    answer the error and close.
    """

    __slots__ = ("_buf", "_max_frame_size", "_skip", "authenticated", "fatal", "version")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, authenticated: bool = True) -> None:
        self._buf = bytearray()
        self._max_frame_size = max_frame_size
        # False until the connection has authenticated: frames stay under PRE_AUTH_MAX_BODY.
        # The owner flips it; defaults to True so a bare decoder keeps the configured maximum.
        self.authenticated = authenticated
        # The version the connection speaks, fixed by its first frame; None until then.
        self.version: int | None = None
        self.fatal: FrameFatal | None = None
        # Body bytes of a refused oversized frame still to discard as they arrive.
        self._skip = 0

    def feed(self, data: bytes) -> list[Frame | RefusedFrame]:
        if self.fatal is not None:
            return []
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        buf = self._buf
        buf += data
        frames: list[Frame | RefusedFrame] = []
        pos = 0
        n = len(buf)
        try:
            while pos < n:
                if not self._check_version(buf, pos):
                    break
                if n - pos < HEADER_SIZE:
                    break
                version, flags, stream, opcode, length = HEADER.unpack_from(buf, pos)
                try:
                    self._check_length(length, stream)
                except _TooBig as big:
                    # Answer from the header and discard the body unread, never buffering it:
                    # the client is told before it has finished sending, as Cassandra and
                    # ScyllaDB tell it, instead of meeting a closed socket (Broken pipe).
                    frames.append(RefusedFrame(big.stream, big.error))
                    body = min(length, n - pos - HEADER_SIZE)
                    self._skip = length - body
                    pos += HEADER_SIZE + body
                    continue
                end = pos + HEADER_SIZE + length
                if end > n:
                    break
                frames.append(Frame(version, flags, stream, opcode, bytes(buf[pos + HEADER_SIZE : end])))
                if self.version is None:
                    self.version = version
                pos = end
        except FrameFatal as exc:
            self.fatal = exc
            buf.clear()
            return frames
        del buf[:pos]
        return frames

    def _check_version(self, buf: bytearray, pos: int) -> bool:
        """Raise on a version we refuse; False if we must wait for the bytes holding its stream id."""
        raw = buf[pos]
        version = raw & 0x7F
        if not raw & RESPONSE_BIT and version in SUPPORTED_VERSIONS:
            if self.version is not None and version != self.version:
                if len(buf) - pos < 4:
                    return False
                raise FrameFatal(
                    f"Protocol version changed on an established connection: "
                    f"was {self.version}, frame has {version}",
                    self._stream_at(buf, pos, version),
                )
            return True
        if len(buf) - pos < (3 if version in (1, 2) else 4):
            return False
        raise VersionMismatch(version, self._stream_at(buf, pos, version))

    @staticmethod
    def _stream_at(buf: bytearray, pos: int, version: int) -> int:
        """The stream id of a frame we refuse, so the client can match the error to its request."""
        if version in (1, 2):  # 8-byte header with a one-byte stream
            return buf[pos + 2]
        stream: int = struct.unpack_from(">h", buf, pos + 2)[0]
        return stream

    def _check_length(self, length: int, stream: int) -> None:
        if length < 0:
            raise FrameFatal(f"Invalid frame body length {length}", stream)
        if self.version is None and length > FIRST_FRAME_MAX_BODY:
            raise FrameFatal(f"Initial message size too large ({length}), rejecting as invalid", stream)
        if not self.authenticated and length > PRE_AUTH_MAX_BODY:
            raise FrameFatal(
                f"Request is too big: length {length} exceeds maximum allowed {PRE_AUTH_MAX_BODY} "
                "before authentication",
                stream,
            )
        if length > self._max_frame_size:
            # native_transport_max_frame_size_in_mb: an authenticated client's request, refused
            # as an invalid request (the class Cassandra and ScyllaDB answer it with).
            message = f"Request is too big: length {length} exceeds maximum allowed {self._max_frame_size}"
            raise _TooBig(InvalidRequest(message), stream, length)


class Compressor(Protocol):
    name: str

    def compress(self, data: bytes | bytearray) -> bytes: ...

    def decompress(self, data: bytes, limit: int | None = None) -> bytes:
        """Decompress, first refusing a declared size above `limit` (default: the frame maximum)."""
        ...


class Lz4Compressor:
    """Raw LZ4 block prefixed by the big-endian uncompressed length (not the LZ4 frame format)."""

    name = "lz4"

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._max_size = max_size

    def compress(self, data: bytes | bytearray) -> bytes:
        compressed: bytes = lz4.block.compress(bytes(data), store_size=False)
        return struct.pack(">i", len(data)) + compressed

    def decompress(self, data: bytes, limit: int | None = None) -> bytes:
        if len(data) < 4:
            raise ProtocolError(f"Truncated lz4 body: {len(data)} bytes, need at least 4")
        size: int = struct.unpack_from(">i", data)[0]
        if size < 0:
            raise ProtocolError(f"Invalid lz4 uncompressed length {size}")
        _check_declared("lz4", size, self._max_size if limit is None else limit)
        if size == 0:
            return b""
        try:
            out: bytes = lz4.block.decompress(data[4:], uncompressed_size=size)
        except Exception as exc:  # lz4 raises a bare LZ4BlockError subclass of Exception
            raise ProtocolError(f"Corrupt lz4 body: {exc}") from None
        return out


class SnappyCompressor:
    """Raw snappy block (no framing), as the drivers' python-snappy `compress` produces."""

    name = "snappy"

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._max_size = max_size

    def compress(self, data: bytes | bytearray) -> bytes:
        return bytes(cramjam.snappy.compress_raw(bytes(data)))

    def decompress(self, data: bytes, limit: int | None = None) -> bytes:
        size = _snappy_preamble(data)
        _check_declared("snappy", size, self._max_size if limit is None else limit)
        try:
            return bytes(cramjam.snappy.decompress_raw(data))
        except Exception as exc:  # cramjam raises its own DecompressionError
            raise ProtocolError(f"Corrupt snappy body: {exc}") from None


def _check_declared(algorithm: str, size: int, limit: int) -> None:
    """Refuse a body whose declared decompressed size exceeds the frame limit, before allocating
    it: the declared size is what the decompressor would allocate, whatever the compressed size.
    The frame itself was complete and within limits, so the stream stays in sync: an error for
    that request, the connection kept (the fuzz tests hold it to that)."""
    if size > limit:
        raise DeclaredTooBig(
            f"Request is too big: {algorithm} decompressed length {size} exceeds maximum allowed {limit}"
        )


def _snappy_preamble(data: bytes) -> int:
    """The uncompressed length a snappy block declares (a little-endian base-128 varint)."""
    size = 0
    for i, b in enumerate(data[:5]):
        size |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return size
    raise ProtocolError("Corrupt snappy body: bad length preamble")


def compressor_for(name: str, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> Compressor:
    """The compressor for a STARTUP `COMPRESSION` value (case-insensitive)."""
    lowered = name.lower()
    if lowered == "lz4":
        return Lz4Compressor(max_frame_size)
    if lowered == "snappy":
        return SnappyCompressor(max_frame_size)
    raise ProtocolError(f"Unknown compression algorithm: {name}")
