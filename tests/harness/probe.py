"""CQL readiness probe: a hand-written OPTIONS request, independent of the server's own codec.

"Ready" means a client can talk to the node, not merely that a port accepts connections: we send
a v4 OPTIONS frame (9-byte header, empty body) and require a SUPPORTED answer on stream 0 that
contains CQL_VERSION and COMPRESSION (the keys the drivers cannot live without).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import time
from collections.abc import Callable

HEADER = struct.Struct(">BBhBi")
OPCODE_ERROR = 0x00
OPCODE_OPTIONS = 0x05
OPCODE_SUPPORTED = 0x06
MAX_BODY = 1 << 20


class ProbeError(Exception):
    """The endpoint answered, but not like a CQL v4 server."""


def options_frame(stream: int = 0, version: int = 4) -> bytes:
    return HEADER.pack(version, 0, stream, OPCODE_OPTIONS, 0)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(chunks)} of {n} bytes")
        chunks += chunk
    return bytes(chunks)


def parse_string_multimap(body: bytes) -> dict[str, list[str]]:
    """Decode a `[string multimap]` (short count, then string key + string list per entry)."""
    pos = 0

    def read_short() -> int:
        nonlocal pos
        if pos + 2 > len(body):
            raise ProbeError(f"SUPPORTED body truncated at byte {pos}")
        (value,) = struct.unpack_from(">H", body, pos)
        pos += 2
        return int(value)

    def read_string() -> str:
        nonlocal pos
        length = read_short()
        if pos + length > len(body):
            raise ProbeError(f"SUPPORTED string of {length} bytes runs past the body at byte {pos}")
        text = body[pos : pos + length].decode("utf-8")
        pos += length
        return text

    out: dict[str, list[str]] = {}
    for _ in range(read_short()):
        key = read_string()
        out[key] = [read_string() for _ in range(read_short())]
    if pos != len(body):
        raise ProbeError(f"{len(body) - pos} trailing bytes after the SUPPORTED multimap")
    return out


def probe_options(
    host: str, port: int, timeout: float = 5.0, ssl_context: ssl.SSLContext | None = None
) -> dict[str, list[str]]:
    """Send OPTIONS (over TLS with `ssl_context`) and return the SUPPORTED multimap; raise
    OSError/ProbeError otherwise."""
    with contextlib.ExitStack() as stack:
        sock = stack.enter_context(socket.create_connection((host, port), timeout=timeout))
        if ssl_context is not None:
            sock = stack.enter_context(ssl_context.wrap_socket(sock))
        sock.sendall(options_frame())
        version, _flags, stream, opcode, length = HEADER.unpack(_recv_exact(sock, HEADER.size))
        if not 0 <= length <= MAX_BODY:
            raise ProbeError(f"response body length {length} outside 0..{MAX_BODY}")
        body = _recv_exact(sock, length)
    if version != 0x84:
        raise ProbeError(f"response version byte {version:#04x}, expected 0x84")
    if stream != 0:
        raise ProbeError(f"response on stream {stream}, expected 0")
    if opcode == OPCODE_ERROR:
        raise ProbeError(f"server answered OPTIONS with ERROR: {body[6:].decode('utf-8', 'replace')}")
    if opcode != OPCODE_SUPPORTED:
        raise ProbeError(f"server answered OPTIONS with opcode {opcode:#04x}, expected SUPPORTED")
    supported = parse_string_multimap(body)
    missing = [key for key in ("CQL_VERSION", "COMPRESSION") if key not in supported]
    if missing:
        raise ProbeError(f"SUPPORTED lacks {', '.join(missing)} (drivers fail without them): {supported}")
    return supported


def wait_cql_ready(
    host: str,
    port: int,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    interval: float = 0.05,
    ssl_context: ssl.SSLContext | None = None,
) -> dict[str, list[str]]:
    """Poll until OPTIONS is answered; stop early if `alive()` turns false (the server died).

    Connection refusals and resets are expected while the server starts; a malformed answer
    (ProbeError) is not retried past the deadline either, but it is kept as the reason.
    """
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        if not alive():
            raise ProbeError(f"server process exited before {host}:{port} became CQL-ready")
        try:
            wait = max(0.5, min(5.0, deadline - time.monotonic()))
            return probe_options(host, port, timeout=wait, ssl_context=ssl_context)
        except (OSError, ProbeError) as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"{host}:{port} not CQL-ready after {timeout:.0f}s; last error: {last_error!r}"
            )
        time.sleep(interval)


def wait_tcp_listening(
    host: str,
    port: int,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    interval: float = 0.05,
) -> None:
    """Poll until `host:port` accepts a TCP connection (the REST API, which starts after CQL)."""
    deadline = time.monotonic() + timeout
    while True:
        if not alive():
            raise ProbeError(f"server process exited before {host}:{port} accepted connections")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{host}:{port} not listening after {timeout:.0f}s; last error: {exc!r}"
                ) from None
        time.sleep(interval)
