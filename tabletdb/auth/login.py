"""Password login (PasswordAuthenticator over SASL PLAIN, and the REST API's basic auth).

A failed login says only `Username and/or password are incorrect`, never which part was wrong,
and costs the same work either way: a name with no role (or a role without a password) is
checked against a dummy hash of the scheme we write, so the time an answer takes does not tell
which roles exist. `verify_password` is slow on purpose; the integrator runs `authenticate` off
the event loop and caches successes (keyed by the stored hash, so a password change
invalidates the entry).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from tabletdb.auth.model import AuthState
from tabletdb.auth.passwords import hash_password, verify_password
from tabletdb.cql.errors import BadCredentials

BAD_CREDENTIALS = "Username and/or password are incorrect"

Verify = Callable[[str, str], bool]
"""(password, salted hash) -> whether they match: `verify_password`, or a wrapper counting it."""


@functools.cache
def dummy_hash() -> str:
    """A `$6$` hash (default rounds, like every hash we write) that no login is checked into
    successfully: unknown names are verified against it. Computed once, on first use."""
    return hash_password("no role has this password", salt="tabletdbdummy")


def stored_hash(state: AuthState, username: str) -> str | None:
    """The hash a login for `username` must match; None if there is none (no such role, or a
    role without a password)."""
    role = state.role(username)
    return None if role is None else role.salted_hash


def authenticate(state: AuthState, username: str, password: str, verify: Verify = verify_password) -> str:
    """The logged-in role's name, or BadCredentials. A role with the right password but
    LOGIN = false is told so (Cassandra does the same, after the password check). Exactly one
    `verify` runs per call, whether or not the role exists."""
    hashed = stored_hash(state, username)
    matched = verify(password, dummy_hash() if hashed is None else hashed)
    if hashed is None or not matched:
        raise BadCredentials(BAD_CREDENTIALS)
    if not state.can_login(username):
        raise BadCredentials(f"{username} is not permitted to log in")
    return username
