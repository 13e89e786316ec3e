"""Salted password hashes: what roles store, and the check a login runs.

We write SHA-512 crypt (what ScyllaDB writes) and verify it plus bcrypt (what Cassandra writes),
so a DESCRIBE ... WITH PASSWORDS backup from either restores with working logins. Verifying is
deliberately slow (thousands of hash rounds): the integrator calls `verify_password` off the
event loop and caches successful logins.
"""

from __future__ import annotations

import hmac
import secrets

import bcrypt

from tabletdb.auth.sha512_crypt import ALPHABET, SALT_MAX, sha512_crypt

BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
BCRYPT_MAX_PASSWORD_BYTES = 72  # bcrypt only ever looks at this many bytes (jBCrypt truncates)


def new_salt() -> str:
    """A random 16-character crypt salt; the hash is computed once by the deciding node and
    replicated, so randomness here does not break deterministic apply."""
    return "".join(secrets.choice(ALPHABET) for _ in range(SALT_MAX))


def hash_password(password: str, salt: str | None = None) -> str:
    """`$6$<salt>$<hash>` for `password` (a fresh random salt unless one is given)."""
    chosen = new_salt() if salt is None else salt
    if not chosen or "$" in chosen or len(chosen) > SALT_MAX:
        raise ValueError(f"a crypt salt is 1-{SALT_MAX} characters without '$', got {chosen!r}")
    return sha512_crypt(password, f"$6${chosen}")


def is_supported_hash(salted_hash: str) -> bool:
    """Whether `verify_password` understands this hash format."""
    return salted_hash.startswith("$6$") or salted_hash.startswith(BCRYPT_PREFIXES)


def verify_password(password: str, salted_hash: str) -> bool:
    """True when `password` matches `salted_hash` ($6$ SHA-512 crypt or $2a$/$2b$/$2y$ bcrypt).

    Unknown or malformed hashes never match (a login must not fail with a server error because
    a restored role carries a hash we cannot read)."""
    if salted_hash.startswith("$6$"):
        try:
            computed = sha512_crypt(password, salted_hash)
        except ValueError:
            return False
        return hmac.compare_digest(computed.encode(), salted_hash.encode())
    if salted_hash.startswith(BCRYPT_PREFIXES):
        candidate = password.encode("utf-8")[:BCRYPT_MAX_PASSWORD_BYTES]
        try:
            return bool(bcrypt.checkpw(candidate, salted_hash.encode("ascii")))
        except (ValueError, UnicodeEncodeError):
            return False
    return False
