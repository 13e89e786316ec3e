"""Dedicated internode connections for bulk transfers: a file sent with ``os.sendfile``, received
with large ``recv_into`` buffers straight into the destination file.

Messages (``net.rpc``) go as msgpack frames over one shared connection per peer; a tablet file
sent that way is cut into frames, packed, buffered and unpacked on both sides. A dedicated
connection carries one file and nothing else:

* the receiving side dials the sender's internode port and exchanges the same HELLO frames as
  any connection (``RpcNode``'s authority: cluster, group0, host ids, the member's address), then
  sends one STREAM frame naming a verb and its payload (``dial``); the sender checks it like a
  request (``RpcNode.register_stream``), so a node that is not a member is refused the same way;
* the sender answers with one frame, its size (or an ERROR saying why not), then the bytes
  (``send_file``: ``socket.sendfile`` on a worker thread, so neither a page-cache miss nor the
  kernel's copy holds the event loop), and closes once the receiver has closed;
* the receiver reads exactly that many bytes into the file (``receive_file``, a worker thread)
  and closes. A connection that ends early is an error naming how much arrived.

Plaintext only: with internode TLS the bytes must go through the TLS layer, so callers use RPC
(``RpcNode.authority.must_encrypt`` says which); a STREAM frame on a TLS connection is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from typing import Any, BinaryIO, cast

from tabletdb.net.framing import LENGTH, MAX_FRAME, FrameError, decode_payload, encode_frame
from tabletdb.net.handshake import HandshakeRefused
from tabletdb.net.rpc import (
    HANDSHAKE_REPLY_TIMEOUT,
    Kind,
    PeerUnreachable,
    RemoteError,
    RpcNode,
    admit_hello_reply,
)

RECEIVE_BUFFER = 4 << 20
"""Bytes per ``recv_into``: loopback and fast links deliver megabytes per call when asked for them."""


class TransferCut(ConnectionError):
    """A dedicated transfer ended before all its bytes arrived (the sender stopped or died)."""


async def dial(rpc: RpcNode, peer: int, verb: str, payload: Any, timeout: float) -> tuple[socket.socket, Any]:
    """A new plaintext connection to ``peer``, admitted by both handshakes and handed to its
    stream handler for ``verb``; returns the socket and the handler's first answer. Raises
    ``PeerUnreachable`` (no connection, or refused at the handshake) or ``RemoteError`` (the
    handler refused)."""
    address = rpc.address_of(peer)
    if address is None:
        raise PeerUnreachable(f"node {peer} has no known address (add_peer first)")
    if rpc.authority.must_encrypt(peer):
        raise PeerUnreachable(f"node {peer}: internode TLS is required; a dedicated connection is plaintext")
    if rpc.faults.should_drop(peer):
        raise PeerUnreachable(f"node {peer}: partitioned by fault injection")
    loop = asyncio.get_running_loop()
    host, port = address
    try:
        (family, kind, proto, _, target), *_ = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise PeerUnreachable(f"node {peer} at {host}:{port}: {exc!r}") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        source = rpc.source_address()
        if source is not None:
            sock.bind(source)
        async with asyncio.timeout(rpc.connect_timeout):
            await loop.sock_connect(sock, target)
        async with asyncio.timeout(max(rpc.connect_timeout, HANDSHAKE_REPLY_TIMEOUT)):
            await loop.sock_sendall(
                sock, encode_frame([Kind.HELLO, 0, "", rpc.node_id, rpc.authority.hello(peer)])
            )
            admit_hello_reply(rpc.authority, await _frame(loop, sock), False, peer)
        await loop.sock_sendall(sock, encode_frame([Kind.STREAM, 0, verb, rpc.node_id, payload]))
        async with asyncio.timeout(timeout):
            answer = await _frame(loop, sock)
        if not isinstance(answer, list) or len(answer) != 5 or answer[0] not in (Kind.RESPONSE, Kind.ERROR):
            raise FrameError(f"answered {verb} with {answer!r:.100}")
        if answer[0] == Kind.ERROR:
            raise RemoteError(f"node {peer}: {answer[4]}")
        return sock, answer[4]
    except (HandshakeRefused, FrameError) as exc:
        sock.close()
        raise PeerUnreachable(f"node {peer} at {host}:{port}: {verb}: {exc}") from None
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
        sock.close()
        raise PeerUnreachable(f"node {peer} at {host}:{port}: {verb}: {exc!r}") from exc
    except BaseException:
        sock.close()
        raise


async def _frame(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> Any:
    """One frame, reading exactly its bytes (what follows it is the transfer's)."""
    (length,) = LENGTH.unpack(await _exactly(loop, sock, LENGTH.size))
    if length > MAX_FRAME:
        raise FrameError(f"frame length {length} exceeds the {MAX_FRAME}-byte limit")
    return decode_payload(await _exactly(loop, sock, length))


async def _exactly(loop: asyncio.AbstractEventLoop, sock: socket.socket, n: int) -> bytes:
    data = bytearray(n)
    view = memoryview(data)
    got = 0
    while got < n:
        read = await loop.sock_recv_into(sock, view[got:])
        if read == 0:
            raise asyncio.IncompleteReadError(bytes(data[:got]), n)
        got += read
    return bytes(data)


def receive_file(sock: socket.socket, out: BinaryIO, size: int, timeout: float) -> None:
    """Read exactly ``size`` bytes from ``sock`` into ``out`` (blocking: run on a worker thread);
    ``timeout`` bounds each wait for data. Closes the socket, which tells the sender it is done."""
    try:
        sock.settimeout(timeout)
        buffer = memoryview(bytearray(min(RECEIVE_BUFFER, max(size, 1))))
        fd = out.fileno()
        got = 0
        while got < size:
            n = sock.recv_into(buffer, min(len(buffer), size - got))
            if n == 0:
                raise TransferCut(f"the transfer ended after {got} of {size} bytes")
            written = 0
            while written < n:
                written += os.write(fd, buffer[written:n])
            got += n
    finally:
        sock.close()


async def send_file(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, file: BinaryIO, size: int, timeout: float
) -> None:
    """Send ``size`` bytes of ``file`` from offset 0 on a dedicated connection (after its
    answer frame), then wait for the receiver to close. The kernel copies the file into the
    socket (``sendfile``) on a worker thread, through a duplicate of the socket: the transport
    keeps it, paused, meanwhile."""
    await writer.drain()
    transport = cast(asyncio.Transport, writer.transport)  # a socket's, so it reads too (uvloop's
    transport.pause_reading()  # are not asyncio.Transport subclasses)
    raw = writer.get_extra_info("socket")
    out = socket.socket(fileno=os.dup(raw.fileno()))
    try:
        out.settimeout(timeout)
        sent = await asyncio.to_thread(out.sendfile, file, 0, size)
    finally:
        out.close()
    if sent != size:
        raise TransferCut(f"sent {sent} of {size} bytes (the file is shorter than its image)")
    transport.resume_reading()
    async with asyncio.timeout(timeout):
        with contextlib.suppress(ConnectionError):
            while await reader.read(1 << 16):
                pass  # the receiver sends nothing; its close is the end
