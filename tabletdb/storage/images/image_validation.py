"""Checks an uploaded tablet image must pass before a node installs or applies it.

The REST API's tablet load takes a file from the network; SQLite's ``PRAGMA quick_check``
(``structure``) only proves SQLite can read it. This module proves it is what it claims to be, so
a tampered image is refused rather than installed:

* its schema is exactly a tablet file's (the tables and indexes `sqlite_schema.DDL` creates, no
  triggers or views of any kind, our schema version): nothing runs or hides inside it;
* every partition's token is inside the token range the upload names, and is the token of its
  key (so no row lands in a tablet it does not belong to); every row, cell and tombstone belongs
  to one of its partitions (none hides, to surface once a write creates its partition), and
  every cell names a column the target table has or had;
* no timestamp (cells, row markers, tombstones of every kind) is further in the future than
  the allowed bound: a write from the far future would shadow every later write for good.
  ScyllaDB refuses such USING TIMESTAMP values (``restrict_future_timestamp``, 3 days), and
  uploads are held to the same bound.

All checks are read-only queries on a staged copy; the caller runs this off the event loop.
They are most of what a restore costs a node (~7 ms of CPU per MB of tablet file before they
were folded together), so they share one connection that maps the file into memory (the scans
read pages from the page cache without a read() call and a copy each), with ``structure`` the
``PRAGMA quick_check`` too; each table is scanned once for all its timestamp columns (the cells'
column test rides in the same scan), the orphan checks probe the partitions' keys once per
distinct key, not per row, and the key tokens are computed by the driver's C murmur3 registered as
a SQL function, so Python sees only the keys whose raw hash is not their token.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tabletdb.dht.murmur3 import murmur3_h1, token_of
from tabletdb.dht.token import TokenRange
from tabletdb.schema.model import TableDef
from tabletdb.storage.sqlite_schema import DDL, SCHEMA_VERSION

FUTURE_TIMESTAMP_LIMIT_US = 3 * 24 * 3600 * 1_000_000
"""ScyllaDB's bound for restrict_future_timestamp: 3 days, in microseconds."""

_TIMESTAMP_COLUMNS = {
    "cells": ("ts",),
    "rows": ("marker_ts", "tombstone"),
    "partitions": ("tombstone",),
    "collection_tombstones": ("ts",),
    "range_tombstones": ("ts",),
}
MMAP_BYTES = 1 << 30
"""How much of a staged image the checks map into memory (SQLite reads the rest as usual)."""


_PARTITION_CHILDREN = ("rows", "cells", "collection_tombstones", "range_tombstones")


class ImageRejected(ValueError):
    """The image is not an acceptable tablet file for the upload; the message says why."""


def _normalized(sql: str | None) -> str | None:
    return None if sql is None else re.sub(r"\s+", " ", sql).strip()


def _schema(conn: sqlite3.Connection) -> set[tuple[str, str, str, str | None]]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(kind, name, table, _normalized(sql)) for kind, name, table, sql in rows}


def expected_schema() -> set[tuple[str, str, str, str | None]]:
    conn = sqlite3.connect(":memory:")
    try:
        for statement in DDL:
            conn.execute(statement)
        return _schema(conn)
    finally:
        conn.close()


def _check_schema(conn: sqlite3.Connection) -> None:
    found, expected = _schema(conn), expected_schema()
    if found != expected:
        extra = sorted(f"{kind} {name}" for kind, name, _, _ in found - expected)
        missing = sorted(f"{kind} {name}" for kind, name, _, _ in expected - found)
        raise ImageRejected(
            "the upload is not a tablet file: its schema differs from a tablet file's"
            f" (unexpected or altered: {', '.join(extra) or '-'}; missing: {', '.join(missing) or '-'})"
        )
    version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if version is None or version[0] != SCHEMA_VERSION:
        raise ImageRejected(
            f"the upload is a tablet file of schema version {version[0] if version else None},"
            f" this node reads version {SCHEMA_VERSION}"
        )


def _outside(token_range: TokenRange) -> tuple[str, list[int]]:
    """A WHERE clause (and its parameters) matching tokens outside ``token_range``."""
    pieces = token_range.unwrap()
    if not pieces:
        return "true", []
    inside = " OR ".join("(token > ? AND token <= ?)" for _ in pieces)
    return f"NOT ({inside})", [bound for p in pieces for bound in (p.start, p.end)]


def _check_partitions(conn: sqlite3.Connection, table: TableDef, token_range: TokenRange) -> None:
    where, params = _outside(token_range)
    stray = conn.execute(
        f"SELECT token FROM partitions WHERE typeof(token) != 'integer' OR {where} LIMIT 1", params
    ).fetchone()
    if stray is not None:
        raise ImageRejected(
            f"the upload holds a partition with token {stray[0]}, outside the token range"
            f" ({token_range.start}, {token_range.end}] it was sent for"
        )
    if not table.is_cdc_log:  # CDC log tables place rows by their own partitioner
        _check_key_tokens(conn)
    for child in _PARTITION_CHILDREN:
        # Each table's key starts with pk, so DISTINCT walks it in order without a sort, and a
        # partition's many rows or cells cost one lookup; NOT IN probes the partitions' key
        # b-tree directly (cheaper than a correlated NOT EXISTS per key).
        orphan = conn.execute(
            f"SELECT 1 FROM (SELECT DISTINCT pk FROM {child}) AS c"
            " WHERE c.pk NOT IN (SELECT pk FROM partitions) LIMIT 1"
        ).fetchone()
        if orphan is not None:
            raise ImageRejected(f"the upload holds {child} of a partition it does not list")


_KEY_HASH = "tabletdb_murmur3"
_WRONG_KEY_TOKEN = (
    f"SELECT pk, token FROM partitions WHERE typeof(pk) != 'blob'"
    f" OR CASE WHEN typeof(pk) = 'blob' THEN {_KEY_HASH}(pk) END != token"
)
"""Partitions whose raw key hash is not their token (and keys that are not BLOBs, which the C
hash would not take): usually none, and `token_of`'s two special cases otherwise."""


def _check_key_tokens(conn: sqlite3.Connection) -> None:
    """Every partition is stored under its key's token. The murmur3 runs as a SQL function (the
    driver's C hash called by SQLite: no Python tuple per key), and only the keys whose raw hash
    differs come back, to go through `token_of`, which knows the ring's two special cases (the
    empty key, the reserved minimum token)."""
    conn.create_function(_KEY_HASH, 1, murmur3_h1, deterministic=True)
    for pk, token in conn.execute(_WRONG_KEY_TOKEN):
        if pk.__class__ is not bytes or token_of(pk) != token:
            raise ImageRejected(
                f"the upload holds a partition stored under token {token}, not its key's token"
            )


def _unknown_column_test(known: set[str]) -> str:
    """A SQL test true for a cell of a column outside ``known``: a chain of comparisons for a few
    columns (cheaper per cell than the b-tree probe of NOT IN), NOT IN beyond that."""
    literals = sorted("'" + name.replace("'", "''") + "'" for name in known)
    if not literals:
        return "1"
    if len(literals) <= _CHAINED_COLUMNS:
        return " AND ".join(f"col != {lit}" for lit in literals)
    return f"col NOT IN ({', '.join(literals)})"


_CHAINED_COLUMNS = 8


def _check_cells_and_timestamps(conn: sqlite3.Connection, table: TableDef, limit_us: int | None) -> None:
    """Every cell names a column the table has or had, and (``limit_us`` not None) no timestamp of
    any table is beyond it: one pass per table, the cells' column test in the same pass as their
    timestamps (the cells table is most of the file, and each pass over it decodes every cell)."""
    known = {c.name for c in table.columns if not c.is_primary_key} | {n for n, _ in table.dropped_columns}
    for name, columns in _TIMESTAMP_COLUMNS.items():
        if limit_us is None and name != "cells":
            continue
        aggregates = [f"max({c})" for c in columns] if limit_us is not None else []
        if name == "cells":
            aggregates.append(f"count(*) FILTER (WHERE {_unknown_column_test(known)})")
        found = conn.execute(f"SELECT {', '.join(aggregates)} FROM {name}").fetchone()
        if limit_us is not None:
            for column, highest in zip(columns, found):
                if highest is not None and highest > limit_us:
                    raise ImageRejected(
                        f"the upload holds a timestamp {highest} ({name}.{column}) beyond now + 3 days"
                        f" ({limit_us}); restrict_future_timestamp refuses such writes"
                    )
        if name == "cells" and found[-1]:
            _name_unknown_column(conn, table, known)


def _name_unknown_column(conn: sqlite3.Connection, table: TableDef, known: set[str]) -> None:
    for (column,) in conn.execute("SELECT DISTINCT col FROM cells"):
        if column not in known:
            raise ImageRejected(
                f"the upload holds cells of column {column!r}, which {table.keyspace}.{table.name} never had"
            )
    raise ImageRejected(f"the upload holds cells of a column {table.keyspace}.{table.name} never had")


def _check_structure(conn: sqlite3.Connection) -> None:
    verdict = conn.execute("PRAGMA quick_check(5)").fetchall()
    if [row[0] for row in verdict] != ["ok"]:
        found = "; ".join(str(row[0]) for row in verdict)
        raise ImageRejected(f"the upload failed SQLite's integrity check: {found}")


def validate_image(
    path: Path,
    table: TableDef,
    token_range: TokenRange,
    max_timestamp_us: int | None,
    *,
    structure: bool = False,
) -> None:
    """ImageRejected unless the staged image at `path` is a tablet file of `table` whose data
    all lies in `token_range`, with no timestamp above `max_timestamp_us` (None: unchecked);
    ``structure``: and its b-trees pass ``PRAGMA quick_check`` (checked first)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ImageRejected(f"the upload is not a readable SQLite file: {exc}") from exc
    try:
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        if structure:
            _check_structure(conn)
        _check_schema(conn)
        _check_partitions(conn, table, token_range)
        _check_cells_and_timestamps(conn, table, max_timestamp_us)
    except sqlite3.Error as exc:
        raise ImageRejected(f"the upload is not a readable tablet file: {exc}") from exc
    finally:
        conn.close()
