"""Roles, grants and service levels inside group0: their plain (msgpack-able) form.

Auth and service-level changes ride on the same group0 command as schema changes, so a CREATE
TABLE and the creator's grants on the new table commit (or are retried) together. The auth and
qos packages own the values and their apply; this module only fixes how group0 entries and
snapshots carry them, so `group0.state` needs one line per use. It knows nothing of the command
itself: `group0.state` builds on this module, not the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tabletdb.auth.model import AuthState
from tabletdb.auth.mutations import AuthMutation, apply_auth_mutations
from tabletdb.auth.serialize import AuthDecodeError, from_plain, to_plain
from tabletdb.qos.model import QosState
from tabletdb.qos.mutations import QosMutation, apply_qos_mutations
from tabletdb.schema.ddl_common import DdlOutcome

AuthMutations = tuple[AuthMutation, ...]
QosMutations = tuple[QosMutation, ...]


def state_to_plain(auth: AuthState, qos: QosState) -> list[Any]:
    return [to_plain(auth), to_plain(qos)]


def state_from_plain(data: Any) -> tuple[AuthState, QosState]:
    """The stored auth and qos states; a snapshot written before auth existed has neither."""
    if data is None:
        return AuthState(), QosState()
    auth, qos = (from_plain(part) for part in data)
    if not isinstance(auth, AuthState) or not isinstance(qos, QosState):
        raise AuthDecodeError(
            f"group0 snapshot holds {type(auth).__name__}/{type(qos).__name__} as auth state"
        )
    return auth, qos


def mutations_to_plain(auth: AuthMutations, qos: QosMutations) -> list[Any]:
    return [to_plain(auth), to_plain(qos)]


def mutations_from_plain(data: Any) -> tuple[AuthMutations, QosMutations]:
    if data is None:
        return (), ()
    auth, qos = (from_plain(part) for part in data)
    return tuple(auth), tuple(qos)


def apply_auth(
    auth: AuthState, qos: QosState, auth_mutations: AuthMutations, qos_mutations: QosMutations
) -> tuple[AuthState, QosState]:
    """Both states after a command's mutations (unchanged objects when it carries none)."""
    if auth_mutations:
        auth = apply_auth_mutations(auth, auth_mutations)
    if qos_mutations:
        qos = apply_qos_mutations(qos, qos_mutations)
    return auth, qos


@dataclass(frozen=True)
class AuthOutcome(DdlOutcome):
    """A decision's outcome that also changes roles, grants or service levels.

    A subclass of the schema outcome, so every metadata store commits it through its one
    `change_schema` path and only has to pass `group0.state.with_auth` the command it built."""

    auth_mutations: AuthMutations = ()
    qos_mutations: QosMutations = ()

    @property
    def is_noop(self) -> bool:
        return not (self.mutations or self.auth_mutations or self.qos_mutations)
