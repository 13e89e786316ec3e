"""SASL PLAIN, as PlainTextAuthProvider sends it: `authzid NUL authcid NUL password` (UTF-8)."""

from __future__ import annotations

from tabletdb.cql.errors import BadCredentials

PASSWORD_AUTHENTICATOR = "org.apache.cassandra.auth.PasswordAuthenticator"


def parse_plain_token(token: bytes | None) -> tuple[str, str]:
    """(username, password) from a PLAIN token, parsed from the end as Scylla does: the password
    follows the last NUL, the username sits between the last two, any authzid before is ignored."""
    if not token:
        raise BadCredentials("Authentication ID must not be null")
    last = token.rfind(b"\x00")
    if last < 0:
        raise BadCredentials("Authentication ID must not be null")
    password = token[last + 1 :]
    prev = token.rfind(b"\x00", 0, last)
    username = token[prev + 1 : last]
    if not username:
        raise BadCredentials("Authentication ID must not be null")
    if not password:
        raise BadCredentials("Password must not be null")
    try:
        return username.decode("utf-8"), password.decode("utf-8")
    except UnicodeDecodeError:
        raise BadCredentials("Username and/or password are not valid UTF-8") from None


def plain_token(username: str, password: str) -> bytes:
    return b"\x00" + username.encode("utf-8") + b"\x00" + password.encode("utf-8")
