"""What the file load shares with the store: the table definition a Spark schema stands for, and
new tablet files in the store's format.

Load files are written with the store's DDL (``storage.sqlite_schema``) so each is a tablet file
the node validates and merges as any other (``storage.image_validation``, ``storage.image_merge``):
there is no second format. The rows themselves are built columnwise in ``spark.bulk``; the older
row-at-a-time encoding is kept in tests (``tests/unit/spark/row_oracle.py``) as the model the bulk
path is held to.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Mapping
from pathlib import Path

from tabletdb.schema.tables import ClusteringOrder, ColumnDef, ColumnKind, TableDef
from tabletdb.spark.schema_map import TableSchema
from tabletdb.storage.sqlite_schema import DDL, SCHEMA_VERSION


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
