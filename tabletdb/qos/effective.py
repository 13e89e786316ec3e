"""A role's effective service level: the merge of the levels attached to it and to every role
it inherits.

ScyllaDB's rule, applied option by option: the smallest timeout wins, an `interactive` workload
beats `batch`, which beats an unspecified one, and the most shares win ("the highest level of
service"). Each merged option remembers which level supplied it, for LIST EFFECTIVE.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tabletdb.cql.duration import NANOS_PER_MILLI, Duration, format_duration
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import TEXT
from tabletdb.qos.listing import Listing
from tabletdb.qos.model import QosState, ServiceLevel

_WORKLOAD_RANK = {None: 0, "batch": 1, "interactive": 2}


@dataclass(frozen=True)
class EffectiveLevel:
    """The merged options; each `*_from` names the level the value came from."""

    timeout_ms: int | None
    timeout_from: str
    workload_type: str | None
    workload_type_from: str
    shares: int | None
    shares_from: str


def _levels_for(state: QosState, roles: Iterable[str]) -> list[ServiceLevel]:
    names = []
    for role in roles:
        attached = state.attached(role)
        if attached is not None and attached not in names:
            names.append(attached)
    return [level for name in names if (level := state.level(name)) is not None]


def effective_level(state: QosState, roles: Iterable[str]) -> EffectiveLevel | None:
    """`roles`: the role and all roles it inherits (auth's closure). None: nothing attached."""
    levels = _levels_for(state, roles)
    if not levels:
        return None
    first = levels[0]
    timeout, timeout_from = first.timeout_ms, first.name
    workload, workload_from = first.workload_type, first.name
    shares, shares_from = first.shares, first.name
    for sl in levels[1:]:
        if sl.timeout_ms is not None and (timeout is None or sl.timeout_ms < timeout):
            timeout, timeout_from = sl.timeout_ms, sl.name
        if _WORKLOAD_RANK[sl.workload_type] > _WORKLOAD_RANK[workload]:
            workload, workload_from = sl.workload_type, sl.name
        if sl.shares is not None and (shares is None or sl.shares > shares):
            shares, shares_from = sl.shares, sl.name
    return EffectiveLevel(timeout, timeout_from, workload, workload_from, shares, shares_from)


def timeout_duration(ms: int | None) -> Duration | None:
    return None if ms is None else Duration(0, 0, ms * NANOS_PER_MILLI)


def list_effective(state: QosState, role: str, roles: Iterable[str]) -> Listing:
    """LIST EFFECTIVE SERVICE LEVEL OF role; `roles` is the role's closure."""
    merged = effective_level(state, roles)
    if merged is None:
        raise InvalidRequest(f"Role {role} doesn't have assigned any service level")
    timeout = timeout_duration(merged.timeout_ms)
    rows = (
        ("workload_type", merged.workload_type_from, merged.workload_type or "unspecified"),
        ("timeout", merged.timeout_from, "null" if timeout is None else format_duration(timeout)),
        ("shares", merged.shares_from, "null" if merged.shares is None else str(merged.shares)),
    )
    columns = (("service_level_option", TEXT), ("effective_service_level", TEXT), ("value", TEXT))
    return Listing(columns, rows)
