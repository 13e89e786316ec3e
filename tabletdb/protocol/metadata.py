"""Encoding of column metadata (shared by Rows and Prepared results) and the result-metadata id.

The metadata id lets a driver that negotiated SCYLLA_USE_METADATA_ID skip result metadata on
EXECUTE and still notice a schema change: it must be a stable function of the result columns.
We define it as the first 16 bytes of SHA-256 over, for each column in order, the column name
and the CQL type text (`type.cql()`), each written as a `[string]` (u16 length + UTF-8), so no
two different column lists can produce the same byte stream.

The metadata values themselves (`ColumnSpec`, `RowsMetadata`) are `tabletdb.cql.results`; what
is derived from a column list alone is kept in the value's `WireMemo`, filled here.
"""

from __future__ import annotations

import hashlib

from tabletdb.cql.results import ColumnSpec, RowsMetadata, WireMemo
from tabletdb.protocol.types_wire import write_option
from tabletdb.protocol.wire import write_bytes, write_int, write_short_bytes, write_string

# Rows metadata flags.
MF_GLOBAL_TABLES_SPEC = 0x0001
MF_HAS_MORE_PAGES = 0x0002
MF_NO_METADATA = 0x0004
MF_METADATA_CHANGED = 0x0008

_ID_CACHE: dict[tuple[ColumnSpec, ...], bytes] = {}
_ID_CACHE_LIMIT = 4096


def result_metadata_id(columns: list[ColumnSpec]) -> bytes:
    """The id of a column list; remembered, since every page of a statement asks again (a SELECT
    builds fresh metadata per request, and hashing a tuple of specs is far cheaper than
    rendering their CQL types)."""
    key = tuple(columns)
    found = _ID_CACHE.get(key)
    if found is not None:
        return found
    buf = bytearray()
    for col in columns:
        write_string(buf, col.name)
        write_string(buf, col.type.cql())
    digest = hashlib.sha256(buf).digest()[:16]
    if len(_ID_CACHE) >= _ID_CACHE_LIMIT:
        _ID_CACHE.pop(next(iter(_ID_CACHE)))
    _ID_CACHE[key] = digest
    return digest


def prepared_statement_id(keyspace: str | None, query: str) -> bytes:
    """Scylla's prepared id: MD5 of the current keyspace name followed by the query text, so the
    same text prepared under different `USE`s gets different ids."""
    return hashlib.md5((keyspace or "").encode("utf-8") + query.encode("utf-8")).digest()


def common_table(columns: list[ColumnSpec]) -> tuple[str, str] | None:
    """(keyspace, table) when the list is non-empty and all columns share it: Scylla's rule for
    setting global_tables_spec."""
    if not columns:
        return None
    first = columns[0]
    ks, table = first.keyspace, first.table
    for col in columns:
        if col.keyspace != ks or col.table != table:
            return None
    return ks, table


def write_column_specs(out: bytearray, columns: list[ColumnSpec], global_spec: bool) -> None:
    for col in columns:
        if not global_spec:
            write_string(out, col.keyspace)
            write_string(out, col.table)
        write_string(out, col.name)
        write_option(out, col.type)


def _memo(meta: RowsMetadata) -> WireMemo:
    memo = meta.wire
    if memo is None:
        memo = meta.wire = WireMemo()
    return memo


def metadata_id(meta: RowsMetadata) -> bytes:
    """The result-metadata id of `meta`'s columns; computed once per statement (see `WireMemo`)."""
    memo = _memo(meta)
    found = memo.metadata_id
    if found is None:
        found = memo.metadata_id = result_metadata_id(meta.columns)
    return found


def _column_block(meta: RowsMetadata) -> tuple[bool, bytes]:
    """Whether the spec is global, and `[string] ks, [string] table` (if global) followed by the
    column specs; computed once per statement."""
    memo = _memo(meta)
    found = memo.column_block
    if found is None:
        out = bytearray()
        table = common_table(meta.columns)
        if table is not None:
            write_string(out, table[0])
            write_string(out, table[1])
        write_column_specs(out, meta.columns, table is not None)
        found = memo.column_block = (table is not None, bytes(out))
    return found


def encode_rows_metadata(
    out: bytearray, meta: RowsMetadata, *, no_metadata: bool = False, new_metadata_id: bytes | None = None
) -> None:
    """Append `<metadata>`. `new_metadata_id` (SCYLLA_USE_METADATA_ID) forces full metadata."""
    flags = 0
    paging_state = meta.paging_state
    if paging_state is not None:
        flags |= MF_HAS_MORE_PAGES
    if new_metadata_id is not None:
        flags |= MF_METADATA_CHANGED
    elif no_metadata or not meta.columns:
        flags |= MF_NO_METADATA
    full = not flags & MF_NO_METADATA
    global_spec, block = _column_block(meta) if full else (False, b"")
    if global_spec:
        flags |= MF_GLOBAL_TABLES_SPEC
    write_int(out, flags)
    write_int(out, len(meta.columns))
    if paging_state is not None:
        write_bytes(out, paging_state)
    if not full:
        return
    if new_metadata_id is not None:
        write_short_bytes(out, new_metadata_id)
    out += block
