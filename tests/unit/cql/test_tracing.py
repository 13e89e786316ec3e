"""Trace sessions: events only while a session is active in the task, and a bounded store."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import msgpack

from tabletdb.cql.tracing import (
    TraceSession,
    TraceStore,
    activate,
    current,
    session_from_plain,
    session_to_plain,
    trace,
)
from tabletdb.systables.traces import events_rows, sessions_rows


def _session() -> TraceSession:
    return TraceSession("Execute CQL3 query", {"query": "SELECT 1"}, "10.0.0.1", "10.0.0.2")


def test_events_go_to_the_active_session_of_the_task_only() -> None:
    traced, untraced = _session(), _session()

    async def request(session: TraceSession | None, label: str) -> None:
        if session is not None:
            activate(session)
        await asyncio.sleep(0)
        trace("read %d rows of %s", 3, label)

    async def both() -> None:
        await asyncio.gather(
            asyncio.create_task(request(traced, "a")), asyncio.create_task(request(None, "b"))
        )

    asyncio.run(both())
    assert [e.activity for e in traced.events] == ["read 3 rows of a"]
    assert untraced.events == [] and current() is None
    trace("nothing is active here: %s", "no-op")


def test_finish_sets_the_duration_once_and_rows_show_the_session() -> None:
    session = _session()
    session.event("Parsing a statement")
    session.event("Request complete")
    session.finish()
    first = session.duration_us
    session.finish()
    assert first is not None and first > 0 and session.duration_us == first
    store = TraceStore()
    store.add(session)
    (row,) = sessions_rows(store)
    assert row["session_id"] == session.session_id and row["duration"] == first
    assert row["parameters"] == (("query", "SELECT 1"),) and str(row["coordinator"]) == "10.0.0.2"
    events = events_rows(store)
    assert [e["activity"] for e in events] == ["Parsing a statement", "Request complete"]
    assert events[0]["source_elapsed"] <= events[1]["source_elapsed"]


def test_the_store_keeps_the_newest_sessions_within_their_time_to_live() -> None:
    store = TraceStore(max_sessions=2, ttl_seconds=10)
    sessions = [_session() for _ in range(3)]
    for i, s in enumerate(sessions):
        s.started_at_ms = 1_000_000 + i * 6_000
        store.add(s)
    assert store.sessions(now_ms=1_012_000) == sessions[1:]
    assert store.sessions(now_ms=1_020_000) == sessions[2:]
    assert store.get(sessions[0].session_id) is None


def test_a_finished_session_goes_to_the_listeners_and_survives_the_wire_form() -> None:
    """What a peer receives renders the same rows as the coordinator's own session."""
    store, peer = TraceStore(), TraceStore()
    got: list[TraceSession] = []

    async def listener(session: TraceSession) -> None:
        got.append(session)
        peer.add(session_from_plain(msgpack.unpackb(msgpack.packb(session_to_plain(session)))))

    store.on_finish(listener)
    session = _session()
    session.username = "alice"
    store.add(session)
    session.event("Parsing a statement")
    session.event("Request complete")
    asyncio.run(store.finish(session))
    assert got == [session] and session.duration_us is not None
    assert sessions_rows(peer) == sessions_rows(store)
    assert events_rows(peer) == events_rows(store)
    peer.add(session_from_plain(session_to_plain(session)))  # a peer never passes it on
    assert len(peer.sessions()) == 1


def test_events_arriving_after_the_finish_are_shared_again_in_clustering_order() -> None:
    """A replica that answers after the consistency level was met adds its steps late: the
    session goes to the listeners again, and the rows stay in event_id order."""
    store = TraceStore()
    told: list[int] = []

    async def listener(session: TraceSession) -> None:
        told.append(len(session.events))

    store.on_finish(listener)
    session = _session()
    store.add(session)
    session.event("Sending 1 mutation(s)")
    replica = TraceSession("data.apply", {}, "", "")
    replica.event("data.apply: message received")
    session.event("Request complete")

    async def run() -> None:
        await store.finish(session)
        session.add_late([replace(e, source="10.0.0.3") for e in replica.events])
        await asyncio.sleep(0)

    asyncio.run(run())
    assert told == [2, 3]
    rows = events_rows(store)
    assert [r["activity"] for r in rows] == [
        "Sending 1 mutation(s)",
        "data.apply: message received",
        "Request complete",
    ]
    assert str(rows[1]["source"]) == "10.0.0.3" and str(rows[2]["source"]) == "10.0.0.2"
