"""Auth mutations: the replicated form of role and permission changes, and their apply.

Decision functions (tabletdb.auth.roles, .permissions) validate against the current state and
produce these; group0 logs them and every node applies them in order. Apply never validates
and consults no clock or randomness, so all replicas end with equal states.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from tabletdb.auth import resources
from tabletdb.auth.model import AuthState, Role
from tabletdb.auth.resources import Permission, sort_permissions


@dataclass(frozen=True)
class PutRole:
    """Create a role or replace its attributes (memberships included, as carried)."""

    role: Role


@dataclass(frozen=True)
class RemoveRole:
    """Drop a role: also its memberships, the grants it holds and the grants on it."""

    name: str


@dataclass(frozen=True)
class AddMembership:
    role: str  # the role granted
    grantee: str


@dataclass(frozen=True)
class RemoveMembership:
    role: str
    revokee: str


@dataclass(frozen=True)
class AddPermissions:
    role: str
    resource: str
    permissions: tuple[Permission, ...]


@dataclass(frozen=True)
class RemovePermissions:
    role: str
    resource: str
    permissions: tuple[Permission, ...]


@dataclass(frozen=True)
class RevokeAllOn:
    """Forget every grant on `resource` and on anything inside it (the resource was dropped)."""

    resource: str


AuthMutation = (
    PutRole | RemoveRole | AddMembership | RemoveMembership | AddPermissions | RemovePermissions | RevokeAllOn
)


def apply_auth_mutations(state: AuthState, mutations: Iterable[AuthMutation]) -> AuthState:
    for mutation in mutations:
        state = _apply_one(state, mutation)
    return state


def _set_grant(state: AuthState, key: tuple[str, str], perms: set[Permission]) -> AuthState:
    grants = state.grants.set(key, sort_permissions(perms)) if perms else state.grants.remove(key)
    return replace(state, grants=grants)


def _remove_role(state: AuthState, name: str) -> AuthState:
    roles = state.roles.remove(name)
    for other in state.roles.values():
        if name in other.member_of:
            kept = tuple(r for r in other.member_of if r != name)
            roles = roles.set(other.name, replace(other, member_of=kept))
    grants = state.grants
    on_role = resources.role(name)
    for key in list(grants):
        if key[0] == name or key[1] == on_role:
            grants = grants.remove(key)
    return AuthState(roles, grants)


def _apply_one(state: AuthState, m: AuthMutation) -> AuthState:
    if isinstance(m, PutRole):
        return replace(state, roles=state.roles.set(m.role.name, m.role))
    if isinstance(m, RemoveRole):
        return _remove_role(state, m.name)
    if isinstance(m, AddMembership | RemoveMembership):
        target = m.grantee if isinstance(m, AddMembership) else m.revokee
        found = state.roles.get(target)
        if found is None:
            return state
        members = set(found.member_of)
        if isinstance(m, AddMembership):
            members.add(m.role)
        else:
            members.discard(m.role)
        updated = replace(found, member_of=tuple(sorted(members)))
        return replace(state, roles=state.roles.set(target, updated))
    if isinstance(m, AddPermissions):
        key = (m.role, m.resource)
        return _set_grant(state, key, set(state.granted(*key)) | set(m.permissions))
    if isinstance(m, RemovePermissions):
        key = (m.role, m.resource)
        return _set_grant(state, key, set(state.granted(*key)) - set(m.permissions))
    if isinstance(m, RevokeAllOn):
        grants = state.grants
        for key in list(grants):
            if resources.is_within(key[1], m.resource):
                grants = grants.remove(key)
        return replace(state, grants=grants)
    raise TypeError(f"unknown auth mutation {m!r}")
