"""Garbage, truncated frames, unknown opcodes and absurd lengths never take the node down.

Each probe uses its own raw socket; a driver session on another connection must keep working
throughout, and the node must still answer afterwards.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest

from tests.harness.clients import scylla_cluster
from tests.harness.node import TestNode


def _frame(opcode: int, body: bytes, version: int = 4, stream: int = 1, flags: int = 0) -> bytes:
    return struct.pack(">BBhBi", version, flags, stream, opcode, len(body)) + body


def _string_map(items: dict[str, str]) -> bytes:
    out = struct.pack(">H", len(items))
    for k, v in items.items():
        for s in (k, v):
            b = s.encode()
            out += struct.pack(">H", len(b)) + b
    return out


STARTUP = _frame(0x01, _string_map({"CQL_VERSION": "3.3.1"}))


def _exchange(node: TestNode, payload: bytes, timeout: float = 2.0) -> bytes:
    """Send `payload`; return whatever the server answers before closing or going quiet."""
    with socket.create_connection((node.host, node.port), timeout=timeout) as sock:
        sock.sendall(payload)
        chunks = []
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                chunks.append(data)
                if sum(map(len, chunks)) > 9 and _complete(b"".join(chunks)):
                    break
        except (TimeoutError, ConnectionResetError):
            pass
        return b"".join(chunks)


def _complete(data: bytes) -> bool:
    length = struct.unpack(">i", data[5:9])[0]
    return len(data) >= 9 + length


def _error_code(response: bytes) -> int | None:
    if len(response) < 13 or response[4] != 0x00:
        return None
    return int(struct.unpack(">i", response[9:13])[0])


PROBES: dict[str, bytes] = {
    "random garbage": bytes(range(256)) * 4,
    "http request": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    "version 5": _frame(0x05, b"", version=5),
    "version 2": _frame(0x05, b"", version=2),
    "unknown opcode": _frame(0x42, b""),
    "query before startup": _frame(0x07, b"\x00\x00\x00\x01x\x00\x01\x00"),
    "absurd length": struct.pack(">BBhBi", 4, 0, 1, 0x05, 0x7FFFFFF0),
    "negative length": struct.pack(">BBhBi", 4, 0, 1, 0x05, -5),
    "truncated header": b"\x04\x00\x00",
    "truncated body": _frame(0x01, _string_map({"CQL_VERSION": "3.3.1"}))[:-3],
    "startup then malformed query": STARTUP + _frame(0x07, b"\x00\x00\xff\xff"),
    "startup then bad compression": _frame(0x01, _string_map({"COMPRESSION": "zstd-9000"})),
    "startup then garbage query text": STARTUP + _frame(0x07, b"\x00\x00\x00\x03\xff\xfe\xfd\x00\x01\x00"),
}


@pytest.fixture(scope="module")
def watcher(node: TestNode) -> Any:
    with scylla_cluster(node) as cluster:
        yield cluster.connect()


ANSWERED = ("version 5", "version 2", "unknown opcode", "query before startup")
"""Probes that must get an error frame: wait for it as long as a busy box needs (the wait ends
when the frame is complete). The others may be met with silence, so a short wait ends them."""


@pytest.mark.parametrize("name", list(PROBES))
def test_hostile_bytes_get_an_error_or_a_close(node: TestNode, watcher: Any, name: str) -> None:
    response = _exchange(node, PROBES[name], timeout=60.0 if name in ANSWERED else 2.0)
    if response:
        assert response[0] & 0x80, f"{name}: the answer is not a response frame: {response[:20]!r}"
    if name in ANSWERED:
        assert _error_code(response) == 0x000A, f"{name}: expected a protocol error, got {response[:40]!r}"
    if name == "version 5":
        assert b"nvalid or unsupported protocol version: 5" in response
    assert watcher.execute("SELECT key FROM system.local").one().key == "local"


def test_many_connections_with_garbage_leave_node_serving(node: TestNode, watcher: Any) -> None:
    for i in range(50):
        _exchange(node, bytes([i % 256]) * (i * 37 + 1), timeout=1.0)
    assert watcher.execute("SELECT key FROM system.local").one().key == "local"
    assert node.running
