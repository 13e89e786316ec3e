"""The asyncio shell around `Connection`: sockets, request tasks, write coalescing, events.

Each request runs in its own task so slow queries do not block other streams of the same
connection; responses are written as they complete. Output produced during one loop tick is
joined into a single `transport.write` (call_soon-scheduled flush), which is what makes pipelined
driver traffic cheap. Back-pressure: when the transport's buffer is full or too many requests are
in flight, we stop reading from that socket until it drains. Requests also charge their bytes to
a server-wide `InFlightBudget`; a connection whose request does not fit waits, not reading, until
answered requests give bytes back. `max_connections` refuses connections past a count and
`idle_timeout` closes connections that send nothing for that long with nothing in flight, so
idle or abandoned sockets (authenticated or not) cannot pile up.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
import ssl
import uuid
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from typing import cast

from tabletdb.cql.errors import CqlError, ServerError
from tabletdb.cql.results import RowsResult, SetKeyspaceResult
from tabletdb.cql.tracing import TraceSession, TraceStore, activate
from tabletdb.protocol.budget import InFlightBudget
from tabletdb.protocol.connection import (
    EVENT_STREAM,
    Connection,
    ConnectionEvent,
    ConnState,
    ProtocolViolation,
)
from tabletdb.protocol.extensions import KNOWN_EXTENSIONS
from tabletdb.protocol.frames import DEFAULT_MAX_FRAME_SIZE
from tabletdb.protocol.handler import ClientState, Handler, tls_protocol_name
from tabletdb.protocol.requests import (
    AuthResponse,
    Batch,
    Execute,
    Options,
    Prepare,
    Query,
    Register,
    Request,
    Startup,
)
from tabletdb.protocol.responses import (
    AuthSuccess,
    ErrorResponse,
    Event,
    Ready,
    Reply,
    Response,
    StatusChangeEvent,
    Supported,
    TopologyChangeEvent,
)
from tabletdb.protocol.sasl import parse_plain_token
from tabletdb.protocol.trace_requests import open_session

DEFAULT_MAX_IN_FLIGHT = 1024

_log = logging.getLogger(__name__)


def default_in_flight_bytes() -> int:
    """A tenth of the machine's memory, Scylla's default share for the CQL transport's requests."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 4 * 1024**3
    return max(total // 10, 16 * 1024 * 1024)


class CqlServer:
    """Serves the CQL native protocol for one node.

    `port=0` binds an ephemeral port (see `port` after `start`). With `shard_aware_port` set, a
    second listener assigns connections to shard `client source port % nr_shards`; the main port
    assigns shards round-robin.

    With `tls` (client_encryption_options) and no `tls_port`, every listener speaks TLS, the
    shard-aware one too, so no port is a plaintext way around it. With `tls_port` as well
    (native_transport_port_ssl), the main and shard-aware ports stay plaintext and `tls_port` is
    an extra TLS listener, as in ScyllaDB.
    """

    def __init__(
        self,
        handler: Handler,
        host: str = "127.0.0.1",
        port: int = 9042,
        *,
        shard_aware_port: int | None = None,
        nr_shards: int = 1,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        offered_extensions: frozenset[str] = KNOWN_EXTENSIONS,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_in_flight_bytes: int | None = None,
        max_connections: int | None = None,
        idle_timeout: float | None = None,
        tls: ssl.SSLContext | None = None,
        tls_port: int | None = None,
        traces: TraceStore | None = None,
    ) -> None:
        if tls_port is not None and tls is None:
            raise ValueError("tls_port needs a TLS context")
        self.handler = handler
        self.traces = traces or TraceStore()
        """Where traced requests' sessions go (``system_traces`` shows them)."""
        self.tls = tls
        self.tls_port = tls_port
        self.host = host
        self.port = port
        self.shard_aware_port = shard_aware_port
        self.nr_shards = nr_shards
        self.max_frame_size = max_frame_size
        self.offered_extensions = offered_extensions
        self.max_in_flight = max_in_flight
        self.budget = InFlightBudget(
            default_in_flight_bytes() if max_in_flight_bytes is None else max_in_flight_bytes
        )
        self.max_connections = max_connections
        self.idle_timeout = idle_timeout
        self._servers: list[asyncio.Server] = []
        self._clients: set[_ClientProtocol] = set()
        self._ids = itertools.count(1)
        self._round_robin = itertools.count()
        # Requests received by message type (the node's metrics render them by opcode on scrape).
        self.request_counts: defaultdict[type[Request], int] = defaultdict(int)
        # ScyllaDB's transport counters: connections accepted, requests answered, and the
        # ERROR responses sent by error code (protocol violations included).
        self.connects = 0
        self.requests_served = 0
        self.error_counts: defaultdict[int, int] = defaultdict(int)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # reuse_address explicitly: uvloop does not default to it, and a restarted node must be able
        # to bind while its predecessor's connections linger in TIME_WAIT/FIN_WAIT.
        everywhere = self.tls if self.tls_port is None else None
        main = await loop.create_server(
            lambda: _ClientProtocol(self, shard_aware=False),
            self.host,
            self.port,
            reuse_address=True,
            ssl=everywhere,
        )
        self._servers.append(main)
        self.port = main.sockets[0].getsockname()[1]
        if self.shard_aware_port is not None:
            aware = await loop.create_server(
                lambda: _ClientProtocol(self, shard_aware=True),
                self.host,
                self.shard_aware_port,
                reuse_address=True,
                ssl=everywhere,
            )
            self._servers.append(aware)
            self.shard_aware_port = aware.sockets[0].getsockname()[1]
        if self.tls_port is not None:
            extra = await loop.create_server(
                lambda: _ClientProtocol(self, shard_aware=False),
                self.host,
                self.tls_port,
                reuse_address=True,
                ssl=self.tls,
            )
            self._servers.append(extra)
            self.tls_port = extra.sockets[0].getsockname()[1]

    async def stop(self, grace: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to `grace` seconds), then close."""
        for server in self._servers:
            server.close()
        clients = list(self._clients)
        pending = [t for c in clients for t in c.tasks]
        if pending:
            await asyncio.wait(pending, timeout=grace)
        for client in clients:
            client.close()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()

    @property
    def serving(self) -> bool:
        """Whether a CQL listener accepts connections (nodetool's "Native Transport active")."""
        return any(server.is_serving() for server in self._servers)

    @property
    def clients(self) -> list[ClientState]:
        return [c.client for c in self._clients]

    @property
    def current_connections(self) -> int:
        return len(self._clients)

    @property
    def requests_serving(self) -> int:
        """Requests being processed now (a task each)."""
        return sum(len(c.tasks) for c in self._clients)

    def broadcast(self, event: Event) -> int:
        """Push an EVENT to every ready connection REGISTERed for its type; returns how many.

        Node events with port 0 get this server's CQL port (Scylla reports the address with the
        port of the listener the client is connected to; drivers register on the main port).
        """
        if isinstance(event, TopologyChangeEvent | StatusChangeEvent) and event.port == 0:
            event = dataclasses.replace(event, port=self.port)
        sent = 0
        for client in self._clients:
            if client.conn.state is ConnState.READY and event.event_type in client.conn.registered:
                client.write(client.conn.send(EVENT_STREAM, event))
                sent += 1
        return sent

    def _assign_shard(self, peer_port: int, shard_aware: bool) -> int:
        if shard_aware:
            return peer_port % self.nr_shards
        return next(self._round_robin) % self.nr_shards


class _ClientProtocol(asyncio.Protocol):
    """One client connection: feeds bytes to Connection and dispatches its events."""

    def __init__(self, server: CqlServer, shard_aware: bool) -> None:
        self.server = server
        self.shard_aware = shard_aware
        self.conn = Connection(
            authenticator=server.handler.authenticator,
            offered_extensions=server.offered_extensions,
            max_frame_size=server.max_frame_size,
        )
        self.tasks: set[asyncio.Task[None]] = set()
        self.client = ClientState(0, ("", 0), 0)
        self._transport: asyncio.Transport | None = None
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._close_after_flush = False
        self._write_paused = False
        self._reading_paused = False
        self._pending: deque[ConnectionEvent] = deque()
        """Events received after a request that waits for the in-flight budget, in order."""
        self._charge = 0
        """The budget charge of the request being dispatched, taken over by its task if any."""
        self._last_activity = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The connection's loop, kept: ``asyncio.get_running_loop()`` makes a getpid() system
        call each time, a few per request."""

    # asyncio.Protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._loop = asyncio.get_running_loop()
        # uvloop's transports are not asyncio.Transport subclasses, only the same interface.
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername") or ("", 0)
        server = self.server
        shard = server._assign_shard(peer[1], self.shard_aware)
        sockname = transport.get_extra_info("sockname") or ("", 0)
        self.client = ClientState(next(server._ids), (peer[0], peer[1]), shard, local_port=sockname[1])
        tls = transport.get_extra_info("ssl_object")
        if tls is not None:  # asyncio calls connection_made once the handshake is done
            self.client.ssl_protocol = tls_protocol_name(tls.version())
            cipher = tls.cipher()
            self.client.ssl_cipher_suite = cipher[0] if cipher else None
        if server.max_connections is not None and len(server._clients) >= server.max_connections:
            _log.warning(
                "refusing CQL connection from %s: native_transport_max_concurrent_connections (%d) reached",
                peer[0],
                server.max_connections,
            )
            self._transport = None
            transport.close()
            return
        server._clients.add(self)
        server.connects += 1
        server.handler.connection_opened(self.client)
        if server.idle_timeout is not None:
            self._last_activity = self._loop.time()
            self._idle_timer = self._loop.call_later(server.idle_timeout, self._check_idle)

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn.close()
        self._transport = None
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._pending:
            self._pending.clear()
            self.server.budget.cancel(self._granted)
        for task in self.tasks:
            task.cancel()
        if self in self.server._clients:
            self.server._clients.discard(self)
            self.server.handler.connection_closed(self.client)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        if self._idle_timer is not None and self._loop is not None:
            self._last_activity = self._loop.time()
        self._pending.extend(self.conn.receive_data(data))
        self._drain_pending()
        self._update_reading()

    def _drain_pending(self, granted: int | None = None) -> None:
        """Handle received events in order until one must wait for the in-flight budget.

        `granted`: the budget just granted the charge of the first pending event.
        """
        pending = self._pending
        budget = self.server.budget
        while pending and not self._close_after_flush:
            event = pending[0]
            if isinstance(event, ProtocolViolation):
                pending.popleft()
                self.write(self._send(event.stream, ErrorResponse(error=event.error)))
                if event.fatal:
                    self._close_after_flush = True
                continue
            if granted is None:
                granted = budget.try_acquire(event.size)
                if granted is None:
                    budget.wait(event.size, self._granted)
                    return
            pending.popleft()
            self._charge = granted
            granted = None
            try:
                self._dispatch(event.stream, event.request, event.tracing)
            finally:
                if self._charge:
                    budget.release(self._charge)
                    self._charge = 0
        pending.clear()

    def _granted(self, charge: int) -> None:
        """The budget has room for the request this connection waits with: carry on reading."""
        if self._transport is None:
            self.server.budget.release(charge)
            return
        self._drain_pending(charge)
        self._update_reading()

    def _check_idle(self) -> None:
        """Close the connection if it sent nothing for `idle_timeout` with nothing in flight."""
        timeout = self.server.idle_timeout
        loop = self._loop
        if timeout is None or loop is None or self._transport is None:
            return
        quiet = loop.time() - self._last_activity
        if quiet >= timeout and not self.tasks and not self._pending:
            _log.info("closing CQL connection from %s: idle for %.1f s", self.client.peer[0], quiet)
            self.close()
            return
        self._idle_timer = loop.call_later(max(timeout - quiet, timeout / 10), self._check_idle)

    # dispatch

    def _dispatch(self, stream: int, request: Request, tracing: bool = False) -> None:
        conn = self.conn
        client = self.client
        handler = self.server.handler
        self.server.request_counts[type(request)] += 1
        session = self._open_trace(request) if tracing else None
        if isinstance(request, Execute):
            if session is not None or not self._answered_now(stream, request):
                self._spawn(
                    stream,
                    request,
                    handler.execute(client, request.query_id, request.result_metadata_id, request.params),
                    session,
                )
        elif isinstance(request, Query):
            self._spawn(stream, request, handler.query(client, request.query, request.params), session)
        elif isinstance(request, Prepare):
            self._spawn(stream, request, handler.prepare(client, request.query), session)
        elif isinstance(request, Batch):
            self._spawn(stream, request, handler.batch(client, request), session)
        elif isinstance(request, Options):
            self._answer(stream, request, lambda: Supported(options=handler.supported(client)))
        elif isinstance(request, Startup):
            client.startup_options = conn.startup_options
            client.extensions = conn.extensions
            client.protocol_version = conn.version
            response = conn.startup_response()
            client.ready = isinstance(response, Ready)
            self.write(self._send(stream, response, request))
        elif isinstance(request, Register):
            client.registered = frozenset(conn.registered)
            self.write(self._send(stream, Ready(), request))
        elif isinstance(request, AuthResponse):
            self._spawn(stream, request, self._authenticate(request))

    def _open_trace(self, request: Request) -> TraceSession | None:
        """The trace of a request the client flagged for tracing, kept where system_traces reads."""
        session = open_session(request, self.client.peer[0], self.server.host, self.client.user)
        if session is not None:
            self.server.traces.add(session)
        return session

    def _answered_now(self, stream: int, request: Execute) -> bool:
        """Answer an EXECUTE the handler can answer without waiting (a point read of this node's
        own store): no task, and the reply leaves with the tick's other replies."""
        response: Reply | None
        try:
            response = self.server.handler.execute_now(
                self.client, request.query_id, request.result_metadata_id, request.params
            )
        except CqlError as exc:
            response = ErrorResponse(error=exc)
        except Exception as exc:
            response = _internal_error("processing", request, exc)
        if response is None:
            return False
        self._respond(stream, request, response)
        return True

    def _answer(self, stream: int, request: Request, build: Callable[[], Response]) -> None:
        """Answer synchronously (OPTIONS), turning handler errors into ERROR frames."""
        try:
            response = build()
        except CqlError as exc:
            response = ErrorResponse(error=exc)
        except Exception as exc:
            response = _internal_error("answering", request, exc)
        self.write(self._send(stream, response, request))

    async def _authenticate(self, request: AuthResponse) -> Response:
        username, password = parse_plain_token(request.token)
        await self.server.handler.authenticate(self.client, username, password)
        self.client.user = username
        self.client.ready = True
        return AuthSuccess(token=b"")

    def _spawn(
        self, stream: int, request: Request, work: Awaitable[Reply], session: TraceSession | None = None
    ) -> None:
        # A task per request, never run eagerly: handlers may rely on running inside a task
        # (asyncio.timeout does). The task forgets itself when it ends (see ``_run``), and gives
        # back the request's in-flight budget charge then.
        loop = self._loop or asyncio.get_running_loop()
        charge, self._charge = self._charge, 0
        self.tasks.add(loop.create_task(self._run(stream, request, work, charge, session)))

    async def _run(
        self,
        stream: int,
        request: Request,
        work: Awaitable[Reply],
        charge: int = 0,
        session: TraceSession | None = None,
    ) -> None:
        try:
            if session is not None:
                activate(session)  # this task's context only: events land in this session
            try:
                response = await work
            except CqlError as exc:
                response = ErrorResponse(error=exc)
            except Exception as exc:
                response = _internal_error("processing", request, exc)
            if session is not None:
                if isinstance(response, RowsResult):
                    session.event(f"Done processing - preparing a result of {len(response.rows)} rows")
                session.event("Request complete")
                await self.server.traces.finish(session)
            self._respond(stream, request, response, None if session is None else session.session_id)
        finally:
            self.tasks.discard(asyncio.current_task(self._loop))
            if charge:
                self.server.budget.release(charge)
            if self._reading_paused:
                self._update_reading()

    def _respond(
        self, stream: int, request: Request, response: Reply, tracing_id: uuid.UUID | None = None
    ) -> None:
        if isinstance(response, SetKeyspaceResult):
            self.client.keyspace = response.keyspace
        if self._transport is None:
            return
        try:
            data = self._send(stream, response, request, tracing_id)
        except Exception as exc:  # an unencodable result (e.g. a too-long string) is a server error
            _log.error("cannot encode the response to %s", type(request).__name__, exc_info=exc)
            data = self._send(stream, ErrorResponse(error=ServerError(f"Cannot encode response: {exc!r}")))
        self.write(data)

    def _send(
        self,
        stream: int,
        response: Reply,
        request: Request | None = None,
        tracing_id: uuid.UUID | None = None,
    ) -> bytes:
        """Encode the answer to a request, counted for the transport metrics."""
        data = self.conn.send(stream, response, request, tracing_id)
        server = self.server
        server.requests_served += 1
        if isinstance(response, ErrorResponse):
            server.error_counts[response.error.code] += 1
        return data

    # output

    def write(self, data: bytes) -> None:
        if self._transport is None:
            return
        self._out.append(data)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            (self._loop or asyncio.get_running_loop()).call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        transport = self._transport
        if transport is None:
            self._out.clear()
            return
        out = self._out
        if out:
            self._out = []
            transport.write(out[0] if len(out) == 1 else b"".join(out))
        if self._close_after_flush:
            transport.close()

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._close_after_flush:
            return
        should_pause = (
            self._write_paused or bool(self._pending) or len(self.tasks) >= self.server.max_in_flight
        )
        if should_pause and not self._reading_paused:
            self._reading_paused = True
            transport.pause_reading()
        elif not should_pause and self._reading_paused:
            self._reading_paused = False
            transport.resume_reading()

    def close(self) -> None:
        if self._transport is not None:
            self._flush()
            with contextlib.suppress(Exception):
                self._transport.close()


def _internal_error(doing: str, request: Request, exc: Exception) -> ErrorResponse:
    """The reply to a request our code failed on (a bug: every client error is a CqlError), and
    the log line with the traceback that lets it be found and fixed."""
    statement = f": {request.query[:1000]!r}" if isinstance(request, Query | Prepare) else ""
    _log.error("internal error %s %s%s", doing, type(request).__name__, statement, exc_info=exc)
    return ErrorResponse(error=ServerError(f"Internal error {doing} {type(request).__name__}: {exc!r}"))
