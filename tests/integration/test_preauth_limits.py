"""Unauthenticated clients cannot grow the node's memory, and idle connections are closed.

A real node with PasswordAuthenticator gets, over raw sockets, an AUTH_RESPONSE frame far over
the pre-authentication cap (streamed until the node hangs up) and lz4 bombs: small compressed
AUTH_RESPONSE bodies declaring tens of megabytes. The node must refuse each with a protocol error
naming the limit, its resident memory must stay within a bound, and a normal driver must still
log in afterwards.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import lz4.block
import pytest
from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator"}
PRE_AUTH_MAX_BODY = 100_000
PROTOCOL_ERROR = 0x000A
STARTUP, AUTHENTICATE, AUTH_RESPONSE, ERROR = 0x01, 0x03, 0x0F, 0x00
RSS_GROWTH_BOUND = 64 * 1024 * 1024
"""What the probes may add to the node's RSS; without the limits they add hundreds of MB."""


@pytest.fixture(scope="module")
def auth_node(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNode]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("preauth"))
    try:
        yield factory.start_node(options=AUTH_OPTIONS)
    finally:
        assert not factory.cleanup()


def _frame(opcode: int, body: bytes, stream: int = 1, flags: int = 0) -> bytes:
    return struct.pack(">BBhBi", 4, flags, stream, opcode, len(body)) + body


def _string_map(items: dict[str, str]) -> bytes:
    out = struct.pack(">H", len(items))
    for k, v in items.items():
        for s in (k, v):
            b = s.encode()
            out += struct.pack(">H", len(b)) + b
    return out


def _read_frame(sock: socket.socket) -> tuple[int, int, bytes] | None:
    """(flags, opcode, body) of the next response frame, or None if the node closed first."""
    header = _read_exactly(sock, 9)
    if header is None:
        return None
    _version, flags, _stream, opcode, length = struct.unpack(">BBhBi", header)
    body = _read_exactly(sock, length)
    return None if body is None else (flags, opcode, body)


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def _lz4(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + bytes(lz4.block.compress(data, store_size=False))


def _unlz4(data: bytes) -> bytes:
    size = struct.unpack(">i", data[:4])[0]
    return bytes(lz4.block.decompress(data[4:], uncompressed_size=size)) if size else b""


def _error(flags: int, opcode: int, body: bytes) -> tuple[int, str]:
    assert opcode == ERROR, f"expected an ERROR, got opcode {opcode}"
    if flags & 0x01:
        body = _unlz4(body)
    code = struct.unpack(">i", body[:4])[0]
    length = struct.unpack(">H", body[4:6])[0]
    return code, body[6 : 6 + length].decode()


def _authenticating(node: TestNode, compression: str | None = None) -> socket.socket:
    sock = socket.create_connection((node.host, node.port), timeout=60)
    options = {"CQL_VERSION": "3.3.1"} | ({"COMPRESSION": compression} if compression else {})
    sock.sendall(_frame(STARTUP, _string_map(options)))
    reply = _read_frame(sock)
    assert reply is not None and reply[1] == AUTHENTICATE
    return sock


def _rss(node: TestNode) -> int:
    pid = node.process.pid
    assert pid is not None
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc status")


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_oversized_pre_auth_frame_and_lz4_bombs_keep_memory_bounded(auth_node: TestNode) -> None:
    before = _rss(auth_node)

    # An AUTH_RESPONSE declaring 200 MB, streamed: refused from its header, connection closed.
    with _authenticating(auth_node) as sock:
        declared = 200 * 1024 * 1024
        sock.sendall(struct.pack(">BBhBi", 4, 0, 7, AUTH_RESPONSE, declared))
        chunk = b"\0" * (1024 * 1024)
        try:
            for _ in range(64):
                sock.sendall(chunk)
        except OSError:
            pass  # the node hung up, as it should
        reply = _read_frame(sock)
        assert reply is not None
        code, message = _error(*reply)
        assert code == PROTOCOL_ERROR
        assert message == (
            f"Request is too big: length {declared} exceeds maximum allowed {PRE_AUTH_MAX_BODY} "
            "before authentication"
        )
        assert _closed(sock)

    # lz4 bombs under the frame cap but declaring 20 MB each: refused before decompressing.
    bomb_size = 20 * 1024 * 1024
    token = b"\0cassandra\0" + b"\0" * (bomb_size - 11)
    bomb = _lz4(struct.pack(">i", len(token)) + token)
    assert len(bomb) < PRE_AUTH_MAX_BODY
    for _ in range(4):
        with _authenticating(auth_node, "lz4") as sock:
            sock.sendall(_frame(AUTH_RESPONSE, bomb, stream=3, flags=0x01))
            reply = _read_frame(sock)
            assert reply is not None
            code, message = _error(*reply)
            assert code == PROTOCOL_ERROR
            assert (
                f"decompressed length {len(token) + 4} exceeds maximum allowed {PRE_AUTH_MAX_BODY}" in message
            )

    assert _rss(auth_node) - before < RSS_GROWTH_BOUND

    auth = PlainTextAuthProvider("cassandra", "cassandra")
    with scylla_cluster(auth_node, auth_provider=auth, compression="lz4") as cluster:
        assert cluster.connect().execute("SELECT release_version FROM system.local").one() is not None


def test_idle_connections_are_closed(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options={"native_transport_idle_timeout_in_ms": 300})
    # Quiet before STARTUP, and quiet after it: both are closed by the node.
    with socket.create_connection((node.host, node.port), timeout=120) as quiet:
        assert _closed(quiet)
    with socket.create_connection((node.host, node.port), timeout=120) as ready:
        ready.sendall(_frame(STARTUP, _string_map({"CQL_VERSION": "3.3.1"})))
        reply = _read_frame(ready)
        assert reply is not None and reply[1] == 0x02  # READY
        assert _closed(ready)
    # A connection in use is not closed: the driver keeps querying through its heartbeats.
    with scylla_cluster(node) as cluster:
        assert cluster.connect().execute("SELECT release_version FROM system.local").one() is not None


def test_connections_past_the_limit_are_refused(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options={"native_transport_max_concurrent_connections": 2})
    held = [socket.create_connection((node.host, node.port), timeout=60) for _ in range(2)]
    try:
        # The node has accepted both; a third is closed on accept.
        for sock in held:
            sock.sendall(_frame(0x05, b""))  # OPTIONS
            reply = _read_frame(sock)
            assert reply is not None and reply[1] == 0x06  # SUPPORTED
        with socket.create_connection((node.host, node.port), timeout=60) as extra:
            assert _closed(extra)
    finally:
        for sock in held:
            sock.close()
