"""The trace session a traced request opens: what `system_traces.sessions` says about it.

`request` and `parameters` follow ScyllaDB's wording, so tools that print traces (cqlsh's
TRACING ON) show the familiar lines.
"""

from __future__ import annotations

from tabletdb.cql.consistency import CONSISTENCY_NAMES
from tabletdb.cql.tracing import TraceSession
from tabletdb.protocol.requests import Batch, Execute, Prepare, Query, QueryParameters, Request


def _level(code: int | None) -> str | None:
    return None if code is None else CONSISTENCY_NAMES.get(code, str(code))


def _parameters(params: QueryParameters) -> dict[str, str]:
    out = {"consistency_level": _level(params.consistency) or ""}
    serial = _level(params.serial_consistency)
    if serial is not None:
        out["serial_consistency_level"] = serial
    if params.page_size is not None:
        out["page_size"] = str(params.page_size)
    return out


def open_session(request: Request, client: str, coordinator: str, user: str | None) -> TraceSession | None:
    """A session for a traceable request (QUERY, EXECUTE, BATCH, PREPARE); None for the rest."""
    if isinstance(request, Query):
        parameters = {**_parameters(request.params), "query": request.query}
        return TraceSession("Execute CQL3 query", parameters, client, coordinator, user)
    if isinstance(request, Execute):
        parameters = {**_parameters(request.params), "query_id": request.query_id.hex()}
        return TraceSession("Execute CQL3 prepared query", parameters, client, coordinator, user)
    if isinstance(request, Batch):
        parameters = {"consistency_level": _level(request.consistency) or ""}
        parameters["queries"] = str(len(request.statements))
        return TraceSession("Execute batch of CQL3 queries", parameters, client, coordinator, user)
    if isinstance(request, Prepare):
        return TraceSession("Preparing CQL3 query", {"query": request.query}, client, coordinator, user)
    return None
