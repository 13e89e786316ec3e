"""What a backup directory holds, and the schema text transformations restore needs.

Layout of a backup directory::

    manifest.json        cluster, time, and per table: id, tablet count, token boundaries,
                         row count, files (tablet, token range, size, sha256, rows)
    schema.cql           DESC SCHEMA WITH INTERNALS AND PASSWORDS, statements in replay order
    data/<ks>/<table>-<id hex>/tablet-<n>.db        one SQLite file per tablet (never spans two)
    data/<ks>/<table>-<id hex>/<host>-shard-<s>.db  vnode tables: one per node shard

The manifest is the contract between backup and restore; it is written last (atomically), so a
directory without one is an unfinished backup.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tabletdb.spark.backup_store import BackupStore, as_store

MANIFEST = "manifest.json"
SCHEMA = "schema.cql"
FORMAT = 1


class ManifestError(ValueError):
    """The backup directory is incomplete or its manifest is not one this version reads."""


@dataclass(frozen=True)
class BackupFile:
    """One data file: the tablet (None for a vnode shard file) and the range it covers."""

    tablet_id: int | None
    first_token: int
    """Exclusive start of the range, as in the tablet map."""
    last_token: int
    path: str
    """Relative to the backup directory."""
    size: int
    sha256: str
    rows: int
    source_host: str


@dataclass(frozen=True)
class TableEntry:
    keyspace: str
    table: str
    id: str
    uses_tablets: bool
    tablet_count: int
    last_tokens: list[int]
    row_count: int
    files: list[BackupFile] = field(default_factory=list)
    is_view: bool = False


@dataclass(frozen=True)
class Manifest:
    cluster_name: str
    time: str
    tag: str
    keyspaces: list[str]
    tables: list[TableEntry]
    format: int = FORMAT
    replicas: str = "one"
    """"one": one replica's file per tablet, row counts exact; "all": every replica's file,
    row counts of the fullest replica (a lower bound when replicas diverged)."""

    @property
    def total_bytes(self) -> int:
        return sum(f.size for t in self.tables for f in t.files)

    @property
    def total_rows(self) -> int:
        return sum(t.row_count for t in self.tables)

    def table_by_id(self, table_id: str) -> TableEntry | None:
        return next((t for t in self.tables if t.id == table_id), None)


def write_manifest(directory: BackupStore | Path | str, manifest: Manifest) -> None:
    """Written under a temporary name and renamed (moved): a reader sees all of it or none."""
    as_store(directory).write_atomic(MANIFEST, json.dumps(asdict(manifest), indent=1).encode())


def read_manifest(directory: BackupStore | Path | str) -> Manifest:
    store = as_store(directory)
    where = store.child(MANIFEST)
    if not store.is_file(MANIFEST):
        raise ManifestError(f"{store} has no {MANIFEST}: not a backup, or the backup did not finish")
    try:
        body: dict[str, Any] = json.loads(store.read_text(MANIFEST))
        if body.get("format") != FORMAT:
            raise ManifestError(
                f"{where}: manifest format {body.get('format')!r}, this version reads {FORMAT}"
            )
        tables = [
            TableEntry(**{**t, "files": [BackupFile(**f) for f in t["files"]]}) for t in body.pop("tables")
        ]
        return Manifest(**body, tables=tables)
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{where} is not a valid manifest: {exc}") from None


# --- schema.cql --------------------------------------------------------------------------------


def split_statements(text: str) -> list[str]:
    """CQL statements of a script, in order, without their `;`.

    Semicolons inside string literals ('...'), quoted identifiers ("..."), $$-bodies and
    comments do not end a statement: a UDF body or a table comment may contain one.
    """
    out: list[str] = []
    start = i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in ("'", '"'):
            i += 1
            while i < n and not (text[i] == c and text[i + 1 : i + 2] != c):
                i += 2 if text[i] == c else 1
        elif text.startswith("$$", i):
            end = text.find("$$", i + 2)
            i = n - 1 if end < 0 else end + 1
        elif text.startswith("--", i) or text.startswith("//", i):
            end = text.find("\n", i)
            i = n - 1 if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n - 1 if end < 0 else end + 1
        elif c == ";":
            out.append(text[start:i].strip())
            start = i + 1
        i += 1
    out.append(text[start:].strip())
    return [s for s in out if s]


_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\b", re.IGNORECASE)
_TABLE_ID = re.compile(
    r"\bWITH\s+ID\s*=\s*([0-9a-fA-F-]{36})|\bAND\s+ID\s*=\s*([0-9a-fA-F-]{36})", re.IGNORECASE
)
_TABLETS_OPTION = re.compile(r"\btablets\s*=\s*\{[^}]*\}", re.IGNORECASE)
_OPTIONS_START = re.compile(r"\)\s*WITH\s", re.IGNORECASE)


_CREATE_INDEX = re.compile(r"^\s*CREATE\s+(?:CUSTOM\s+)?INDEX\b", re.IGNORECASE)


def creates_index(statement: str) -> bool:
    return _CREATE_INDEX.match(statement) is not None


def created_table_id(statement: str) -> str | None:
    """The `WITH ID = ...` of a CREATE TABLE statement (DESC ... WITH INTERNALS writes it)."""
    if not _CREATE_TABLE.match(statement):
        return None
    found = _TABLE_ID.search(statement)
    return None if found is None else (found.group(1) or found.group(2)).lower()


def _options_offset(statement: str) -> int | None:
    """Where the table options begin: after the `) WITH` closing the column list."""
    last = None
    for m in _OPTIONS_START.finditer(statement):
        last = m
    return None if last is None else last.end()


def tablets_option(statement: str) -> str:
    """The `tablets = {...}` map literal of a CREATE TABLE, or `{}` when it has none."""
    offset = _options_offset(statement)
    found = None if offset is None else _TABLETS_OPTION.search(statement, offset)
    return "{}" if found is None else found.group(0).split("=", 1)[1].strip()


def pin_tablet_count(statement: str, count: int) -> str:
    """The CREATE TABLE with `tablets = {min_tablet_count = max_tablet_count = count}`, so the new
    table gets exactly the backed-up tablet boundaries (counts are powers of two)."""
    pinned = f"tablets = {{'min_tablet_count': {count}, 'max_tablet_count': {count}}}"
    offset = _options_offset(statement)
    if offset is None:
        return f"{statement} WITH {pinned}"
    found = _TABLETS_OPTION.search(statement, offset)
    if found is not None:
        return statement[: found.start()] + pinned + statement[found.end() :]
    return f"{statement}\n    AND {pinned}"


_NAME = r'("(?:[^"]|"")+"|\w+)'
_GRANT_ON_KEYSPACE = re.compile(r"\bON\s+(?:ALL\s+FUNCTIONS\s+IN\s+)?KEYSPACE\s+" + _NAME, re.IGNORECASE)
_GRANT_ON_OBJECT = re.compile(r"\bON\s+(?:TABLE\s+|FUNCTION\s+)?" + _NAME + r"\.", re.IGNORECASE)


def granted_keyspace(statement: str) -> str | None:
    """The keyspace a GRANT's resource lives in (None for roles, ALL KEYSPACES, ...), so a
    partial backup can leave out grants on keyspaces it does not hold."""
    found = _GRANT_ON_KEYSPACE.search(statement) or _GRANT_ON_OBJECT.search(statement)
    if found is None:
        return None
    name = found.group(1)
    return name[1:-1].replace('""', '"') if name.startswith('"') else name.lower()
