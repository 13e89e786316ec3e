"""Hostile input never escapes `Connection.receive_data`: it yields protocol-error events (or a
clean fatal close), and every error it yields can be encoded and sent."""

from __future__ import annotations

import struct

from cassandra import protocol as dp
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.protocol.connection import Connection, ConnState, ProtocolViolation, RequestReceived
from tabletdb.protocol.frames import DEFAULT_MAX_FRAME_SIZE
from tabletdb.protocol.responses import ErrorResponse
from tests.unit.protocol.driver_oracle import SCYLLA_FEATURES, request_frame

OPCODES = st.integers(0, 0x20)


def _ready(compression: str | None = None) -> Connection:
    conn = Connection()
    options = {"CQL_VERSION": "3.3.1", "SCYLLA_USE_METADATA_ID": ""}
    if compression:
        options["COMPRESSION"] = compression
    (ev,) = conn.receive_data(request_frame(dp.StartupMessage("3.3.1", options)))
    assert isinstance(ev, RequestReceived)
    conn.send(ev.stream, conn.startup_response(), ev.request)
    return conn


def _drain(conn: Connection, chunks: list[bytes]) -> None:
    for chunk in chunks:
        for ev in conn.receive_data(chunk):
            if isinstance(ev, ProtocolViolation):
                conn.send(ev.stream, ErrorResponse(error=ev.error))
                if ev.fatal:
                    assert conn.state is ConnState.CLOSED


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=64), max_size=6), st.booleans())
def test_random_bytes(chunks: list[bytes], after_startup: bool) -> None:
    conn = _ready("lz4") if after_startup else Connection()
    _drain(conn, chunks)


@settings(max_examples=300)
@given(
    st.integers(0, 0xFF),
    st.integers(-(2**15), 2**15 - 1),
    OPCODES,
    st.binary(max_size=80),
    st.sampled_from([None, "lz4", "snappy"]),
)
def test_valid_headers_with_garbage_bodies(
    flags: int, stream: int, opcode: int, body: bytes, compression: str | None
) -> None:
    conn = _ready(compression)
    frame = struct.pack(">BBhBi", 4, flags, stream, opcode, len(body)) + body
    events = conn.receive_data(frame)
    assert len(events) == 1
    ev = events[0]
    if isinstance(ev, ProtocolViolation):
        assert ev.stream == stream and not ev.fatal
        conn.send(ev.stream, ErrorResponse(error=ev.error))
    # The connection is still usable afterwards.
    (ok,) = conn.receive_data(request_frame(dp.OptionsMessage(), stream=1))
    assert isinstance(ok, RequestReceived)


@settings(max_examples=200)
@given(st.integers(-(2**31), 2**31 - 1), OPCODES, st.booleans())
def test_absurd_lengths(length: int, opcode: int, first: bool) -> None:
    conn = Connection() if first else _ready()
    events = conn.receive_data(struct.pack(">BBhBi", 4, 0, 5, opcode, length))
    if length < 0 or (first and length > 100_000):
        assert len(events) == 1 and isinstance(events[0], ProtocolViolation) and events[0].fatal
        conn.send(5, ErrorResponse(error=events[0].error))
    elif length > DEFAULT_MAX_FRAME_SIZE:  # refused from the header; its body is then skipped
        assert len(events) == 1 and isinstance(events[0], ProtocolViolation) and not events[0].fatal
        conn.send(5, ErrorResponse(error=events[0].error))
    else:
        assert events == [] or length == 0


@settings(max_examples=200)
@given(st.data())
def test_truncated_valid_requests(data: st.DataObject) -> None:
    msg = data.draw(
        st.sampled_from(
            [
                dp.QueryMessage("SELECT * FROM t", 1, fetch_size=10, timestamp=5, query_params=[b"a", None]),
                dp.ExecuteMessage(b"id", [b"v"], 1, result_metadata_id=b"m"),
                dp.PrepareMessage("SELECT 1"),
                dp.RegisterMessage(["SCHEMA_CHANGE"]),
            ]
        )
    )
    frame = request_frame(msg, features=SCYLLA_FEATURES)  # _ready() negotiated SCYLLA_USE_METADATA_ID
    cut = data.draw(st.integers(9, len(frame) - 1))
    body = frame[9:cut]
    conn = _ready()
    (ev,) = conn.receive_data(frame[:5] + struct.pack(">i", len(body)) + body)
    assert isinstance(ev, ProtocolViolation) and not ev.fatal and "Truncated" in ev.error.message
