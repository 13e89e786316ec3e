"""Password login (PasswordAuthenticator over SASL PLAIN).

A failed login says only `Username and/or password are incorrect`, never which part was wrong.
`verify_password` is slow on purpose; the integrator runs `authenticate` off the event loop and
caches successes (keyed by the stored hash, so a password change invalidates the entry).
"""

from __future__ import annotations

from tabletdb.auth.model import AuthState
from tabletdb.auth.passwords import verify_password
from tabletdb.cql.errors import BadCredentials

BAD_CREDENTIALS = "Username and/or password are incorrect"


def stored_hash(state: AuthState, username: str) -> str:
    """The hash a login for `username` must match; BadCredentials if there is none."""
    role = state.role(username)
    if role is None or role.salted_hash is None:
        raise BadCredentials(BAD_CREDENTIALS)
    return role.salted_hash


def authenticate(state: AuthState, username: str, password: str) -> str:
    """The logged-in role's name, or BadCredentials. A role with the right password but
    LOGIN = false is told so (Cassandra does the same, after the password check)."""
    hashed = stored_hash(state, username)
    if not verify_password(password, hashed):
        raise BadCredentials(BAD_CREDENTIALS)
    if not state.can_login(username):
        raise BadCredentials(f"{username} is not permitted to log in")
    return username
