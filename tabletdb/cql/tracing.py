"""Query tracing: the session a traced request records, and where finished sessions are kept.

A client asks for a trace with the protocol's tracing flag (cqlsh `TRACING ON`, the drivers'
`trace=True`). The request's task then carries a `TraceSession` in a context variable; code
along the way (parsing, the coordinator's replica calls, the rows read) adds events with
`trace(...)`, which costs one context-variable read when nothing is traced. When the request
ends the session gets its duration and `system_traces.sessions` / `events` show it (rendered
from a `TraceStore`, like every other system table here: nothing is written to storage).
A finished session is also handed to the store's listeners (the node sends it to its peers,
`node.trace_sharing`), so every node shows it: drivers read the trace tables from any node.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

MAX_SESSIONS = 1000
"""Finished and running sessions kept per node, oldest dropped first."""
TRACE_TTL_SECONDS = 86_400
"""How long a session stays readable (ScyllaDB keeps traces a day)."""


@dataclass(frozen=True, slots=True)
class TraceEvent:
    event_id: uuid.UUID  # a timeuuid: events sort by it
    activity: str
    source_elapsed_us: int
    thread: str
    source: str | None = None
    """The node that recorded it when not the coordinator (a replica's steps, `net.rpc_tracing`)."""


@dataclass(slots=True)
class TraceSession:
    """One traced request, as `system_traces.sessions` shows it (events in order)."""

    request: str
    parameters: dict[str, str]
    client: str
    coordinator: str
    username: str | None = None
    session_id: uuid.UUID = field(default_factory=uuid.uuid1)
    started_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    _start: float = field(default_factory=time.monotonic)
    duration_us: int | None = None
    events: list[TraceEvent] = field(default_factory=list)
    after_finish: Callable[[TraceSession], None] | None = None
    """Called when events arrive after the session finished (a replica that answered after the
    consistency level was met): the store shares the session again."""

    def event(self, activity: str, thread: str = "shard 0") -> None:
        elapsed = int((time.monotonic() - self._start) * 1_000_000)
        self.events.append(TraceEvent(uuid.uuid1(), activity, elapsed, thread))

    def finish(self) -> None:
        """Record the duration (once): the drivers poll until a session has one."""
        if self.duration_us is None:
            self.duration_us = max(1, int((time.monotonic() - self._start) * 1_000_000))

    def add_late(self, events: list[TraceEvent]) -> None:
        """Events recorded elsewhere (a replica's steps); shared again if the session is over."""
        self.events.extend(events)
        if self.duration_us is not None and self.after_finish is not None:
            self.after_finish(self)


def session_to_plain(session: TraceSession) -> list[Any]:
    """A finished session as plain values (the internode payload that shares it)."""
    events = [[e.event_id.bytes, e.activity, e.source_elapsed_us, e.thread, e.source] for e in session.events]
    return [
        session.session_id.bytes,
        session.request,
        sorted(session.parameters.items()),
        session.client,
        session.coordinator,
        session.username,
        session.started_at_ms,
        session.duration_us,
        events,
    ]


def session_from_plain(plain: list[Any]) -> TraceSession:
    session_id, request, parameters, client, coordinator, username, started, duration, events = plain
    return TraceSession(
        request,
        {str(k): str(v) for k, v in parameters},
        client,
        coordinator,
        username,
        uuid.UUID(bytes=session_id),
        started,
        duration_us=duration,
        events=[TraceEvent(uuid.UUID(bytes=e[0]), e[1], e[2], e[3], e[4]) for e in events],
    )


_CURRENT: ContextVar[TraceSession | None] = ContextVar("tabletdb_trace", default=None)


def activate(session: TraceSession) -> Token[TraceSession | None]:
    """Make `session` the current task's trace (call inside the request's task)."""
    return _CURRENT.set(session)


def current() -> TraceSession | None:
    return _CURRENT.get()


def trace(activity: str, *args: object) -> None:
    """Add an event to the current trace, if any; `activity % args` is formatted only then."""
    session = _CURRENT.get()
    if session is not None:
        session.event(activity % args if args else activity)


class TraceStore:
    """The sessions this node coordinated, newest last, bounded in number and age."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, ttl_seconds: float = TRACE_TTL_SECONDS) -> None:
        self._sessions: OrderedDict[uuid.UUID, TraceSession] = OrderedDict()
        self._max = max_sessions
        self._ttl_ms = int(ttl_seconds * 1000)
        self._listeners: list[Callable[[TraceSession], Awaitable[None]]] = []
        self._late: set[asyncio.Task[None]] = set()

    def on_finish(self, listener: Callable[[TraceSession], Awaitable[None]]) -> None:
        """Call `listener` with each session this node finishes (not ones peers shared)."""
        self._listeners.append(listener)

    async def finish(self, session: TraceSession) -> None:
        """End `session` and wait for the listeners: the request is answered only after its trace
        can be read everywhere, so a driver polling any node finds the events with the session."""
        session.finish()
        if self._listeners:
            session.after_finish = self._share_again
            # Outside the trace: what the listeners send is not part of the traced request.
            token = _CURRENT.set(None)
            try:
                await self._tell(session)
            finally:
                _CURRENT.reset(token)

    async def _tell(self, session: TraceSession) -> None:
        await asyncio.gather(*(listener(session) for listener in self._listeners))

    def _share_again(self, session: TraceSession) -> None:
        token = _CURRENT.set(None)  # the new task copies this context: untraced
        try:
            task = asyncio.get_running_loop().create_task(self._tell(session))
        finally:
            _CURRENT.reset(token)
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    def add(self, session: TraceSession) -> None:
        self._sessions[session.session_id] = session
        while len(self._sessions) > self._max:
            self._sessions.popitem(last=False)

    def sessions(self, now_ms: int | None = None) -> list[TraceSession]:
        """Sessions still within their time to live, oldest first."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if now_ms - oldest.started_at_ms <= self._ttl_ms:
                break
            self._sessions.popitem(last=False)
        return list(self._sessions.values())

    def get(self, session_id: uuid.UUID) -> TraceSession | None:
        return self._sessions.get(session_id)
