"""SELECTs answered through a global secondary index instead of a full scan.

A query that does not pin its partitions and restricts an indexed column (``v = ?``, ``s CONTAINS
?``, ``m CONTAINS KEY ?``, ``f = ?`` on a frozen collection's full() index) reads the index
partition of that value: entries in base-row order (token, partition key, clustering), so the base
rows come back in the order a scan yields them, and the same paging position resumes either way.
Each base row fetched is passed through the query's restrictions again (by the caller, with every
other filter), which is what keeps results identical to a filtered scan even when an entry is stale.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.coordinator.rows import (
    STATIC_ONLY,
    OutRow,
    PartitionSource,
    Position,
    partition_rows,
    scan_rows,
)
from tabletdb.cql import ast, codec
from tabletdb.cql.types import BIGINT
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.schema.index_targets import parse_target
from tabletdb.schema.model import TableDef
from tabletdb.statements.bound_select import BoundSelect
from tabletdb.statements.keys import clustering_bound, decode_clustering, partition_key
from tabletdb.statements.restrictions import Restrictions, filtering_columns
from tabletdb.storage.mutation import Bound, ClusteringSlice
from tabletdb.views.index_writes import entries_tables

ENTRY_BATCH = 256
"""Entries a token window should hold: fewer widen the next window, more narrow it."""
FIRST_WINDOW = 1 << 60
"""Base tokens in the first window (1/16 of the ring): a rare value takes three reads, a common
one reads about a sixteenth of its entries before the windows narrow to ENTRY_BATCH."""
Row = dict[str, Any]

_OPERATORS = {"simple": "=", "full": "=", "values": "CONTAINS", "keys": "CONTAINS KEY"}


@dataclass(frozen=True)
class IndexLookup:
    """The index a query reads through: its entries table, the indexed column, the value sought
    (serialized; empty when no entry can hold it, and the query then scans)."""

    entries: TableDef
    column: str
    value: bytes


def choose_index(select: BoundSelect) -> IndexLookup | None:
    """The index answering the first restriction an index can answer (``=`` on a value,
    ``CONTAINS``, ``CONTAINS KEY``, ``m[k] =``), if any."""
    table = select.table
    for index, entries in entries_tables(table):
        column_name, kind, _ = parse_target(index.target)
        column = table.column(column_name)
        if column is None:
            continue
        for rel in select.statement.where:
            if _restricted_column(rel) == column_name and _answers(kind, rel):
                return IndexLookup(entries, column_name, select.index_value(rel, column, kind))
    return None


def _answers(kind: str, rel: ast.Relation) -> bool:
    """Whether an index of ``kind`` holds the values ``rel`` looks for."""
    if isinstance(rel.rhs, ast.InValues):
        return False
    if kind == "entries":
        return isinstance(rel.lhs, ast.ElementRef) and rel.op == "="
    return isinstance(rel.lhs, ast.ColumnRef) and rel.op == _OPERATORS.get(kind)


def unindexed_filtering(r: Restrictions, table: TableDef, lookup: IndexLookup | None) -> list[str]:
    """The restricted columns that make the query filter, so that it needs ALLOW FILTERING.

    With an index to read through, that is every filtered column but the indexed one (clustering
    restrictions are checked on the rows the index yields); one index serves a query, as in
    Cassandra. Indexes without an entries table (local, custom) keep exempting their columns.
    """
    filtered = filtering_columns(r, table)
    if lookup is not None:
        clustering = {c.name for c in table.clustering_key}
        return [c for c in filtered if c != lookup.column and c not in clustering]
    tableless = {parse_target(i.target)[0] for i in table.indexes if i.table_id is None}
    return [] if set(filtered) <= tableless else filtered


def _restricted_column(rel: ast.Relation) -> str | None:
    if isinstance(rel.lhs, ast.ColumnRef):
        return rel.lhs.name
    if isinstance(rel.lhs, ast.ElementRef):
        return rel.lhs.column
    return None


async def index_rows(
    table: TableDef,
    lookup: IndexLookup,
    source: PartitionSource,
    r: Restrictions,
    now: int,
    after: Position | None,
) -> AsyncGenerator[OutRow, None]:
    """The base rows the index lists for the value, in scan order, resuming after ``after``.

    The index partition is read in windows of base tokens that widen (x4) while they come back
    sparse and narrow towards ENTRY_BATCH entries when they come back full, so a page of a
    popular value does not read every entry after it.
    """
    if not lookup.value:
        async for row in scan_rows(table, source, r, now, after):
            yield row
        return
    entries = lookup.entries
    key, token = partition_key(entries, [lookup.value])
    wanted = TokenRange(r.token_start, r.token_end) if r.token_start != r.token_end else None
    keep = r.slices(table) if table.clustering_key and (r.lower or r.upper or r.full_clustering) else None
    start = _resume(entries, after)
    low = MIN_TOKEN if after is None else after.token
    width = FIRST_WINDOW
    while low < MAX_TOKEN:
        high = min(MAX_TOKEN, low + width)
        end = clustering_bound(entries, [codec.serialize(BIGINT, high)], lower=False, inclusive=True)
        data = await source.read_partition(
            entries, key, token, now, ClusteringSlice(start, Bound(end, False)), False
        )
        found = 0 if data is None else len(data.rows)
        for entry in data.rows if data is not None else ():
            token_raw, base_key, clustering = decode_clustering(entries, entry.clustering)
            assert token_raw is not None and base_key is not None
            base_token = codec.deserialize(BIGINT, token_raw)
            if wanted is not None and not wanted.contains(base_token):
                continue
            async for row in _base_rows(table, source, base_token, base_key, clustering or b"", keep, now):
                yield row
        low, start = high, Bound(end, inclusive=True)
        width = max(1, width * 4 if found < ENTRY_BATCH else width * ENTRY_BATCH // found)


def _resume(entries: TableDef, after: Position | None) -> Bound | None:
    if after is None:
        return None
    token_raw = codec.serialize(BIGINT, after.token)
    if after.clustering is None or after.clustering == STATIC_ONLY:
        prefix = [token_raw, after.partition_key]
    else:
        prefix = [token_raw, after.partition_key, after.clustering]
    return Bound(clustering_bound(entries, prefix, lower=False, inclusive=True), inclusive=True)


async def _base_rows(
    table: TableDef,
    source: PartitionSource,
    token: int,
    key: bytes,
    clustering: bytes,
    keep: Sequence[ClusteringSlice] | None,
    now: int,
) -> AsyncGenerator[OutRow, None]:
    one = ClusteringSlice(Bound(clustering), Bound(clustering)) if table.clustering_key else ClusteringSlice()
    data = await source.read_partition(table, key, token, now, one, False)
    if data is not None:
        for row in partition_rows(table, data, keep, static_only_row=False):
            yield row
