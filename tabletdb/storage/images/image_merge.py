"""Merging a whole tablet file into a store's file inside SQLite: set-based, last write wins.

A tablet image (a bulk load's file, a migration's copy, a restore's file whose boundaries do not
match) is attached to the store's writing connection and merged with one
``INSERT INTO main.t SELECT ... FROM src.t ... ON CONFLICT DO UPDATE`` per data table, with the
same conflict clauses the per-write upserts use (``sqlite_schema.DATA_TABLES``), so a merged file
reads exactly as if its mutations had been applied one by one — but no row passes through Python.
The source tables are WITHOUT ROWID tables clustered by partition key, so the inserts arrive in
key order. All statements run in one transaction, so a crash leaves either the whole image merged
or none of it.

An image may hold partitions the target must not take (a restore file spanning several tablets,
a vnode file holding other nodes' ranges): ``pieces`` then names the token ranges to take, and
their partition keys are collected first into a temporary table the statements filter on.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tabletdb.dht.token import TokenRange
from tabletdb.storage.sqlite_schema import DATA_TABLES

SOURCE = "src"
"""The schema name the image is attached under."""

_KEYS = "temp.merge_keys"


def merge_statements(filtered: bool) -> tuple[str, ...]:
    """One INSERT ... SELECT per data table, partitions first. ``filtered``: only partitions
    whose keys are in the temporary key table. (SQLite needs a WHERE before ON CONFLICT in an
    INSERT ... SELECT, hence ``WHERE true``.)"""
    where = f"WHERE s.pk IN (SELECT pk FROM {_KEYS})" if filtered else "WHERE true"
    out = []
    for table, columns, conflict in DATA_TABLES:
        names = ", ".join(columns)
        selected = ", ".join(f"s.{c}" for c in columns)
        out.append(
            f"INSERT INTO main.{table} ({names}) SELECT {selected} "
            f"FROM {SOURCE}.{table} AS s {where}{conflict}"
        )
    return tuple(out)


_ALL = merge_statements(filtered=False)
_FILTERED = merge_statements(filtered=True)


def merge_attached(conn: sqlite3.Connection, pieces: Sequence[TokenRange] | None) -> int:
    """Merge the image attached as ``src`` into ``main`` (inside the caller's transaction):
    every partition, or those whose token lies in one of ``pieces``. Returns how many
    partitions the image contributed."""
    if pieces is None:
        (count,) = conn.execute(f"SELECT count(*) FROM {SOURCE}.partitions").fetchone()
        for statement in _ALL:
            conn.execute(statement)
        return int(count)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS merge_keys (pk BLOB PRIMARY KEY) WITHOUT ROWID")
    conn.execute(f"DELETE FROM {_KEYS}")
    bounds = [(p.start, p.end) for piece in pieces for p in piece.unwrap()]
    conn.executemany(
        f"INSERT OR IGNORE INTO {_KEYS} SELECT pk FROM {SOURCE}.partitions WHERE token > ? AND token <= ?",
        bounds,
    )
    (count,) = conn.execute(f"SELECT count(*) FROM {_KEYS}").fetchone()
    if count:
        for statement in _FILTERED:
            conn.execute(statement)
    conn.execute(f"DELETE FROM {_KEYS}")
    return int(count)
