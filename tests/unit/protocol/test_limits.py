"""Limits that keep an unauthenticated or greedy client from exhausting the node's memory:
the pre-authentication frame cap, the declared decompressed size of a compressed body, and the
in-flight request budget (sans-I/O: no sockets, no clock)."""

from __future__ import annotations

import struct

import cramjam
import lz4.block
import pytest
from cassandra import protocol as dp

from tabletdb.cql.errors import InvalidRequest
from tabletdb.protocol.budget import InFlightBudget
from tabletdb.protocol.connection import Connection, ConnState, ProtocolViolation, RequestReceived
from tabletdb.protocol.frames import PRE_AUTH_MAX_BODY, OpCode, encode_frame
from tabletdb.protocol.requests import AuthResponse
from tabletdb.protocol.responses import AuthSuccess
from tabletdb.protocol.sasl import PASSWORD_AUTHENTICATOR
from tests.unit.protocol.driver_oracle import request_frame


def _authenticating(compression: str | None = None) -> Connection:
    conn = Connection(authenticator=PASSWORD_AUTHENTICATOR)
    options = {"CQL_VERSION": "3.0.0"} | ({"COMPRESSION": compression} if compression else {})
    (ev,) = conn.receive_data(request_frame(dp.StartupMessage("3.3.1", options)))
    assert isinstance(ev, RequestReceived)
    conn.send(ev.stream, conn.startup_response(), ev.request)
    assert conn.state is ConnState.AUTHENTICATING
    return conn


def _lz4_bomb(declared: int) -> bytes:
    """A small lz4 body that declares `declared` decompressed bytes (zeros compress ~250:1)."""
    return struct.pack(">i", declared) + bytes(lz4.block.compress(b"\0" * declared, store_size=False))


def test_oversized_frame_before_authentication_is_fatal_and_names_the_limit() -> None:
    conn = _authenticating()
    size = PRE_AUTH_MAX_BODY + 1
    # Only the header: the limit applies before the body is buffered.
    (ev,) = conn.receive_data(struct.pack(">BBhBi", 4, 0, 3, OpCode.AUTH_RESPONSE, size))
    assert isinstance(ev, ProtocolViolation) and ev.fatal and ev.stream == 3
    assert ev.error.message == (
        f"Request is too big: length {size} exceeds maximum allowed {PRE_AUTH_MAX_BODY} before authentication"
    )
    assert conn.state is ConnState.CLOSED


def test_frame_at_the_pre_auth_limit_is_accepted() -> None:
    conn = _authenticating()
    token = b"\0user\0" + b"p" * (PRE_AUTH_MAX_BODY - 4 - 6)
    (ev,) = conn.receive_data(
        encode_frame(4, 0, 1, OpCode.AUTH_RESPONSE, struct.pack(">i", len(token)) + token)
    )
    assert isinstance(ev, RequestReceived) and isinstance(ev.request, AuthResponse)


def test_large_frames_are_accepted_once_authenticated() -> None:
    conn = _authenticating()
    (auth,) = conn.receive_data(request_frame(dp.AuthResponseMessage(b"\0u\0p"), stream=1))
    conn.send(1, AuthSuccess(), auth.request)
    query = "SELECT * FROM t WHERE k = '" + "x" * (2 * PRE_AUTH_MAX_BODY) + "'"
    (ev,) = conn.receive_data(request_frame(dp.QueryMessage(query, 1), stream=2))
    assert isinstance(ev, RequestReceived) and ev.size > 2 * PRE_AUTH_MAX_BODY


def test_lz4_bomb_before_authentication_is_refused_before_decompressing() -> None:
    conn = _authenticating("lz4")
    declared = 50 * PRE_AUTH_MAX_BODY
    body = _lz4_bomb(declared)
    assert len(body) < PRE_AUTH_MAX_BODY  # the frame itself is within the limit
    (ev,) = conn.receive_data(encode_frame(4, 0x01, 5, OpCode.AUTH_RESPONSE, body))
    assert isinstance(ev, ProtocolViolation) and ev.stream == 5
    assert ev.error.message == (
        f"Request is too big: lz4 decompressed length {declared} exceeds maximum allowed {PRE_AUTH_MAX_BODY}"
    )


def test_snappy_declared_size_is_checked_before_authentication() -> None:
    conn = _authenticating("snappy")
    declared = 10 * PRE_AUTH_MAX_BODY
    body = bytes(cramjam.snappy.compress_raw(b"\0" * declared))
    (ev,) = conn.receive_data(encode_frame(4, 0x01, 6, OpCode.AUTH_RESPONSE, body))
    assert isinstance(ev, ProtocolViolation)
    assert (
        f"snappy decompressed length {declared} exceeds maximum allowed {PRE_AUTH_MAX_BODY}"
        in ev.error.message
    )


def test_declared_size_is_checked_against_the_frame_limit_once_ready() -> None:
    conn = Connection(max_frame_size=1000)
    options = {"CQL_VERSION": "3.0.0", "COMPRESSION": "lz4"}
    (ev,) = conn.receive_data(request_frame(dp.StartupMessage("3.3.1", options)))
    conn.send(ev.stream, conn.startup_response(), ev.request)
    (bad,) = conn.receive_data(encode_frame(4, 0x01, 7, OpCode.QUERY, _lz4_bomb(1001)))
    assert isinstance(bad, ProtocolViolation)
    assert "lz4 decompressed length 1001 exceeds maximum allowed 1000" in bad.error.message


def test_oversized_frame_once_ready_is_answered_and_skipped_and_the_connection_goes_on() -> None:
    """Past native_transport_max_frame_size the request is refused from its header as an invalid
    request; its body is discarded as it arrives (never buffered) and the next frame is served."""
    conn = Connection(max_frame_size=1000)
    (ev,) = conn.receive_data(request_frame(dp.StartupMessage("3.3.1", {"CQL_VERSION": "3.0.0"})))
    conn.send(ev.stream, conn.startup_response(), ev.request)
    size = 5000
    (bad,) = conn.receive_data(struct.pack(">BBhBi", 4, 0, 9, OpCode.QUERY, size) + b"x" * 100)
    assert isinstance(bad, ProtocolViolation) and not bad.fatal and bad.stream == 9
    assert isinstance(bad.error, InvalidRequest)
    assert bad.error.message == f"Request is too big: length {size} exceeds maximum allowed 1000"
    assert conn.receive_data(b"x" * 4000) == []
    following = request_frame(dp.QueryMessage("SELECT * FROM t", 1), stream=10)
    # The last body bytes and the next request arrive in one read.
    (ok,) = conn.receive_data(b"x" * 900 + following)
    assert isinstance(ok, RequestReceived) and ok.stream == 10
    assert conn.state is ConnState.READY


def test_budget_grants_at_once_while_there_is_room() -> None:
    budget = InFlightBudget(100)
    assert budget.try_acquire(60) == 60
    assert budget.try_acquire(40) == 40
    assert budget.available == 0
    assert budget.try_acquire(1) is None


def test_budget_requests_wait_then_are_granted_in_order_on_release() -> None:
    budget = InFlightBudget(100)
    first = budget.try_acquire(80)
    assert first == 80
    granted: list[tuple[str, int]] = []
    budget.wait(50, lambda c: granted.append(("a", c)))
    budget.wait(10, lambda c: granted.append(("b", c)))
    # A small request that would fit does not overtake a waiting one.
    assert budget.try_acquire(10) is None
    assert granted == [] and budget.waiting == 2
    budget.release(first)
    assert granted == [("a", 50), ("b", 10)]
    assert budget.available == 40


def test_budget_request_larger_than_the_budget_waits_for_all_of_it() -> None:
    budget = InFlightBudget(100)
    small = budget.try_acquire(1)
    assert small == 1
    assert budget.try_acquire(10_000) is None
    granted: list[int] = []
    budget.wait(10_000, granted.append)
    assert granted == []
    budget.release(small)
    assert granted == [100] and budget.available == 0


def test_budget_cancelled_waiter_lets_the_next_one_through() -> None:
    budget = InFlightBudget(100)
    held = budget.try_acquire(50)
    assert held == 50
    granted: list[str] = []

    def big(_charge: int) -> None:
        granted.append("big")

    budget.wait(100, big)
    budget.wait(20, lambda _c: granted.append("small"))
    budget.cancel(big)
    assert granted == ["small"]


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError):
        InFlightBudget(0)
