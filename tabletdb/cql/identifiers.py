"""Identifier and string-literal formatting, as ScyllaDB prints them in DESCRIBE and schema events.

An identifier stays bare only if it matches `[a-z][a-z0-9_]*` and is not a reserved keyword
(spec/describe.md); otherwise it is double-quoted with inner quotes doubled.
"""

from __future__ import annotations

import re

_BARE = re.compile(r"[a-z][a-z0-9_]*\Z")

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
    if _BARE.match(name) and name not in RESERVED_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_string(value: str) -> str:
    """A CQL string literal: single quotes, inner single quotes doubled."""
    return "'" + value.replace("'", "''") + "'"
