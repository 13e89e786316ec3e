"""Input rows as the store's own mutations, and per-tablet SQLite files of them (no Spark here).

The file load (``spark.file_load``) writes what an ``INSERT`` of the row would write, built by
the same code the node's INSERT uses (``statements.keys`` for partition and clustering keys,
``statements.cells`` for cells: whole collections with their tombstone, a null as a cell
tombstone), so a row loaded from a file reads back exactly as one loaded through CQL. Files are
written with the store's DDL and upserts (``storage.sqlite_schema``, ``storage.batch_rows``) in
partition-key order, so each is a tablet file the node validates and merges as it would any other
(``storage.image_validation``, ``storage.image_merge``): there is no second format.

The file load itself now works columnwise (``spark.bulk``); this row-at-a-time form is the
reference its tests hold it to (``tests/unit/spark/test_bulk_rows.py``), and ``table_def`` is
what both use.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import CqlError
from tabletdb.schema.tables import ClusteringOrder, ColumnDef, ColumnKind, TableDef
from tabletdb.spark.schema_map import TableSchema
from tabletdb.statements.cells import CellChanges, WriteTime, whole_value
from tabletdb.statements.keys import encode_clustering, partition_key
from tabletdb.storage.batch_rows import UPSERTS, batch_rows
from tabletdb.storage.mutation import Mutation, RowMarker
from tabletdb.storage.sqlite_schema import DDL, SCHEMA_VERSION


class RowNotEncodable(ValueError):
    """The row's values fit their types but not the table's rules (an empty or oversized key)."""


def table_def(schema: TableSchema, clustering_orders: Mapping[str, str]) -> TableDef:
    """The table as the encoders need it, from what ``system_schema`` said (``clustering_orders``:
    column name -> ASC/DESC, which decides the byte order of clustering keys)."""
    if schema.table_id is None:
        raise ValueError(f"{schema.keyspace}.{schema.table} has no table id in system_schema.tables")
    columns = tuple(
        ColumnDef(
            c.name,
            c.cql_type,
            ColumnKind(c.kind),
            c.position,
            ClusteringOrder(clustering_orders.get(c.name, "NONE").upper())
            if c.kind == ColumnKind.CLUSTERING
            else ClusteringOrder.NONE,
        )
        for c in schema.columns
    )
    return TableDef(schema.keyspace, schema.table, uuid.UUID(schema.table_id), columns)


def row_mutation(
    table: TableDef, columns: Sequence[ColumnDef], values: Sequence[Any], when: WriteTime
) -> Mutation:
    """What ``INSERT INTO t (columns) VALUES (values)`` writes: ``values`` are codec-form Python
    values (``cql.jsonvalues.from_json``'s output), key columns non-null."""
    keys: dict[str, bytes] = {}
    regular = CellChanges([], [])
    static = CellChanges([], [])
    try:
        for column, value in zip(columns, values):
            if column.is_primary_key:
                keys[column.name] = codec.serialize(column.type, value)
            else:
                whole_value(column, value, when, static if column.kind is ColumnKind.STATIC else regular)
        key, token = partition_key(table, [keys[c.name] for c in table.partition_key])
        clustering = encode_clustering(table, [keys[c.name] for c in table.clustering_key])
    except CqlError as exc:
        raise RowNotEncodable(exc.message) from None
    marker = RowMarker(when.timestamp, when.ttl, when.now + when.ttl if when.ttl else 0)
    rows = [regular.row_write(clustering, marker=marker)]
    if static:
        rows.append(static.row_write(static=True))
    return Mutation(key, token, rows=tuple(rows))


def new_image(path: Path) -> sqlite3.Connection:
    """A connection to a new, empty tablet file at ``path`` in the store's format, inside an open
    transaction: no journal and no syncs, because the file is a transfer copy that only counts
    once the node has checked and synced what it merges or installs."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    for statement in DDL:
        conn.execute(statement)
    conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
    return conn


def write_tablet_file(path: Path, mutations: Iterable[Mutation]) -> int:
    """A new tablet file at ``path`` holding ``mutations`` (duplicates reconciled as the store
    reconciles them: last write wins), written in partition-key order; returns its partitions.
    Not synced: the file is a transfer copy, the node syncs what it merges."""
    ordered = sorted(mutations, key=lambda m: m.partition_key)
    conn = new_image(path)
    try:
        for sql, params in zip(UPSERTS, batch_rows(ordered)):
            if params:
                conn.executemany(sql, params)
        conn.execute("COMMIT")
        (count,) = conn.execute("SELECT count(*) FROM partitions").fetchone()
    finally:
        conn.close()
    return int(count)
