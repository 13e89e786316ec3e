"""Service-level mutations (the replicated form of service-level DDL) and their apply.

Apply is deterministic and never validates: the decision functions in tabletdb.qos.ddl did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from tabletdb.qos.model import QosState, ServiceLevel


@dataclass(frozen=True)
class PutLevel:
    """Create a level or replace its options."""

    level: ServiceLevel


@dataclass(frozen=True)
class RemoveLevel:
    """Drop a level and every attachment to it."""

    name: str


@dataclass(frozen=True)
class Attach:
    role: str
    level: str


@dataclass(frozen=True)
class Detach:
    role: str


QosMutation = PutLevel | RemoveLevel | Attach | Detach


def apply_qos_mutations(state: QosState, mutations: Iterable[QosMutation]) -> QosState:
    for m in mutations:
        state = _apply_one(state, m)
    return state


def _apply_one(state: QosState, m: QosMutation) -> QosState:
    if isinstance(m, PutLevel):
        others = [sl for sl in state.levels if sl.name != m.level.name]
        return replace(state, levels=tuple(sorted([*others, m.level], key=lambda sl: sl.name)))
    if isinstance(m, RemoveLevel):
        return QosState(
            tuple(sl for sl in state.levels if sl.name != m.name),
            tuple(a for a in state.attachments if a[1] != m.name),
        )
    if isinstance(m, Attach):
        kept = [a for a in state.attachments if a[0] != m.role]
        return replace(state, attachments=tuple(sorted([*kept, (m.role, m.level)])))
    if isinstance(m, Detach):
        return replace(state, attachments=tuple(a for a in state.attachments if a[0] != m.role))
    raise TypeError(f"unknown service-level mutation {m!r}")
