"""Keeping global secondary index tables up to date on every base write.

The data path reads the base partition before and after a write (``base_snapshot``); the
entries each base row should have (indexed value -> base row position) are computed for both
snapshots, and the difference becomes index mutations stamped with the base write's timestamp
(see ``DerivedLocks.stamp``): stale entries are deleted at it, new ones written at it. An entry
for a TTL'd cell expires with the cell. Reads re-check every base row they fetch through an
index, so an entry that outlives its base value never shows in a result.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack
from typing import Any

from tabletdb.coordinator.consistency import ONE, QUORUM
from tabletdb.coordinator.reads import ConsistentReads
from tabletdb.coordinator.rows import scan_rows
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.cql import codec
from tabletdb.cql.types import BIGINT, ListType, MapType, SetType, TupleType
from tabletdb.group0.view_builds import STARTED, SUCCESS
from tabletdb.schema.ddl_common import SchemaChangeEvent
from tabletdb.schema.index_table import index_tables, indexed_value_type
from tabletdb.schema.index_targets import parse_target
from tabletdb.schema.model import Catalog, IndexDef, TableDef
from tabletdb.statements.keys import MAX_KEY_COMPONENT, encode_clustering, partition_key
from tabletdb.statements.restrictions import Restrictions
from tabletdb.storage.mutation import Mutation, RowMarker, RowWrite
from tabletdb.views.backfill import Backfill, record_builds
from tabletdb.views.base_snapshot import BaseRow
from tabletdb.views.build_progress import INDEX_VIEW_SUFFIX

Entry = tuple[bytes, bytes]
"""(indexed value, entry clustering key) of one index entry."""

log = logging.getLogger(__name__)

_tables: dict[uuid.UUID, tuple[TableDef, list[tuple[IndexDef, TableDef]]]] = {}


def entries_tables(base: TableDef) -> list[tuple[IndexDef, TableDef]]:
    """``index_tables(base)``, built once per table definition (writes ask on every statement)."""
    cached = _tables.get(base.id)
    if cached is not None and cached[0] is base:
        return cached[1]
    tables = index_tables(base)
    _tables[base.id] = (base, tables)
    return tables


def indexed_values(base: TableDef, index: IndexDef, values: Mapping[str, Any]) -> list[bytes]:
    """The serialized values ``index`` holds for a base row with ``values`` (none for null)."""
    column_name, kind, _ = parse_target(index.target)
    column = base.column(column_name)
    value = values.get(column_name)
    if column is None or value is None:
        return []
    t = column.type
    element_type = indexed_value_type(t, kind)
    items: list[Any]
    if kind == "values" and isinstance(t, MapType):
        items = [v for _, v in value]
    elif kind == "values" and isinstance(t, ListType | SetType):
        items = list(value)
    elif kind == "keys" and isinstance(t, MapType):
        items = [k for k, _ in value]
    elif kind == "entries" and isinstance(t, MapType):
        items = [tuple(kv) for kv in value]
    else:
        items = [value]
    out = []
    for item in items:
        raw = codec.serialize(element_type, item if not isinstance(element_type, TupleType) else tuple(item))
        # an empty value is not a partition key; queries for it scan instead
        if raw and len(raw) <= MAX_KEY_COMPONENT and raw not in out:
            out.append(raw)
    return out


def _expiry(base: TableDef, index: IndexDef, row: BaseRow, now: int) -> int | None:
    """When the indexed cell expires (seconds), if it has a TTL; collections are not tracked."""
    column_name, _, _ = parse_target(index.target)
    cell = row.cells.get(column_name)
    if cell is None or cell.ttl_remaining is None:
        return None
    return now + cell.ttl_remaining


def row_entries(
    base: TableDef,
    index: IndexDef,
    entries: TableDef,
    token: int,
    key: bytes,
    rows: Mapping[bytes, BaseRow],
    now: int,
) -> dict[Entry, int | None]:
    """Every entry the rows of one base partition should have, with its expiry (None: none)."""
    token_bytes = codec.serialize(BIGINT, token)
    out: dict[Entry, int | None] = {}
    for clustering, row in rows.items():
        position = encode_clustering(entries, [token_bytes, key, clustering])
        expiry = _expiry(base, index, row, now)
        for value in indexed_values(base, index, row.values):
            out[(value, position)] = expiry
    return out


def index_mutations(
    base: TableDef,
    token: int,
    key: bytes,
    before: Mapping[bytes, BaseRow],
    after: Mapping[bytes, BaseRow],
    timestamp: int,
    now: int,
) -> Iterator[tuple[TableDef, list[Mutation]]]:
    """Per index entries table, the mutations turning ``before``'s entries into ``after``'s."""
    for index, entries in entries_tables(base):
        old = row_entries(base, index, entries, token, key, before, now)
        new = row_entries(base, index, entries, token, key, after, now)
        rows: dict[bytes, list[RowWrite]] = {}
        for value, position in old.keys() - new.keys():
            rows.setdefault(value, []).append(RowWrite(position, tombstone=timestamp))
        for (value, position), expiry in new.items():
            if (value, position) in old and old[(value, position)] == expiry:
                continue
            marker = (
                RowMarker(timestamp) if expiry is None else RowMarker(timestamp, max(1, expiry - now), expiry)
            )
            rows.setdefault(value, []).append(RowWrite(position, marker=marker))
        mutations = []
        for value in sorted(rows):
            entry_key, entry_token = partition_key(entries, [value])
            mutations.append(Mutation(entry_key, entry_token, rows=tuple(rows[value])))
        if mutations:
            yield entries, mutations


async def build_indexes(backfill: Backfill, table: TableDef) -> int:
    """Write the entries of every index of ``table`` for the data it already holds.

    Run by the coordinator of CREATE INDEX once it is applied. Where this node is the table's
    only replica it holds the table against writes that maintain indexes, so none slips between
    the scan and the entries, and reads its own stores. Where the table is replicated it reads
    the base through the replicated path at QUORUM and writes the entries at QUORUM, without a
    lock (the base replicas' own locks are on other nodes): a concurrent write's replica-side
    entries carry its timestamp, and an entry the build rewrites for a row that changed meanwhile
    is stale, which lookups never show (they check each base row again). Entries are stamped
    with one fresh server timestamp; rewriting an entry that already exists is harmless.
    Returns the rows indexed.
    """
    if backfill.placement.local_only(table):
        async with backfill.locks.building(table.id):
            return await _build(backfill, table, ONE, backfill.locks.stamp(backfill.clock.timestamp()))
    return await _build(backfill, table, QUORUM, backfill.clock.timestamp())


async def _build(backfill: Backfill, table: TableDef, cl: int, timestamp: int) -> int:
    now = backfill.clock.now_seconds()
    count = 0
    partition: dict[bytes, BaseRow] = {}
    current: tuple[int, bytes] | None = None
    source = ConsistentReads(backfill.reads, cl)
    async for row in scan_rows(table, source, Restrictions(), now, None):
        if current is not None and (row.token, row.partition_key) != current:
            await _write_entries(backfill.writes, table, current, partition, timestamp, now, cl)
            partition = {}
        current = (row.token, row.partition_key)
        partition[row.clustering or b""] = BaseRow(row.values, row.cells, None)
        count += 1
    if current is not None:
        await _write_entries(backfill.writes, table, current, partition, timestamp, now, cl)
    return count


async def _write_entries(
    writes: WriteCoordinator,
    table: TableDef,
    where: tuple[int, bytes],
    rows: Mapping[bytes, BaseRow],
    timestamp: int,
    now: int,
    cl: int,
) -> None:
    token, key = where
    for entries, mutations in index_mutations(table, token, key, {}, rows, timestamp, now):
        await writes.write(entries, mutations, cl)


async def build_new_index(
    backfill: Backfill, catalog: Catalog, event: SchemaChangeEvent, before: Iterable[str] = ()
) -> None:
    """After CREATE INDEX: index the existing data of the table the change event names.
    ``before``: the table's indexes before the statement; the others are the new ones, shown as
    building (``BuildProgress``) until the fill is done."""
    table = catalog.table(event.keyspace, event.name)
    if table is not None and entries_tables(table):
        new = sorted({i.name for i in table.indexes if i.table_id is not None} - set(before))
        ids = [i.table_id for i in table.indexes if i.name in new and i.table_id is not None]
        await record_builds(backfill, ids, STARTED)
        with ExitStack() as stack:
            for name in new:
                stack.enter_context(backfill.progress.tracking(table.keyspace, name + INDEX_VIEW_SUFFIX))
            indexed = await build_indexes(backfill, table)
        await record_builds(backfill, ids, SUCCESS)
        log.info("built indexes table=%s.%s rows=%d", table.keyspace, table.name, indexed)
