"""The row-by-row encoding the file load used before its Arrow path (``spark.bulk``), kept as
the simple model the bulk path's tests compare against: one ``Mutation`` per input row built by
the node's INSERT code, written to a tablet file through the store's own upserts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tabletdb.cql import codec
from tabletdb.cql.errors import CqlError
from tabletdb.schema.tables import ColumnDef, ColumnKind, TableDef
from tabletdb.spark.tablet_rows import new_image
from tabletdb.statements.cells import CellChanges, WriteTime, whole_value
from tabletdb.statements.keys import encode_clustering, partition_key
from tabletdb.storage.batch_rows import UPSERTS, batch_rows
from tabletdb.storage.mutation import Mutation, RowMarker


class RowNotEncodable(ValueError):
    """The row's values fit their types but not the table's rules (an empty or oversized key)."""


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
