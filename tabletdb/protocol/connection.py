"""A sans-I/O CQL connection: bytes in -> request events, responses -> bytes out.

It owns framing, compression, the connection state machine and extension negotiation, and
nothing else: no sockets, no clock, no handler calls. The asyncio shell (server.py) feeds it
received bytes, dispatches the resulting events, and writes what `send` returns (model: h11).

State machine (spec/clients.md 1.2): before STARTUP only STARTUP and OPTIONS; after a STARTUP
that requires authentication only AUTH_RESPONSE until AUTH_SUCCESS is sent; then anything but a
second STARTUP. Receiving STARTUP moves the state at once (to AUTHENTICATING or READY, fixed by
the `authenticator` given at construction), so a STARTUP must be answered with
`startup_response()` before the next event is handled.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass

from tabletdb.cql.errors import CqlError, InvalidRequest, ProtocolError
from tabletdb.protocol.extensions import (
    KNOWN_EXTENSIONS,
    LWT_ADD_METADATA_MARK,
    RATE_LIMIT_ERROR,
    USE_METADATA_ID,
)
from tabletdb.protocol.frames import (
    CURRENT_VERSION,
    DEFAULT_MAX_FRAME_SIZE,
    FLAG_COMPRESSION,
    FLAG_CUSTOM_PAYLOAD,
    FLAG_TRACING,
    FLAG_WARNING,
    HEADER,
    PRE_AUTH_MAX_BODY,
    RESPONSE_BIT,
    Compressor,
    DeclaredTooBig,
    Frame,
    FrameDecoder,
    OpCode,
    RefusedFrame,
    VersionMismatch,
    compressor_for,
)
from tabletdb.protocol.requests import (
    PAYLOAD_OPCODES,
    DecodeContext,
    Register,
    Request,
    Startup,
    decode_request,
)
from tabletdb.protocol.responses import (
    RESULT_ENCODERS,
    Authenticate,
    AuthSuccess,
    EncodeContext,
    ErrorResponse,
    Ready,
    Reply,
    Response,
)
from tabletdb.protocol.wire import Reader, write_bytes_map, write_string_list

EVENT_STREAM = -1
_RESULT = OpCode.RESULT


class ConnState(enum.Enum):
    EXPECT_STARTUP = "expect_startup"
    AUTHENTICATING = "authenticating"
    READY = "ready"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """A decoded request to answer on `stream`. `tracing`: the client asked for a trace.

    `size`: the bytes the request held when received (its frame body, plus the decompressed body
    if it was compressed), what the server charges against its in-flight memory budget.
    """

    stream: int
    request: Request
    tracing: bool = False
    custom_payload: dict[str, bytes | None] | None = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class ProtocolViolation:
    """Answer `ErrorResponse(error)` on `stream`; if `fatal`, close the connection after writing."""

    stream: int
    error: CqlError
    fatal: bool


ConnectionEvent = RequestReceived | ProtocolViolation

_OPCODE_NAMES = {v: k for k, v in vars(OpCode).items() if k.isupper()}


class Connection:
    """Protocol state of one client connection."""

    def __init__(
        self,
        *,
        authenticator: str | None = None,
        offered_extensions: frozenset[str] = KNOWN_EXTENSIONS,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        self.authenticator = authenticator
        self.offered_extensions = offered_extensions
        self.max_frame_size = max_frame_size
        self.state = ConnState.EXPECT_STARTUP
        self.startup_options: dict[str, str] = {}
        self.extensions: frozenset[str] = frozenset()
        self.registered: set[str] = set()
        self.compression: Compressor | None = None
        # Frames stay small until the connection is READY (authenticated, or no authenticator).
        self._decoder = FrameDecoder(max_frame_size, authenticated=False)
        self._decode_ctx = DecodeContext()
        self._encode_ctx = EncodeContext()

    @property
    def version(self) -> int:
        return self._decoder.version or CURRENT_VERSION

    @property
    def encode_context(self) -> EncodeContext:
        return self._encode_ctx

    def receive_data(self, data: bytes) -> list[ConnectionEvent]:
        """Decode everything complete in the received bytes. Never raises on bad input."""
        if self.state is ConnState.CLOSED:
            return []
        events: list[ConnectionEvent] = []
        for frame in self._decoder.feed(data):
            if isinstance(frame, RefusedFrame):
                events.append(ProtocolViolation(frame.stream, frame.error, fatal=False))
            else:
                events.append(self._handle_frame(frame))
        fatal = self._decoder.fatal
        if fatal is not None:
            self.state = ConnState.CLOSED
            events.append(ProtocolViolation(fatal.stream, fatal, fatal=True))
        return events

    def _handle_frame(self, frame: Frame) -> ConnectionEvent:
        stream = frame.stream
        try:
            self._check_state(frame.opcode)
            body = frame.body
            size = len(body)
            if frame.flags & FLAG_COMPRESSION:
                if self.compression is None:
                    raise ProtocolError("Received a compressed frame but no compression was negotiated")
                ready = self.state is ConnState.READY
                try:
                    body = self.compression.decompress(
                        body, self.max_frame_size if ready else PRE_AUTH_MAX_BODY
                    )
                except DeclaredTooBig as exc:
                    if not ready:
                        raise
                    # Past the frame limit once inflated: refused as the frame limit is, an
                    # invalid request (a protocol error makes drivers drop the connection).
                    return ProtocolViolation(stream, InvalidRequest(exc.message), fatal=False)
                size += len(body)
            payload: dict[str, bytes | None] | None = None
            if frame.flags & FLAG_CUSTOM_PAYLOAD and frame.opcode in PAYLOAD_OPCODES:
                reader = Reader(body)
                payload = reader.bytes_map()
                body = reader.rest()
            request = decode_request(frame.opcode, body, self._decode_ctx)
            if isinstance(request, Startup):
                self._startup(request)
            elif isinstance(request, Register):
                self.registered.update(request.event_types)
        except ProtocolError as exc:
            return ProtocolViolation(stream, exc, fatal=False)
        except Exception as exc:  # a decoder bug must not take the connection (or server) down
            return ProtocolViolation(
                stream, ProtocolError(f"Malformed {self._name(frame.opcode)}: {exc!r}"), False
            )
        return RequestReceived(stream, request, bool(frame.flags & FLAG_TRACING), payload, size)

    def _check_state(self, opcode: int) -> None:
        state = self.state
        if state is ConnState.READY:
            if opcode == OpCode.STARTUP:
                raise ProtocolError("Unexpected message STARTUP, the connection is already initialized")
            if opcode == OpCode.AUTH_RESPONSE:
                raise ProtocolError(
                    "Unexpected message AUTH_RESPONSE, the connection is already authenticated"
                )
        elif state is ConnState.EXPECT_STARTUP:
            if opcode not in (OpCode.STARTUP, OpCode.OPTIONS):
                raise ProtocolError(f"Unexpected message {opcode}, expecting STARTUP or OPTIONS")
        elif state is ConnState.AUTHENTICATING:
            if opcode == OpCode.CREDENTIALS:
                raise ProtocolError("CREDENTIALS is a protocol v1 message; use AUTH_RESPONSE (SASL)")
            if opcode != OpCode.AUTH_RESPONSE:
                raise ProtocolError(f"Unexpected message {opcode}, expecting AUTH_RESPONSE")

    def _startup(self, request: Startup) -> None:
        options = request.options
        compression: Compressor | None = None
        for key, value in options.items():
            if key.upper() == "COMPRESSION" and value:
                compression = compressor_for(value, self.max_frame_size)
        self.startup_options = options
        self.compression = compression
        self.extensions = frozenset(k for k in options if k in self.offered_extensions)
        use_metadata_id = USE_METADATA_ID in self.extensions
        self._decode_ctx = DecodeContext(use_metadata_id=use_metadata_id, version=self.version)
        self._encode_ctx = EncodeContext(
            version=self.version,
            use_metadata_id=use_metadata_id,
            lwt_mark=LWT_ADD_METADATA_MARK in self.extensions,
            rate_limit_error=RATE_LIMIT_ERROR in self.extensions,
        )
        if self.authenticator is None:
            self._set_ready()
        else:
            self.state = ConnState.AUTHENTICATING

    def _set_ready(self) -> None:
        """The connection may now send frames up to the configured maximum."""
        self.state = ConnState.READY
        self._decoder.authenticated = True

    def startup_response(self) -> Response:
        """What to answer the STARTUP with: AUTHENTICATE if an authenticator is configured."""
        if self.authenticator is None:
            return Ready()
        return Authenticate(authenticator=self.authenticator)

    def send(
        self,
        stream: int,
        response: Reply,
        request: Request | None = None,
        tracing_id: uuid.UUID | None = None,
    ) -> bytes:
        """Encode a response frame for `stream` (EVENT_STREAM for events): a protocol message, or
        a statement's result as a RESULT.

        `request` is the request being answered; Rows results need it for skip-metadata and
        metadata-id handling. Sending AUTH_SUCCESS completes authentication. `tracing_id`: the
        trace session of a traced request; the body then starts with it (before any warnings).
        """
        body = bytearray()
        flags = 0
        ctx = self._encode_ctx
        if tracing_id is not None:
            flags |= FLAG_TRACING
            body += tracing_id.bytes
        if response.warnings and ctx.version >= 4:
            flags |= FLAG_WARNING
            write_string_list(body, response.warnings)
        if response.custom_payload:
            flags |= FLAG_CUSTOM_PAYLOAD
            write_bytes_map(body, response.custom_payload)
        encode_result = RESULT_ENCODERS.get(type(response))
        if encode_result is not None:
            opcode = _RESULT
            encode_result(body, response, ctx, request)
        elif isinstance(response, Response):
            opcode = response.opcode
            response.encode(body, ctx, request)
        else:
            raise TypeError(f"not a response or a result: {type(response).__name__}")
        version = self._decoder.version or CURRENT_VERSION
        if isinstance(response, ErrorResponse) and isinstance(response.error, VersionMismatch):
            version = CURRENT_VERSION
        out: bytes | bytearray = body
        if self.compression is not None and self.state is not ConnState.EXPECT_STARTUP:
            out = self.compression.compress(body)
            flags |= FLAG_COMPRESSION
        if isinstance(response, AuthSuccess) and self.state is ConnState.AUTHENTICATING:
            self._set_ready()
        return HEADER.pack(version | RESPONSE_BIT, flags, stream, opcode, len(out)) + out

    def close(self) -> None:
        self.state = ConnState.CLOSED

    @staticmethod
    def _name(opcode: int) -> str:
        return _OPCODE_NAMES.get(opcode, f"opcode {opcode}")
