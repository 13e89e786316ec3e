"""Identifier and string-literal formatting, as ScyllaDB prints them in DESCRIBE and schema events.

An identifier stays bare only if it matches `[a-z][a-z0-9_]*` and is not a reserved keyword
(spec/describe.md) or a word the lexer takes for an ISO 8601 duration (`p1d`); otherwise it is
double-quoted with inner quotes doubled.
"""

from __future__ import annotations

import re

_BARE = re.compile(r"[a-z][a-z0-9_]*\Z")
# Bare words the lexer reads as ISO 8601 durations (`p1d`, `pt5m`, `p2w`): quoted, or they
# would come back as a duration literal instead of the identifier.
_ISO_DURATION = re.compile(
    r"p(?=[0-9]|t[0-9])(?:[0-9]+y)?(?:[0-9]+m)?(?:[0-9]+w)?(?:[0-9]+d)?"
    r"(?:t(?=[0-9])(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?)?\Z"
)

# Reserved keywords of CQL 3 (ScyllaDB's list): these can never be used bare as identifiers.
RESERVED_KEYWORDS: frozenset[str] = frozenset(
    """
    add allow alter and apply asc authorize batch begin by columnfamily create delete desc describe
    drop entries execute from full grant if in index infinity insert into is keyspace limit modify
    nan norecursive not null of on or order primary rename replace revoke schema select set table
    to token truncate unlogged update use using view where with mbean mbeans
    """.split()
) | {"true", "false"}  # never identifiers in ScyllaDB's grammar: a bare `true` is the literal


def quote_identifier(name: str) -> str:
    """Return `name` as CQL would print it: bare when possible, else double-quoted."""
    if _BARE.match(name) and name not in RESERVED_KEYWORDS and not _ISO_DURATION.match(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_string(value: str) -> str:
    """A CQL string literal: single quotes, inner single quotes doubled."""
    return "'" + value.replace("'", "''") + "'"
