"""Dedicated internode connections for bulk transfers: a file sent with ``os.sendfile``, received
with ``os.splice`` straight into the destination file, and checksummed end to end.

Messages (``net.rpc``) go as msgpack frames over one shared connection per peer; a tablet file
sent that way is cut into frames, packed, buffered and unpacked on both sides. A dedicated
connection carries one file and nothing else:

* the receiving side dials the sender's internode port and exchanges the same HELLO frames as
  any connection (``RpcNode``'s authority: cluster, group0, host ids, the member's address), then
  sends one STREAM frame naming a verb and its payload (``dial``); the sender checks it like a
  request (``RpcNode.register_stream``), so a node that is not a member is refused the same way;
* the sender answers with one frame, its size (or an ERROR saying why not), then the bytes
  (``send_file``: ``socket.sendfile`` on a worker thread, so neither a page-cache miss nor the
  kernel's copy holds the event loop), then one trailer frame, ``[DIGEST, checksum]`` of the
  bytes it sent (``net.file_bytes.digest_of``, computed on another worker thread meanwhile), and
  closes once the receiver has closed;
* the receiver moves exactly that many bytes into the file (``receive_file``, a worker thread:
  ``net.file_bytes.splice_into``), checksums what it wrote as it goes (``TrailingDigest``),
  reads the trailer and compares:
  a difference is ``TransferCorrupt``, a connection that ends early ``TransferCut``, each naming
  how much arrived. A receiver that returns normally holds exactly the sender's bytes.

Plaintext only: with internode TLS the bytes must go through the TLS layer, so callers use RPC
(``RpcNode.authority.must_encrypt`` says which); a STREAM frame on a TLS connection is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from tabletdb.net.file_bytes import (
    DIGEST,
    TrailingDigest,
    TransferCut,
    digest_of,
    recv_exactly,
    splice_into,
)
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

__all__ = [
    "TransferCorrupt",
    "TransferCut",
    "connect",
    "dial",
    "open_stream",
    "receive_file",
    "send_file",
    "send_trailer",
]


class TransferCorrupt(ConnectionError):
    """The bytes a dedicated transfer wrote differ from the bytes the sender sent (checksums)."""


async def dial(rpc: RpcNode, peer: int, verb: str, payload: Any, timeout: float) -> tuple[socket.socket, Any]:
    """A new plaintext connection to ``peer``, admitted by both handshakes and handed to its
    stream handler for ``verb``; returns the socket and the handler's first answer. Raises
    ``PeerUnreachable`` (no connection, or refused at the handshake) or ``RemoteError`` (the
    handler refused)."""
    return await open_stream(rpc, await connect(rpc, peer), peer, verb, payload, timeout)


async def connect(rpc: RpcNode, peer: int) -> socket.socket:
    """``dial``'s first half: a new plaintext connection to ``peer`` admitted by both handshakes,
    not yet handed to a handler (the peer waits for its STREAM frame: ``open_stream``). A caller
    may connect while it is still asking the peer what to fetch, and close the socket unused."""
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
    with _closed_on_failure(sock, f"node {peer} at {host}:{port}"):
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
    return sock


@contextlib.contextmanager
def _closed_on_failure(sock: socket.socket, where: str) -> Iterator[None]:
    """Close ``sock`` if the block raises; protocol and network failures become PeerUnreachable
    naming ``where`` (a refusal's text as is, an OS error with its type)."""
    try:
        yield
    except (HandshakeRefused, FrameError) as exc:
        sock.close()
        raise PeerUnreachable(f"{where}: {exc}") from None
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
        sock.close()
        raise PeerUnreachable(f"{where}: {exc!r}") from exc
    except BaseException:
        sock.close()
        raise


async def open_stream(
    rpc: RpcNode, sock: socket.socket, peer: int, verb: str, payload: Any, timeout: float
) -> tuple[socket.socket, Any]:
    """``dial``'s second half on a socket from ``connect``: the STREAM frame, and the handler's
    first answer. Closes the socket if it raises."""
    loop = asyncio.get_running_loop()
    with _closed_on_failure(sock, f"node {peer}: {verb}"):
        await loop.sock_sendall(sock, encode_frame([Kind.STREAM, 0, verb, rpc.node_id, payload]))
        async with asyncio.timeout(timeout):
            answer = await _frame(loop, sock)
        if not isinstance(answer, list) or len(answer) != 5 or answer[0] not in (Kind.RESPONSE, Kind.ERROR):
            raise FrameError(f"answered {verb} with {answer!r:.100}")
        if answer[0] == Kind.ERROR:
            raise RemoteError(f"node {peer}: {answer[4]}")
    return sock, answer[4]


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
    """Move exactly ``size`` bytes from ``sock`` into ``out`` (open for reading and writing, at
    offset 0) and check them against the sender's trailer (blocking: run on a worker thread);
    ``timeout`` bounds each wait for data. Closes the socket, which tells the sender it is done."""
    fd = out.fileno()
    checksum = TrailingDigest(fd, size)
    try:
        splice_into(sock, fd, size, timeout, checksum.written)
        (length,) = LENGTH.unpack(recv_exactly(sock, LENGTH.size, timeout))
        if length > MAX_FRAME:
            raise FrameError(f"trailer length {length} exceeds the {MAX_FRAME}-byte limit")
        trailer = decode_payload(recv_exactly(sock, length, timeout))
        if not (isinstance(trailer, list) and len(trailer) == 2 and trailer[0] == DIGEST):
            raise TransferCorrupt(f"the sender's trailer is {trailer!r:.100}, not [{DIGEST!r}, checksum]")
        received = checksum.result()
        if received != trailer[1]:
            raise TransferCorrupt(
                f"the {size} bytes written do not match the sender's: {DIGEST} {received.hex()} "
                f"here, {bytes(trailer[1]).hex()} sent"
            )
    finally:
        checksum.stop()
        sock.close()


async def send_file(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    file: BinaryIO,
    size: int,
    timeout: float,
    tail: bytes = b"",
) -> None:
    """Send ``size`` bytes of ``file`` from offset 0 on a dedicated connection (after its
    answer frame), then ``tail``, then the checksum of both, then wait for the receiver to close.
    The kernel copies the file into the socket (``sendfile``) on a worker thread, through a
    duplicate of the socket: the transport keeps it, paused, meanwhile; another worker thread
    checksums the same bytes from the page cache at the same time."""
    await writer.drain()
    transport = cast(asyncio.Transport, writer.transport)  # a socket's, so it reads too (uvloop's
    transport.pause_reading()  # are not asyncio.Transport subclasses)
    raw = writer.get_extra_info("socket")
    out = socket.socket(fileno=os.dup(raw.fileno()))
    checksum = asyncio.ensure_future(asyncio.to_thread(digest_of, file.fileno(), size, tail))
    try:
        out.settimeout(timeout)
        sent = await asyncio.to_thread(_send_all, out, file, size, tail)
    finally:
        out.close()
        await asyncio.wait([checksum])  # the thread reads the file: it must finish before the file closes
        checksum.exception()  # seen here, raised below by result() if the send itself went well
    if sent != size:
        raise TransferCut(f"sent {sent} of {size} bytes (the file is shorter than its image)")
    transport.resume_reading()
    await send_trailer(reader, writer, checksum.result(), timeout)


def _send_all(out: socket.socket, file: BinaryIO, size: int, tail: bytes) -> int:
    """The file's bytes, then the tail's (blocking); how many of the file's went."""
    sent = out.sendfile(file, 0, size) if size else 0
    if sent == size and tail:
        out.sendall(tail)
    return sent


async def send_trailer(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, checksum: bytes, timeout: float
) -> None:
    """The trailer after a file's bytes, then wait for the receiver to close."""
    writer.write(encode_frame([DIGEST, checksum]))
    async with asyncio.timeout(timeout):
        with contextlib.suppress(ConnectionError):
            await writer.drain()
            while await reader.read(1 << 16):
                pass  # the receiver sends nothing; its close is the end
