"""The sans-I/O Connection: requests encoded by scylla-driver, the state machine, negotiation."""

from __future__ import annotations

import struct
from typing import Any

import lz4.block
import pytest
from cassandra import ConsistencyLevel
from cassandra import protocol as dp
from cassandra.query import BatchType

from tabletdb.cql.consistency import LOCAL_ONE, LOCAL_SERIAL
from tabletdb.cql.results import VoidResult
from tabletdb.cql.values import UNSET
from tabletdb.protocol.connection import (
    Connection,
    ConnectionEvent,
    ConnState,
    ProtocolViolation,
    RequestReceived,
)
from tabletdb.protocol.extensions import LWT_ADD_METADATA_MARK, USE_METADATA_ID
from tabletdb.protocol.frames import encode_frame
from tabletdb.protocol.requests import (
    AuthResponse,
    Batch,
    Execute,
    Options,
    Prepare,
    Query,
    Register,
    Startup,
)
from tabletdb.protocol.responses import AuthSuccess, ErrorResponse, Ready
from tabletdb.protocol.sasl import PASSWORD_AUTHENTICATOR
from tests.unit.protocol.driver_oracle import (
    PLAIN_FEATURES,
    SCYLLA_FEATURES,
    decode_response,
    request_frame,
    startup_options,
)


def _lz4_compress(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + bytes(lz4.block.compress(data, store_size=False))


def _lz4_decompress(data: bytes) -> bytes:
    out: bytes = lz4.block.decompress(data[4:], uncompressed_size=struct.unpack(">i", data[:4])[0])
    return out


def state_of(conn: Connection) -> ConnState:
    """Read the state through a call so mypy does not keep an earlier narrowing."""
    return conn.state


def one(events: list[ConnectionEvent]) -> Any:
    assert len(events) == 1, events
    return events[0]


def ready_connection(features: Any = PLAIN_FEATURES, compression: str | None = None) -> Connection:
    conn = Connection()
    ev = one(
        conn.receive_data(request_frame(dp.StartupMessage("3.3.1", startup_options(features, compression))))
    )
    assert isinstance(ev.request, Startup)
    conn.send(ev.stream, conn.startup_response(), ev.request)
    assert conn.state is ConnState.READY
    return conn


def test_driver_query_decodes_with_all_parameters() -> None:
    conn = ready_connection()
    msg = dp.QueryMessage(
        "SELECT * FROM ks.t WHERE k = ?",
        ConsistencyLevel.LOCAL_ONE,
        serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
        fetch_size=5000,
        paging_state=b"\x00\x01",
        timestamp=1234567890,
        query_params=[b"\x00\x00\x00\x07", None, dp._UNSET_VALUE],
    )
    ev = one(conn.receive_data(request_frame(msg, stream=42)))
    assert isinstance(ev, RequestReceived) and ev.stream == 42
    q = ev.request
    assert isinstance(q, Query)
    assert q.query == "SELECT * FROM ks.t WHERE k = ?"
    p = q.params
    assert (p.consistency, p.serial_consistency, p.page_size, p.paging_state, p.timestamp) == (
        LOCAL_ONE,
        LOCAL_SERIAL,
        5000,
        b"\x00\x01",
        1234567890,
    )
    assert p.values == [b"\x00\x00\x00\x07", None, UNSET]
    assert not p.skip_metadata and p.names is None


def test_execute_layout_depends_on_use_metadata_id() -> None:
    plain = ready_connection()
    msg = dp.ExecuteMessage(
        b"\x01" * 16, [b"x"], ConsistencyLevel.ONE, result_metadata_id=b"\x02" * 16, skip_meta=True
    )
    ex = one(plain.receive_data(request_frame(msg, 3, PLAIN_FEATURES))).request
    assert isinstance(ex, Execute)
    assert (ex.query_id, ex.result_metadata_id, ex.params.values, ex.params.skip_metadata) == (
        b"\x01" * 16,
        None,
        [b"x"],
        False,
    )

    scylla = ready_connection(SCYLLA_FEATURES)
    assert {USE_METADATA_ID, LWT_ADD_METADATA_MARK} <= scylla.extensions
    ex = one(scylla.receive_data(request_frame(msg, 3, SCYLLA_FEATURES))).request
    assert isinstance(ex, Execute)
    assert (ex.result_metadata_id, ex.params.skip_metadata) == (b"\x02" * 16, True)


def test_prepare_batch_register() -> None:
    conn = ready_connection()
    prep = one(conn.receive_data(request_frame(dp.PrepareMessage("INSERT INTO t (k) VALUES (?)")))).request
    assert prep == Prepare("INSERT INTO t (k) VALUES (?)")
    batch = dp.BatchMessage(
        BatchType.UNLOGGED,
        [(False, "INSERT INTO t (k) VALUES (1)", []), (True, b"\x09" * 16, [b"a", None])],
        ConsistencyLevel.QUORUM,
        serial_consistency_level=ConsistencyLevel.SERIAL,
        timestamp=99,
    )
    b = one(conn.receive_data(request_frame(batch))).request
    assert isinstance(b, Batch)
    assert (b.type, b.consistency, b.serial_consistency, b.timestamp) == (1, 4, 8, 99)
    assert [(s.query, s.query_id, s.values) for s in b.statements] == [
        ("INSERT INTO t (k) VALUES (1)", None, []),
        (None, b"\x09" * 16, [b"a", None]),
    ]
    reg = one(
        conn.receive_data(request_frame(dp.RegisterMessage(["SCHEMA_CHANGE", "STATUS_CHANGE"])))
    ).request
    assert reg == Register(["SCHEMA_CHANGE", "STATUS_CHANGE"])
    assert conn.registered == {"SCHEMA_CHANGE", "STATUS_CHANGE"}


def test_malformed_body_errors_on_its_stream_and_connection_survives() -> None:
    conn = ready_connection()
    bad_batch = encode_frame(4, 0, 11, 0x0D, b"\x00\x00\x01\x07")
    ev = one(conn.receive_data(bad_batch))
    assert isinstance(ev, ProtocolViolation) and ev.stream == 11 and not ev.fatal
    assert "Invalid query kind in BATCH messages. Must be 0 or 1 but got 7" in ev.error.message
    truncated = encode_frame(4, 0, 12, 0x07, b"\x00\x00\x00\x10abc")
    ev = one(conn.receive_data(truncated))
    assert isinstance(ev, ProtocolViolation) and ev.stream == 12 and "Truncated" in ev.error.message
    bad_register = request_frame(dp.RegisterMessage(["NOPE"]), stream=13)
    assert "Invalid value 'NOPE' for Event.Type" in one(conn.receive_data(bad_register)).error.message
    unknown = encode_frame(4, 0, 14, 0x33, b"")
    assert one(conn.receive_data(unknown)).error.message == "Unknown opcode 51"
    ok = one(conn.receive_data(request_frame(dp.OptionsMessage(), stream=15)))
    assert isinstance(ok, RequestReceived) and isinstance(ok.request, Options)


def test_before_startup_only_startup_and_options() -> None:
    conn = Connection()
    ev = one(conn.receive_data(request_frame(dp.QueryMessage("SELECT 1", 1), stream=2)))
    assert isinstance(ev, ProtocolViolation) and ev.stream == 2
    assert ev.error.message == "Unexpected message 7, expecting STARTUP or OPTIONS"
    assert isinstance(one(conn.receive_data(request_frame(dp.OptionsMessage()))).request, Options)
    bad = one(conn.receive_data(request_frame(dp.StartupMessage("3.3.1", {"COMPRESSION": "zstd"}))))
    assert bad.error.message == "Unknown compression algorithm: zstd"
    assert conn.state is ConnState.EXPECT_STARTUP


def test_second_startup_is_an_error() -> None:
    conn = ready_connection()
    ev = one(conn.receive_data(request_frame(dp.StartupMessage("3.3.1", {}))))
    assert isinstance(ev, ProtocolViolation) and "already initialized" in ev.error.message


def test_authentication_flow() -> None:
    conn = Connection(authenticator=PASSWORD_AUTHENTICATOR)
    ev = one(conn.receive_data(request_frame(dp.StartupMessage("3.3.1", {}))))
    reply = decode_response(conn.send(ev.stream, conn.startup_response(), ev.request))
    assert isinstance(reply, dp.AuthenticateMessage) and reply.authenticator == PASSWORD_AUTHENTICATOR
    assert conn.state is ConnState.AUTHENTICATING
    q = one(conn.receive_data(request_frame(dp.QueryMessage("SELECT 1", 1))))
    assert q.error.message == "Unexpected message 7, expecting AUTH_RESPONSE"
    token = bytes.fromhex("0063617373616e64726100736563726574")
    auth = one(conn.receive_data(request_frame(dp.AuthResponseMessage(token), stream=1)))
    assert auth.request == AuthResponse(token)
    conn.send(1, AuthSuccess(), auth.request)
    assert state_of(conn) is ConnState.READY
    assert isinstance(one(conn.receive_data(request_frame(dp.QueryMessage("SELECT 1", 1)))).request, Query)


def test_lz4_negotiation_compresses_every_response_after_startup() -> None:
    conn = Connection()
    opts = one(conn.receive_data(request_frame(dp.OptionsMessage())))
    assert conn.send(opts.stream, VoidResult(), opts.request)[1] == 0  # before STARTUP: plain
    ev = one(conn.receive_data(request_frame(dp.StartupMessage("3.3.1", {"COMPRESSION": "lz4"}))))
    ready = conn.send(ev.stream, conn.startup_response(), ev.request)
    assert ready[1] & 0x01  # Scylla compresses READY too
    assert isinstance(decode_response(ready, decompressor=_lz4_decompress), dp.ReadyMessage)
    # The driver compresses requests once READY arrives; we decompress them.
    frame = request_frame(dp.QueryMessage("SELECT now() FROM system.local", 1), 9, compressor=_lz4_compress)
    assert frame[1] & 0x01
    q = one(conn.receive_data(frame))
    assert isinstance(q.request, Query) and q.request.query == "SELECT now() FROM system.local"


def test_compressed_frame_without_negotiation_is_refused() -> None:
    conn = ready_connection()
    frame = request_frame(dp.QueryMessage("SELECT 1", 1), 4, compressor=_lz4_compress)
    ev = one(conn.receive_data(frame))
    assert isinstance(ev, ProtocolViolation) and "no compression was negotiated" in ev.error.message


def test_version_5_gets_the_downgrade_error_on_its_stream() -> None:
    conn = Connection()
    v5_options = encode_frame(5, 0, 0, 0x05, b"")
    ev = one(conn.receive_data(v5_options))
    assert isinstance(ev, ProtocolViolation) and ev.fatal and ev.stream == 0
    frame = conn.send(ev.stream, ErrorResponse(error=ev.error))
    body = b"\x00\x00\x00\x0a" + struct.pack(">H", 42) + b"Invalid or unsupported protocol version: 5"
    assert frame == b"\x84\x00\x00\x00\x00" + struct.pack(">i", len(body)) + body
    err = decode_response(frame)
    assert isinstance(err, dp.ProtocolException) and err.is_beta_protocol_error is False
    assert "unsupported protocol version" in err.message
    assert conn.state is ConnState.CLOSED
    assert conn.receive_data(request_frame(dp.OptionsMessage())) == []


def test_custom_payload_on_a_request_is_read_and_exposed() -> None:
    conn = ready_connection()
    msg = dp.QueryMessage("SELECT 1", 1)
    msg.custom_payload = {"k": b"v"}
    ev = one(conn.receive_data(request_frame(msg, 6)))
    assert isinstance(ev.request, Query) and ev.request.query == "SELECT 1"
    assert ev.custom_payload == {"k": b"v"}


def test_pipelined_requests_in_one_chunk() -> None:
    conn = ready_connection()
    data = b"".join(request_frame(dp.QueryMessage(f"SELECT {i}", 1), stream=i) for i in range(50))
    events = conn.receive_data(data)
    assert [
        (e.stream, e.request.query)
        for e in events
        if isinstance(e, RequestReceived) and isinstance(e.request, Query)
    ] == [(i, f"SELECT {i}") for i in range(50)]


def test_ready_response_has_request_stream_and_version() -> None:
    conn = Connection()
    ev = one(conn.receive_data(request_frame(dp.StartupMessage("3.3.1", {}), stream=300)))
    frame = conn.send(ev.stream, Ready(), ev.request)
    assert frame == b"\x84\x00\x01\x2c\x02\x00\x00\x00\x00"


@pytest.mark.parametrize("version", [3, 4])
def test_v3_and_v4_are_accepted(version: int) -> None:
    conn = Connection()
    ev = one(conn.receive_data(encode_frame(version, 0, 1, 0x05, b"")))
    assert isinstance(ev.request, Options)
    assert conn.send(1, Ready())[0] == 0x80 | version


def test_unset_values_are_refused_in_v3() -> None:
    conn = Connection()
    ev = one(conn.receive_data(encode_frame(3, 0, 1, 0x01, b"\x00\x00")))
    conn.send(ev.stream, conn.startup_response(), ev.request)
    body = b"\x00\x00\x00\x08SELECT ?" + b"\x00\x01\x01\x00\x01\xff\xff\xff\xfe"
    (bad,) = conn.receive_data(encode_frame(3, 0, 2, 0x07, body))
    assert isinstance(bad, ProtocolViolation) and "Unset values" in bad.error.message
