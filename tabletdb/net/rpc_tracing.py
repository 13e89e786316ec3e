"""Query tracing across the internode RPC: the replicas' steps in the coordinator's trace.

A request sent while the calling task is traced (`cql.tracing`) carries a sixth frame element,
the trace's session id. The handling node records its own steps in a trace of its own, active
in the handler's task (so any `trace(...)` the handler reaches lands there too), and returns
them as the sixth element of its reply; the caller adds them to its session with the replica's
address as their source, as ScyllaDB shows each replica's events. Untraced frames keep five
elements, so tracing costs nothing when off.
"""

from __future__ import annotations

import uuid
from typing import Any

from tabletdb.cql.tracing import TraceEvent, TraceSession, activate

TRACED_FRAME = 6
"""The length of a traced request or of the reply to one (others have five elements)."""


def request_context(session: TraceSession) -> list[Any]:
    """What a request sent from a traced task carries."""
    return [session.session_id.bytes]


def open_replica_trace(verb: str, caller: str) -> TraceSession:
    """The handling node's record of a traced request, active in the handler's task."""
    session = TraceSession(verb, {}, caller, "")
    activate(session)
    session.event(f"{verb}: message received from /{caller}")
    return session


def replica_events(session: TraceSession, verb: str, caller: str) -> list[Any]:
    """The handling node's events as the reply's sixth element."""
    session.event(f"{verb}: handling is done, sending a response to /{caller}")
    return [[e.event_id.bytes, e.activity, e.source_elapsed_us, e.thread] for e in session.events]


def add_replica_events(session: TraceSession, replica: str, plain: Any) -> None:
    """Add a reply's events to the caller's session, their source the replica's address."""
    if isinstance(plain, list):
        session.add_late([TraceEvent(uuid.UUID(bytes=i), a, e, t, replica) for i, a, e, t in plain])
