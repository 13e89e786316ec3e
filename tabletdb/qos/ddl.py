"""Service-level statements: validate against the current state, return mutations.

Like the schema DDL functions these never change anything themselves, so the executor can
re-run them on a newer state. Who may run them is checked by tabletdb.auth.service_levels,
which also knows which roles exist.
"""

from __future__ import annotations

from dataclasses import replace

from tabletdb.cql import ast_auth as ast
from tabletdb.cql.ast_terms import Literal, Null, Properties, Term
from tabletdb.cql.duration import NANOS_PER_MILLI, parse_duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.unparse import cql_text
from tabletdb.qos.model import (
    DEFAULT,
    DEFAULT_SHARES,
    MAX_USER_LEVELS,
    WORKLOAD_TYPES,
    QosState,
    ServiceLevel,
)
from tabletdb.qos.mutations import Attach, Detach, PutLevel, QosMutation, RemoveLevel

OPTIONS = ("timeout", "workload_type", "shares")


def _timeout_ms(term: Term) -> int | None:
    if isinstance(term, Null):
        return None
    if not isinstance(term, Literal) or term.kind not in ("duration", "string"):
        raise InvalidRequest(
            f"Invalid timeout value {cql_text(term)}: expected a duration such as 500ms or null"
        )
    d = parse_duration(term.text)
    if d.months or d.days:
        raise InvalidRequest(f"Timeout values cannot be expressed in days/months, got {term.text}")
    if d.nanoseconds % NANOS_PER_MILLI:
        raise InvalidRequest(
            f"Timeout values cannot have granularity finer than milliseconds, got {term.text}"
        )
    if d.nanoseconds <= 0:
        raise InvalidRequest(f"Timeout values must be positive, got {term.text}")
    return d.nanoseconds // NANOS_PER_MILLI


def _workload(term: Term) -> str | None:
    if isinstance(term, Null):
        return None
    if not isinstance(term, Literal) or term.kind != "string":
        raise InvalidRequest(
            f"Invalid workload type {cql_text(term)}: expected one of {', '.join(WORKLOAD_TYPES)}"
        )
    value = term.text.lower()
    if value not in WORKLOAD_TYPES:
        expected = ", ".join(WORKLOAD_TYPES)
        raise InvalidRequest(f"Invalid workload type: {term.text} (expected one of {expected})")
    return None if value == "unspecified" else value


def _shares(term: Term) -> int | None:
    if isinstance(term, Null):
        return None
    if not isinstance(term, Literal) or term.kind != "integer" or not 1 <= int(term.text) <= 1000:
        raise InvalidRequest(f"Shares value should be an integer in range [1, 1000], got {cql_text(term)}")
    return int(term.text)


def _with_options(level: ServiceLevel, options: Properties) -> ServiceLevel:
    for name in options.names():
        if name not in OPTIONS:
            raise InvalidRequest(f"Unknown service level option {name!r} (expected {', '.join(OPTIONS)})")
    if len(set(options.names())) != len(options):
        raise InvalidRequest(f"Service level options may be given once each: {', '.join(options.names())}")
    changes: dict[str, object] = {}
    if (t := options.get("timeout")) is not None:
        changes["timeout_ms"] = _timeout_ms(t)
    if (w := options.get("workload_type")) is not None:
        changes["workload_type"] = _workload(w)
    if (s := options.get("shares")) is not None:
        changes["shares"] = _shares(s)
    return replace(level, **changes)  # type: ignore[arg-type]


def _require(state: QosState, name: str) -> ServiceLevel:
    found = state.level(name)
    if found is None:
        raise InvalidRequest(f"Service Level {name} doesn't exist")
    return found


def create_level(state: QosState, stmt: ast.CreateServiceLevel) -> tuple[QosMutation, ...]:
    if not stmt.name:
        raise InvalidRequest("Service level name must not be empty")
    if stmt.name == DEFAULT:
        raise InvalidRequest(f"Service level name {DEFAULT} is reserved for the built-in default level")
    if state.level(stmt.name) is not None:
        if stmt.if_not_exists:
            return ()
        raise InvalidRequest(f"Service Level {stmt.name} already exists")
    level = _with_options(ServiceLevel(stmt.name, shares=DEFAULT_SHARES), stmt.options)
    if state.user_level_count >= MAX_USER_LEVELS and stmt.name != "driver":
        raise InvalidRequest(
            f"Cannot create service level {stmt.name}: at most {MAX_USER_LEVELS} service levels can be "
            "created besides the built-in default and driver levels; drop one first"
        )
    return (PutLevel(level),)


def alter_level(state: QosState, stmt: ast.AlterServiceLevel) -> tuple[QosMutation, ...]:
    return (PutLevel(_with_options(_require(state, stmt.name), stmt.options)),)


def drop_level(state: QosState, stmt: ast.DropServiceLevel) -> tuple[QosMutation, ...]:
    if state.level(stmt.name) is None:
        if stmt.if_exists:
            return ()
        raise InvalidRequest(f"Service Level {stmt.name} doesn't exist")
    return (RemoveLevel(stmt.name),)


def attach_level(state: QosState, stmt: ast.AttachServiceLevel, role_exists: bool) -> tuple[QosMutation, ...]:
    _require(state, stmt.level)
    if not role_exists:
        raise InvalidRequest(f"Role {stmt.role} doesn't exist")
    return (Attach(stmt.role, stmt.level),)


def detach_level(state: QosState, stmt: ast.DetachServiceLevel, role_exists: bool) -> tuple[QosMutation, ...]:
    if not role_exists:
        raise InvalidRequest(f"Role {stmt.role} doesn't exist")
    return (Detach(stmt.role),) if state.attached(stmt.role) is not None else ()


def forget_role(state: QosState, role: str) -> tuple[QosMutation, ...]:
    """Mutations to append when a role is dropped, so its attachment does not outlive it."""
    return (Detach(role),) if state.attached(role) is not None else ()
