"""A traced request's response carries the trace session id as the driver reads it."""

from __future__ import annotations

import uuid

from cassandra import protocol as dp

from tabletdb.cql.results import VoidResult
from tabletdb.cql.tracing import TraceSession
from tabletdb.protocol.connection import Connection
from tabletdb.protocol.requests import Batch, Execute, Options, Prepare, Query, QueryParameters
from tabletdb.protocol.responses import Ready
from tabletdb.protocol.trace_requests import open_session
from tests.unit.protocol.driver_oracle import decode_response, request_frame, startup_options


def _ready() -> Connection:
    conn = Connection()
    (event,) = conn.receive_data(request_frame(dp.StartupMessage("3.3.1", startup_options())))
    conn.send(event.stream, Ready(), event.request)
    return conn


def test_the_tracing_flag_is_read_and_the_session_id_leads_the_response() -> None:
    conn = _ready()
    query = dp.QueryMessage("SELECT 1", 1)
    query.tracing = True
    (event,) = conn.receive_data(request_frame(query, stream=7))
    assert event.tracing
    session_id = uuid.uuid1()
    message = decode_response(
        conn.send(event.stream, VoidResult(warnings=["careful"]), event.request, session_id)
    )
    assert message.trace_id == session_id and message.warnings == ["careful"]
    untraced = decode_response(conn.send(event.stream, VoidResult(), event.request))
    assert untraced.trace_id is None


def test_sessions_name_the_request_as_scylladb_does() -> None:
    params = QueryParameters(consistency=1, page_size=100)
    q = open_session(Query("SELECT 1", params), "10.0.0.1", "10.0.0.2", "alice")
    assert isinstance(q, TraceSession) and q.request == "Execute CQL3 query"
    assert q.parameters == {"consistency_level": "ONE", "page_size": "100", "query": "SELECT 1"}
    assert (q.client, q.coordinator, q.username) == ("10.0.0.1", "10.0.0.2", "alice")
    e = open_session(Execute(b"\x01\x02", None, params), "c", "s", None)
    assert e is not None and e.request == "Execute CQL3 prepared query" and e.parameters["query_id"] == "0102"
    b = open_session(Batch(0, [], 4), "c", "s", None)
    assert b is not None and b.request == "Execute batch of CQL3 queries"
    assert b.parameters == {"consistency_level": "QUORUM", "queries": "0"}
    p = open_session(Prepare("SELECT 1"), "c", "s", None)
    assert p is not None and p.request == "Preparing CQL3 query"
    assert open_session(Options(), "c", "s", None) is None
