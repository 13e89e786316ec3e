"""Named-verb RPC between nodes over asyncio TCP: request/response with ids, and one-way messages.

Every node listens on one port (and, with internode TLS, on its TLS port) and keeps one outbound
connection per peer, opened lazily and re-opened after a failure (the next send reconnects).
Requests and one-way messages travel on the sender's outbound connection; responses come back on
the connection the request arrived on. A frame is ``[kind, id, verb, src, payload]`` (see
`Kind`); payloads are any msgpack value.

Each connection starts with a HELLO each way (`net.handshake`): the node's `Authority` admits
the peer or the connection is closed with an ERROR saying why. Handlers get the authenticated
peer's id as `src`; the frame's own `src` is not trusted. Every request and one-way message is
checked against the authority again (`refusal`), so a peer that stops being a member is cut off.

A handler is ``async def handler(src: int, payload) -> reply``; for one-way messages its result
is ignored. A handler that raises sends an ERROR frame, surfaced to the caller as `RemoteError`
with the remote message, so a bug on one node is reported on the other rather than timing out.
Fault injection (`FaultInjector`) is applied to every outgoing frame.

A *dedicated* connection (`net.dedicated`) carries one bulk transfer instead of messages: after
the same HELLO exchange its first frame is a STREAM frame naming a verb registered with
`register_stream`, checked against the authority like a request, and the connection is handed to
that handler, which owns it from then on (plaintext only: its bytes go out with `os.sendfile`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import itertools
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from tabletdb.cql.tracing import TraceSession
from tabletdb.cql.tracing import current as current_trace
from tabletdb.net.faults import FaultInjector
from tabletdb.net.framing import FrameError, encode_frame, read_frame
from tabletdb.net.handshake import Authority, HandshakeRefused, Peer, TrustAll
from tabletdb.net.rpc_tracing import (
    TRACED_FRAME,
    add_replica_events,
    open_replica_trace,
    replica_events,
    request_context,
)

log = logging.getLogger(__name__)

Handler = Callable[[int, Any], Awaitable[Any]]
StreamHandler = Callable[[int, Any, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
"""``async def handler(src, payload, reader, writer)``: owns a dedicated connection until it returns."""


HANDSHAKE_TIMEOUT = 10.0
"""How long an accepted connection may take to say who it is before it is closed."""
HANDSHAKE_REPLY_TIMEOUT = 5.0
"""How long a caller waits for the HELLO answer of a peer that accepted its connection (a
loaded node may take a while to schedule it; a refusal comes back at once)."""
MAX_WARNED = 1000
"""Distinct refusals logged at WARNING; after that they are logged at DEBUG (bounded memory)."""


class Kind(IntEnum):
    HELLO = 0
    """First frame each way on a connection: who is calling, and who answered."""
    REQUEST = 1
    RESPONSE = 2
    ERROR = 3
    ONE_WAY = 4
    STREAM = 5
    """First frame after the HELLOs of a dedicated connection: hand it to a stream handler."""


class RpcError(Exception):
    """Base of RPC failures."""


class RpcTimeout(RpcError, TimeoutError):
    pass


class PeerUnreachable(RpcError, ConnectionError):
    pass


class InjectedFailure(RpcError):
    """A request failed by this node's fault injector (``FaultInjector.fail``; tests only)."""


class RemoteError(RpcError):
    """The remote handler raised; the message carries its description."""


class Retry(Exception):
    """A handler cannot answer yet and the caller is expected to ask again (a seed that knows no
    group0 leader while the cluster forms): the caller gets it as a RemoteError like any other,
    but the handling node logs it at DEBUG, since it is part of normal start-up, not a failure."""


@dataclass(frozen=True)
class InternodeTls:
    """Internode TLS: contexts for both sides, the TLS port, and whether the plaintext port is
    also served (it is unless every connection must be TLS)."""

    server: ssl.SSLContext
    client: ssl.SSLContext
    port: int
    plaintext_too: bool


class _Connection:
    """One TCP connection: a writer with a lock (frames must not interleave) and a reader task."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer, encrypted: bool = False
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.peer = peer
        """Who is on the other end, as the handshake established."""
        self.encrypted = encrypted
        self.lock = asyncio.Lock()
        self.task: asyncio.Task[None] | None = None

    async def write(self, frame: list[Any]) -> None:
        async with self.lock:
            self.writer.write(encode_frame(frame))
            await self.writer.drain()

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.writer.close()


class RpcNode:
    """One node's messaging endpoint. Start with `start()`, stop with `stop()`."""

    def __init__(
        self,
        node_id: int,
        host: str = "127.0.0.1",
        port: int = 0,
        connect_timeout: float = 2.0,
        *,
        authority: Authority | None = None,
        tls: InternodeTls | None = None,
    ) -> None:
        """Without `authority` every peer is taken at its word (`TrustAll`): in-process tests
        and benches only."""
        self.node_id = node_id
        self.host = host
        self.port = port
        self.connect_timeout = connect_timeout
        self.authority: Authority = authority if authority is not None else TrustAll(node_id)
        self.tls = tls
        self.tls_port = tls.port if tls is not None else None
        self._warned: set[str] = set()
        self.faults = FaultInjector(seed=node_id)
        self._peers: dict[int, tuple[str, int]] = {}
        self._handlers: dict[str, Handler] = {}
        self._stream_handlers: dict[str, StreamHandler] = {}
        self._outbound: dict[int, _Connection] = {}
        self._connecting: dict[int, asyncio.Lock] = {}
        self._inbound: set[_Connection] = set()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._pending_peer: dict[int, int] = {}
        # Calls sent from a traced task: msg id -> (peer, the trace its reply's events join).
        self._traced: dict[int, tuple[int, TraceSession]] = {}
        self._ids = itertools.count(1)
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    # --- set-up ---------------------------------------------------------------------------------

    def register(self, verb: str, handler: Handler) -> None:
        if verb in self._handlers:
            raise ValueError(f"verb {verb!r} already has a handler on node {self.node_id}")
        self._handlers[verb] = handler

    def register_stream(self, verb: str, handler: StreamHandler) -> None:
        """Serve dedicated connections whose STREAM frame names ``verb`` (module docstring)."""
        if verb in self._stream_handlers:
            raise ValueError(f"stream verb {verb!r} already has a handler on node {self.node_id}")
        self._stream_handlers[verb] = handler

    def address_of(self, peer: int) -> tuple[str, int] | None:
        """Where ``peer`` listens for plaintext connections (None: unknown)."""
        return self._peers.get(peer)

    def add_peer(self, peer: int, host: str, port: int) -> None:
        """Where `peer` listens; a new address (a member restarted elsewhere) closes the
        connection to the old one, so the next message dials the new one."""
        old = self._peers.get(peer)
        self._peers[peer] = (host, port)
        conn = self._outbound.get(peer)
        if old is not None and old != (host, port) and conn is not None:
            self._drop_outbound(peer, conn)

    async def start(self) -> None:
        tls = self.tls
        if tls is None or tls.plaintext_too:
            server = await asyncio.start_server(self._accept_plain, self.host, self.port)
            self._servers.append(server)
            self.port = server.sockets[0].getsockname()[1]
        if tls is not None:
            server = await asyncio.start_server(self._accept_tls, self.host, tls.port, ssl=tls.server)
            self._servers.append(server)
            self.tls_port = server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for conn in [*self._outbound.values(), *self._inbound]:
            conn.close()
        self._outbound.clear()
        self._inbound.clear()
        for task in list(self._tasks):
            task.cancel()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(PeerUnreachable(f"node {self.node_id} is shutting down"))
        self._pending.clear()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    # --- sending --------------------------------------------------------------------------------

    async def call(self, peer: int, verb: str, payload: Any = None, timeout: float = 5.0) -> Any:
        """Send a request and wait for its response; RpcTimeout if none arrives in `timeout`."""
        self.fail_if_injected(peer, verb)
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self._pending_peer[msg_id] = peer
        frame = [Kind.REQUEST, msg_id, verb, self.node_id, payload]
        session = current_trace()
        if session is not None:  # the reply brings the replica's events (`net.rpc_tracing`)
            frame.append(request_context(session))
            self._traced[msg_id] = (peer, session)
        try:
            async with asyncio.timeout(timeout):
                await self._send(peer, frame)
                return await fut
        except TimeoutError:
            raise RpcTimeout(f"{verb} to node {peer}: no response within {timeout}s") from None
        finally:
            self._pending.pop(msg_id, None)
            self._pending_peer.pop(msg_id, None)
            self._traced.pop(msg_id, None)

    def fail_if_injected(self, peer: int, verb: str) -> None:
        """InjectedFailure if the fault injector fails ``verb`` towards ``peer`` (tests only).

        ``call`` asks it of every request; a caller that serves a request itself without the
        network (``peer`` is this node) asks it too where a test must be able to hold that path.
        """
        if self.faults.fails(peer, verb):
            raise InjectedFailure(f"{verb} to node {peer}: failed by test fault injection")

    def serves(self, verb: str) -> bool:
        """Whether a request handler is registered for ``verb`` here (every member registers the
        same ones, so a verb no node serves is a name to refuse)."""
        return verb in self._handlers

    async def send(self, peer: int, verb: str, payload: Any = None) -> bool:
        """Fire-and-forget; returns False if the message could not be handed to the network."""
        try:
            await self._send(peer, [Kind.ONE_WAY, 0, verb, self.node_id, payload])
            return True
        except (PeerUnreachable, OSError):
            return False

    async def _send(self, peer: int, frame: list[Any]) -> None:
        if self.faults.should_drop(peer):
            return
        delay = self.faults.delay_for(peer)
        if delay:
            await asyncio.sleep(delay)
        conn = await self._connection(peer)
        try:
            await conn.write(frame)
        except (ConnectionError, OSError) as exc:
            self._drop_outbound(peer, conn)
            raise PeerUnreachable(f"node {peer}: write failed: {exc}") from exc

    async def _connection(self, peer: int) -> _Connection:
        conn = self._outbound.get(peer)
        if conn is not None:
            return conn
        lock = self._connecting.setdefault(peer, asyncio.Lock())
        async with lock:
            conn = self._outbound.get(peer)
            if conn is not None:
                return conn
            if peer not in self._peers:
                raise PeerUnreachable(f"node {peer} has no known address (add_peer first)")
            conn = await self._open(peer, *self._peers[peer])
            conn.task = self._spawn(self._read_loop(conn, peer))
            self._outbound[peer] = conn
            return conn

    async def _open(self, peer: int, host: str, port: int) -> _Connection:
        """Connect (over TLS if the authority says so) and complete the handshake."""
        context: ssl.SSLContext | None = None
        if self.authority.must_encrypt(peer):
            if self.tls is None or self.tls_port is None:
                raise PeerUnreachable(f"node {peer}: internode TLS is required but not configured")
            context, port = self.tls.client, self.tls_port
        try:
            async with asyncio.timeout(self.connect_timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=context, local_addr=self.source_address()
                )
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise PeerUnreachable(f"node {peer} at {host}:{port}: connect failed: {exc!r}") from exc
        try:
            async with asyncio.timeout(max(self.connect_timeout, HANDSHAKE_REPLY_TIMEOUT)):
                writer.write(encode_frame([Kind.HELLO, 0, "", self.node_id, self.authority.hello(peer)]))
                await writer.drain()
                reply = await read_frame(reader)
            admitted = admit_hello_reply(self.authority, reply, context is not None, peer)
            return _Connection(reader, writer, admitted, context is not None)
        except (HandshakeRefused, FrameError) as exc:
            writer.close()
            self._warn_once(f"node {self.node_id}: handshake with node {peer} at {host}:{port} failed: {exc}")
            raise PeerUnreachable(f"node {peer} at {host}:{port}: handshake failed: {exc}") from None
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            writer.close()
            raise PeerUnreachable(f"node {peer} at {host}:{port}: handshake failed: {exc!r}") from exc

    def source_address(self) -> tuple[str, int] | None:
        """Connect from the address this node listens on (the one group0 records for it): peers
        check that a member's connection comes from the member's address."""
        with contextlib.suppress(ValueError):
            if not ipaddress.ip_address(self.host).is_unspecified:
                return (self.host, 0)
        return None

    def _drop_outbound(self, peer: int, conn: _Connection) -> None:
        if self._outbound.get(peer) is conn:
            del self._outbound[peer]
        conn.close()
        for msg_id, target in list(self._pending_peer.items()):
            fut = self._pending.get(msg_id)
            if target == peer and fut is not None and not fut.done():
                fut.set_exception(PeerUnreachable(f"connection to node {peer} lost"))

    # --- receiving ------------------------------------------------------------------------------

    async def _accept_plain(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._accept(reader, writer, encrypted=False)

    async def _accept_tls(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._accept(reader, writer, encrypted=True)

    async def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, encrypted: bool
    ) -> None:
        """The task asyncio runs per accepted connection. Cancelled at shutdown (a TLS connection
        may still be closing then), it ends quietly: nothing awaits it, and asyncio's stream
        server would log the cancellation as an error."""
        try:
            conn = await self._handshake(reader, writer, encrypted)
            if conn is None:
                return
            self._inbound.add(conn)
            try:
                await self._read_loop(conn, None)
            finally:
                self._inbound.discard(conn)
        except asyncio.CancelledError:
            writer.transport.abort()

    async def _handshake(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, encrypted: bool
    ) -> _Connection | None:
        """Admit the caller from its HELLO and answer with ours; None if it was refused (it got
        an ERROR saying why) or said nothing in time."""
        peername = writer.get_extra_info("peername")
        address = peername[0] if isinstance(peername, tuple) else peername  # not the port: log once per host
        try:
            async with asyncio.timeout(HANDSHAKE_TIMEOUT):
                hello = await read_frame(reader)
            if not isinstance(hello, list) or len(hello) != 5 or hello[0] != Kind.HELLO:
                raise HandshakeRefused(f"the first frame must be a HELLO, got {hello!r:.100}")
            peer = self.authority.admit(hello[4], encrypted, None, address)
            writer.write(encode_frame([Kind.HELLO, 0, "", self.node_id, self.authority.hello(None)]))
            await writer.drain()
            return _Connection(reader, writer, peer, encrypted)
        except (HandshakeRefused, FrameError) as exc:
            self._warn_once(f"node {self.node_id}: refused internode connection from {address}: {exc}")
            with contextlib.suppress(ConnectionError, OSError, FrameError):
                writer.write(encode_frame([Kind.ERROR, 0, "", self.node_id, str(exc)]))
                await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            log.debug(
                "node %s: internode connection from %s ended before its handshake: %r",
                self.node_id,
                address,
                exc,
            )
        writer.close()
        return None

    def _warn_once(self, message: str) -> None:
        """Refusals repeat with every reconnect attempt: WARNING the first time, DEBUG after."""
        if message in self._warned or len(self._warned) >= MAX_WARNED:
            log.debug("%s", message)
            return
        self._warned.add(message)
        log.warning("%s", message)

    async def _read_loop(self, conn: _Connection, outbound_peer: int | None) -> None:
        first = True
        try:
            while True:
                frame = await read_frame(conn.reader)
                if not isinstance(frame, list) or len(frame) not in (5, TRACED_FRAME):
                    raise FrameError(f"malformed RPC frame {frame!r:.100}")
                if frame[0] == Kind.STREAM:
                    if not first or outbound_peer is not None:  # replies may be on their way
                        raise FrameError("a STREAM frame may only open a connection")
                    await self._hand_over(conn, frame)
                    return
                first = False
                self._dispatch(conn, frame)
        except (asyncio.IncompleteReadError, ConnectionError, FrameError, OSError) as exc:
            if not isinstance(exc, asyncio.IncompleteReadError):
                log.warning("node %s: closing connection: %s", self.node_id, exc)
        finally:
            if outbound_peer is not None:
                self._drop_outbound(outbound_peer, conn)
            else:
                conn.close()

    async def _hand_over(self, conn: _Connection, frame: list[Any]) -> None:
        """Give a dedicated connection to its stream handler, or answer why not. The handler
        answers everything after this; if it fails, the connection is reset (never closed
        cleanly: the other end must not take a cut-short transfer for a whole one)."""
        _, _, verb, _, payload = frame[:5]
        handler = self._stream_handlers.get(verb) if isinstance(verb, str) else None
        refusal = self.authority.refusal(conn.peer, verb) if isinstance(verb, str) else "malformed verb"
        if refusal is None and handler is None:
            refusal = f"unknown stream verb {verb!r}"
        if refusal is None and conn.encrypted:
            refusal = (
                f"{verb!r} needs a plaintext connection (its bytes are sent with sendfile); over TLS use RPC"
            )
        if refusal is not None or handler is None:
            self._warn_once(f"node {self.node_id}: {refusal}")
            await self._reply(conn, [Kind.ERROR, 0, verb, self.node_id, f"Refused: {refusal}"])
            return
        try:
            await handler(conn.peer.node_id, payload, conn.reader, conn.writer)
        except Exception as exc:
            conn.writer.transport.abort()
            if isinstance(exc, (ConnectionError, OSError, RpcError, TimeoutError)):
                log.info("node %s: %s to node %s failed: %s", self.node_id, verb, conn.peer.node_id, exc)
            else:
                log.exception("node %s: %s to node %s failed", self.node_id, verb, conn.peer.node_id)

    def _dispatch(self, conn: _Connection, frame: list[Any]) -> None:
        kind, msg_id, verb, _claimed_src, payload = frame[:5]
        src = conn.peer.node_id  # the handshake's, never the frame's
        traced = len(frame) == TRACED_FRAME
        if kind in (Kind.RESPONSE, Kind.ERROR):
            fut = self._pending.get(msg_id)
            waiting = self._traced.get(msg_id) if traced else None
            if waiting is not None and waiting[0] == src:
                add_replica_events(waiting[1], self._address(conn, src), frame[5])
            if fut is not None and not fut.done():
                if kind == Kind.RESPONSE:
                    fut.set_result(payload)
                else:
                    fut.set_exception(RemoteError(f"node {src}: {payload}"))
        elif kind in (Kind.REQUEST, Kind.ONE_WAY):
            refusal = self.authority.refusal(conn.peer, verb) if isinstance(verb, str) else "malformed verb"
            if refusal is None:
                self._spawn(self._handle(conn, kind, msg_id, verb, src, payload, traced))
                return
            self._warn_once(f"node {self.node_id}: {refusal}")
            if kind == Kind.REQUEST:
                self._spawn(
                    self._reply(conn, [Kind.ERROR, msg_id, verb, self.node_id, f"Refused: {refusal}"])
                )

    async def _handle(
        self,
        conn: _Connection,
        kind: int,
        msg_id: int,
        verb: str,
        src: int,
        payload: Any,
        traced: bool = False,
    ) -> None:
        handler = self._handlers.get(verb)
        reply: list[Any]
        caller = self._address(conn, src) if traced else ""
        trace = open_replica_trace(verb, caller) if traced and kind == Kind.REQUEST else None
        if handler is None:
            reply = [Kind.ERROR, msg_id, verb, self.node_id, f"unknown verb {verb!r}"]
        else:
            try:
                reply = [Kind.RESPONSE, msg_id, verb, self.node_id, await handler(src, payload)]
            except Retry as exc:
                log.debug("node %s: %s from node %s: %s", self.node_id, verb, src, exc)
                reply = [Kind.ERROR, msg_id, verb, self.node_id, f"{type(exc).__name__}: {exc}"]
            except RpcError as exc:  # a node the handler asked in turn failed: expected, no traceback
                log.info("node %s: handler for %s from node %s failed: %s", self.node_id, verb, src, exc)
                reply = [Kind.ERROR, msg_id, verb, self.node_id, f"{type(exc).__name__}: {exc}"]
            except Exception as exc:
                log.exception("node %s: handler for %s from node %s failed", self.node_id, verb, src)
                reply = [Kind.ERROR, msg_id, verb, self.node_id, f"{type(exc).__name__}: {exc}"]
        if trace is not None:
            reply.append(replica_events(trace, verb, caller))
        if kind != Kind.REQUEST or self.faults.should_drop(src):
            return
        delay = self.faults.delay_for(src)
        if delay:
            await asyncio.sleep(delay)
        await self._reply(conn, reply)

    def _address(self, conn: _Connection, peer: int) -> str:
        """A peer's address for trace events: the one it connected from, else the one it listens on."""
        if conn.peer.source is not None:
            return conn.peer.source
        address = self.address_of(peer)
        return address[0] if address is not None else f"node {peer}"

    async def _reply(self, conn: _Connection, reply: list[Any]) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            await conn.write(reply)

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def admit_hello_reply(authority: Authority, reply: Any, encrypted: bool, peer: int) -> Peer:
    """The peer this node dialled, from its answer to our HELLO; raises HandshakeRefused."""
    if not isinstance(reply, list) or len(reply) != 5 or reply[0] not in (Kind.HELLO, Kind.ERROR):
        raise HandshakeRefused(f"answered the handshake with {reply!r:.100}")
    if reply[0] == Kind.ERROR:
        raise HandshakeRefused(f"refused this node: {reply[4]}")
    return authority.admit(reply[4], encrypted, peer, None)
