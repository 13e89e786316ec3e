"""`system_traces.sessions` and `system_traces.events`, rendered from the node's `TraceStore`.

The layout is ScyllaDB's (the drivers' `get_query_trace()` reads these two tables, polling the
session row until it has a duration). Each node shows the sessions it coordinated.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from tabletdb.cql.tracing import TraceStore
from tabletdb.cql.types import BIGINT, INET, INT, TEXT, TIMESTAMP, TIMEUUID, UUID, MapType
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import LOCAL, ClusteringOrder, KeyspaceDef, KeyspaceSchema, Replication
from tabletdb.systables.definitions import virtual_table

TRACES_KEYSPACE = "system_traces"
Row = dict[str, Any]

SESSIONS_TABLE = virtual_table(
    TRACES_KEYSPACE,
    "sessions",
    ["session_id"],
    [],
    {
        "session_id": UUID,
        "client": INET,
        "command": TEXT,
        "coordinator": INET,
        "duration": INT,
        "parameters": MapType(TEXT, TEXT),
        "request": TEXT,
        "request_size": INT,
        "response_size": INT,
        "started_at": TIMESTAMP,
        "username": TEXT,
    },
    "tracing sessions",
)
EVENTS_TABLE = virtual_table(
    TRACES_KEYSPACE,
    "events",
    ["session_id"],
    [("event_id", ClusteringOrder.ASC)],
    {
        "session_id": UUID,
        "event_id": TIMEUUID,
        "activity": TEXT,
        "scylla_parent_id": BIGINT,
        "scylla_span_id": BIGINT,
        "source": INET,
        "source_elapsed": INT,
        "thread": TEXT,
    },
    "tracing events",
)
TRACE_TABLES = {t.name: t for t in (SESSIONS_TABLE, EVENTS_TABLE)}


def _inet(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address)
    except ValueError:
        return None


def sessions_rows(store: TraceStore) -> list[Row]:
    return [
        {
            "session_id": s.session_id,
            "client": _inet(s.client),
            "command": "QUERY",
            "coordinator": _inet(s.coordinator),
            "duration": s.duration_us,
            "parameters": tuple(sorted(s.parameters.items())) or None,
            "request": s.request,
            "request_size": None,
            "response_size": None,
            "started_at": s.started_at_ms,
            "username": s.username,
        }
        for s in sorted(store.sessions(), key=lambda s: s.session_id.bytes)
    ]


def events_rows(store: TraceStore) -> list[Row]:
    rows = []
    for s in sorted(store.sessions(), key=lambda s: s.session_id.bytes):
        coordinator = _inet(s.coordinator)
        # In event_id (timeuuid) order, the clustering order: a replica's steps arrive with its
        # answer but happened before the coordinator's later events.
        for e in sorted(s.events, key=lambda e: (e.event_id.time, e.event_id.bytes)):
            rows.append(
                {
                    "session_id": s.session_id,
                    "event_id": e.event_id,
                    "activity": e.activity,
                    "scylla_parent_id": 0,
                    "scylla_span_id": 0,
                    "source": coordinator if e.source is None else _inet(e.source),
                    "source_elapsed": e.source_elapsed_us,
                    "thread": e.thread,
                }
            )
    return rows


def render(table: str, store: TraceStore) -> list[Row]:
    return sessions_rows(store) if table == "sessions" else events_rows(store)


def system_traces_keyspace() -> KeyspaceSchema:
    """Node-local (each node keeps what it coordinated), so shown with LocalStrategy."""
    definition = KeyspaceDef(TRACES_KEYSPACE, Replication(LOCAL), durable_writes=True)
    return KeyspaceSchema(definition, tables=FrozenMap(dict(TRACE_TABLES)))
