"""How long one statement may run, from its own ``USING`` clause (ScyllaDB's rules, pure).

``USING TIMEOUT d`` (a duration, or a bound one) wins; a SELECT's ``USING SERVICE LEVEL sl``
comes next, with the level's timeout (a level without one: the node's request timeouts, no
limit of its own); otherwise the session's service level decides (`auth_check.run_limited`).
A timeout is whole milliseconds, positive, without months or days, as service levels take it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from tabletdb.cql import ast
from tabletdb.cql.duration import NANOS_PER_MILLI, Duration, parse_duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import DURATION
from tabletdb.cql.unparse import cql_text
from tabletdb.cql.values import Value
from tabletdb.qos.model import QosState
from tabletdb.statements.terms import Bindings


class SessionLimit:
    """No limit of the statement's own: the session's service level applies."""


SESSION: Final = SessionLimit()
_WITH_ATTRIBUTES = (ast.InsertStatement, ast.UpdateStatement, ast.DeleteStatement, ast.BatchStatement)


def statement_timeout_ms(
    stmt: ast.Statement, values: Sequence[Value], qos: QosState
) -> int | SessionLimit | None:
    """Milliseconds, None for no limit, or SESSION."""
    timeout: ast.Term | None = None
    if isinstance(stmt, ast.SelectStatement | ast.TruncateStatement):
        timeout = stmt.timeout
    elif isinstance(stmt, _WITH_ATTRIBUTES):
        timeout = stmt.attributes.timeout
    if timeout is not None:
        return _timeout_ms(timeout, values)
    if isinstance(stmt, ast.SelectStatement) and stmt.service_level is not None:
        level = qos.level(stmt.service_level)
        if level is None:
            raise InvalidRequest(f"Service Level {stmt.service_level} doesn't exist")
        return level.timeout_ms
    return SESSION


def _timeout_ms(term: ast.Term, values: Sequence[Value]) -> int:
    if isinstance(term, ast.BindMarker):
        bound = Bindings(values).decoded(term, DURATION)
        if not isinstance(bound, Duration):
            raise InvalidRequest("Invalid null or unset value of timeout")
        duration, shown = bound, "the bound timeout"
    elif isinstance(term, ast.Literal) and term.kind == "duration":
        duration, shown = parse_duration(term.text), term.text
    else:
        raise InvalidRequest(f"Invalid timeout value {cql_text(term)}: expected a duration such as 500ms")
    if duration.months or duration.days:
        raise InvalidRequest(f"Timeout values cannot be expressed in days/months, got {shown}")
    if duration.nanoseconds % NANOS_PER_MILLI:
        raise InvalidRequest(f"Timeout values cannot have granularity finer than milliseconds, got {shown}")
    if duration.nanoseconds <= 0:
        raise InvalidRequest(f"Timeout values must be positive, got {shown}")
    return duration.nanoseconds // NANOS_PER_MILLI
