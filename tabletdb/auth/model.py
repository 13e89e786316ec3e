"""Roles and permission grants as one immutable value, part of the group0 state.

Readers keep the object they fetched while a new one is built; every field holds plain data
(strings, bools, tuples) so it replicates and snapshots without special cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabletdb.auth.resources import Permission
from tabletdb.schema.frozenmap import FrozenMap

ALLOW_ALL_AUTHENTICATOR = "org.apache.cassandra.auth.AllowAllAuthenticator"
PASSWORD_AUTHENTICATOR = "org.apache.cassandra.auth.PasswordAuthenticator"
ALLOW_ALL_AUTHORIZER = "org.apache.cassandra.auth.AllowAllAuthorizer"
CASSANDRA_AUTHORIZER = "org.apache.cassandra.auth.CassandraAuthorizer"
AUTHENTICATORS = (ALLOW_ALL_AUTHENTICATOR, PASSWORD_AUTHENTICATOR)
AUTHORIZERS = (ALLOW_ALL_AUTHORIZER, CASSANDRA_AUTHORIZER)

DEFAULT_SUPERUSER = "cassandra"
DEFAULT_SUPERUSER_PASSWORD = "cassandra"


def _full_name(name: str, known: tuple[str, ...], what: str) -> str:
    """Accept the short class name too (`PasswordAuthenticator`), as Scylla's config does."""
    for candidate in known:
        if name in (candidate, candidate.rsplit(".", 1)[1]):
            return candidate
    raise ValueError(f"unknown {what} {name!r}; expected one of {', '.join(known)}")


@dataclass(frozen=True)
class AuthConfig:
    """The node's authenticator and authorizer (config `authenticator`, `authorizer`)."""

    authenticator: str = ALLOW_ALL_AUTHENTICATOR
    authorizer: str = ALLOW_ALL_AUTHORIZER

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "authenticator", _full_name(self.authenticator, AUTHENTICATORS, "authenticator")
        )
        object.__setattr__(self, "authorizer", _full_name(self.authorizer, AUTHORIZERS, "authorizer"))

    @property
    def uses_passwords(self) -> bool:
        return self.authenticator == PASSWORD_AUTHENTICATOR

    @property
    def enforces_permissions(self) -> bool:
        return self.authorizer == CASSANDRA_AUTHORIZER


@dataclass(frozen=True)
class Role:
    """`member_of`: the roles granted to this one (sorted), whose permissions it inherits."""

    name: str
    can_login: bool = False
    is_superuser: bool = False
    salted_hash: str | None = None
    member_of: tuple[str, ...] = ()


Grants = tuple[Permission, ...]


@dataclass(frozen=True)
class AuthState:
    """All roles, and the permissions granted directly to each role on each resource."""

    roles: FrozenMap[str, Role] = field(default_factory=FrozenMap)
    # (role, resource name) -> permissions, in Permission order; never empty.
    grants: FrozenMap[tuple[str, str], Grants] = field(default_factory=FrozenMap)

    def role(self, name: str) -> Role | None:
        return self.roles.get(name)

    def granted(self, role: str, resource: str) -> Grants:
        return self.grants.get((role, resource), ())

    def closure(self, name: str) -> list[str]:
        """`name` and every role it inherits, transitively, in breadth-first order."""
        seen = [name]
        index = 0
        while index < len(seen):
            current = self.roles.get(seen[index])
            index += 1
            if current is None:
                continue
            for granted in current.member_of:
                if granted not in seen:
                    seen.append(granted)
        return seen

    def is_superuser(self, name: str) -> bool:
        """Superuser status is inherited, as in Cassandra: any role in the closure grants it."""
        return any((r := self.roles.get(n)) is not None and r.is_superuser for n in self.closure(name))

    def can_login(self, name: str) -> bool:
        found = self.roles.get(name)
        return found is not None and found.can_login

    def members_of(self, name: str) -> list[str]:
        """Roles that `name` is directly granted to, sorted."""
        return sorted(r.name for r in self.roles.values() if name in r.member_of)
