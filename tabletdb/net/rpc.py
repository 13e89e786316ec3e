"""Named-verb RPC between nodes over asyncio TCP: request/response with ids, and one-way messages.

Every node listens on one port and keeps one outbound connection per peer, opened lazily and
re-opened after a failure (the next send reconnects). Requests and one-way messages travel on
the sender's outbound connection; responses come back on the connection the request arrived
on. A frame is ``[kind, id, verb, src, payload]`` (see `Kind`); payloads are any msgpack value.

A handler is ``async def handler(src: int, payload) -> reply``; for one-way messages its result
is ignored. A handler that raises sends an ERROR frame, surfaced to the caller as `RemoteError`
with the remote message, so a bug on one node is reported on the other rather than timing out.
Fault injection (`FaultInjector`) is applied to every outgoing frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Awaitable, Callable
from enum import IntEnum
from typing import Any

from tabletdb.net.faults import FaultInjector
from tabletdb.net.framing import FrameError, encode_frame, read_frame

log = logging.getLogger(__name__)

Handler = Callable[[int, Any], Awaitable[Any]]


class Kind(IntEnum):
    HELLO = 0
    """First frame on an outbound connection: tells the acceptor who is calling."""
    REQUEST = 1
    RESPONSE = 2
    ERROR = 3
    ONE_WAY = 4


class RpcError(Exception):
    """Base of RPC failures."""


class RpcTimeout(RpcError, TimeoutError):
    pass


class PeerUnreachable(RpcError, ConnectionError):
    pass


class RemoteError(RpcError):
    """The remote handler raised; the message carries its description."""


class _Connection:
    """One TCP connection: a writer with a lock (frames must not interleave) and a reader task."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
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
        self, node_id: int, host: str = "127.0.0.1", port: int = 0, connect_timeout: float = 2.0
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.connect_timeout = connect_timeout
        self.faults = FaultInjector(seed=node_id)
        self._peers: dict[int, tuple[str, int]] = {}
        self._handlers: dict[str, Handler] = {}
        self._outbound: dict[int, _Connection] = {}
        self._connecting: dict[int, asyncio.Lock] = {}
        self._inbound: set[_Connection] = set()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._pending_peer: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    # --- set-up ---------------------------------------------------------------------------------

    def register(self, verb: str, handler: Handler) -> None:
        if verb in self._handlers:
            raise ValueError(f"verb {verb!r} already has a handler on node {self.node_id}")
        self._handlers[verb] = handler

    def add_peer(self, peer: int, host: str, port: int) -> None:
        self._peers[peer] = (host, port)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
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
        if self._server is not None:
            await self._server.wait_closed()

    # --- sending --------------------------------------------------------------------------------

    async def call(self, peer: int, verb: str, payload: Any = None, timeout: float = 5.0) -> Any:
        """Send a request and wait for its response; RpcTimeout if none arrives in `timeout`."""
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        self._pending_peer[msg_id] = peer
        try:
            async with asyncio.timeout(timeout):
                await self._send(peer, [Kind.REQUEST, msg_id, verb, self.node_id, payload])
                return await fut
        except TimeoutError:
            raise RpcTimeout(f"{verb} to node {peer}: no response within {timeout}s") from None
        finally:
            self._pending.pop(msg_id, None)
            self._pending_peer.pop(msg_id, None)

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
            host, port = self._peers[peer]
            try:
                async with asyncio.timeout(self.connect_timeout):
                    reader, writer = await asyncio.open_connection(host, port)
            except (OSError, TimeoutError) as exc:
                raise PeerUnreachable(f"node {peer} at {host}:{port}: connect failed: {exc!r}") from exc
            conn = _Connection(reader, writer)
            await conn.write([Kind.HELLO, 0, "", self.node_id, None])
            conn.task = self._spawn(self._read_loop(conn, peer))
            self._outbound[peer] = conn
            return conn

    def _drop_outbound(self, peer: int, conn: _Connection) -> None:
        if self._outbound.get(peer) is conn:
            del self._outbound[peer]
        conn.close()
        for msg_id, target in list(self._pending_peer.items()):
            fut = self._pending.get(msg_id)
            if target == peer and fut is not None and not fut.done():
                fut.set_exception(PeerUnreachable(f"connection to node {peer} lost"))

    # --- receiving ------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = _Connection(reader, writer)
        self._inbound.add(conn)
        try:
            await self._read_loop(conn, None)
        finally:
            self._inbound.discard(conn)

    async def _read_loop(self, conn: _Connection, outbound_peer: int | None) -> None:
        try:
            while True:
                frame = await read_frame(conn.reader)
                if not isinstance(frame, list) or len(frame) != 5:
                    raise FrameError(f"malformed RPC frame {frame!r:.100}")
                self._dispatch(conn, frame)
        except (asyncio.IncompleteReadError, ConnectionError, FrameError, OSError) as exc:
            if not isinstance(exc, asyncio.IncompleteReadError):
                log.warning("node %s: closing connection: %s", self.node_id, exc)
        finally:
            if outbound_peer is not None:
                self._drop_outbound(outbound_peer, conn)
            else:
                conn.close()

    def _dispatch(self, conn: _Connection, frame: list[Any]) -> None:
        kind, msg_id, verb, src, payload = frame
        if kind in (Kind.RESPONSE, Kind.ERROR):
            fut = self._pending.get(msg_id)
            if fut is not None and not fut.done():
                if kind == Kind.RESPONSE:
                    fut.set_result(payload)
                else:
                    fut.set_exception(RemoteError(f"node {src}: {payload}"))
        elif kind in (Kind.REQUEST, Kind.ONE_WAY):
            self._spawn(self._handle(conn, kind, msg_id, verb, src, payload))

    async def _handle(
        self, conn: _Connection, kind: int, msg_id: int, verb: str, src: int, payload: Any
    ) -> None:
        handler = self._handlers.get(verb)
        reply: list[Any]
        if handler is None:
            reply = [Kind.ERROR, msg_id, verb, self.node_id, f"unknown verb {verb!r}"]
        else:
            try:
                reply = [Kind.RESPONSE, msg_id, verb, self.node_id, await handler(src, payload)]
            except Exception as exc:
                log.exception("node %s: handler for %s from node %s failed", self.node_id, verb, src)
                reply = [Kind.ERROR, msg_id, verb, self.node_id, f"{type(exc).__name__}: {exc}"]
        if kind != Kind.REQUEST or self.faults.should_drop(src):
            return
        delay = self.faults.delay_for(src)
        if delay:
            await asyncio.sleep(delay)
        with contextlib.suppress(ConnectionError, OSError):
            await conn.write(reply)

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
