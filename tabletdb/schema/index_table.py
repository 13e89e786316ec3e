"""The hidden table behind a global secondary index (ScyllaDB style).

Each index with a ``table_id`` keeps its entries in a table of its own, stored like any other
(its own files and tablet map) but never shown in ``system_schema``: the partition key is the
indexed value, and each entry's clustering key is the base row's position (token, serialized
partition key, clustering key bytes). Ordering entries by that position makes an index lookup
return base rows in exactly the order a full scan would, so results and paging states are the
same whichever way a query runs.
"""

from __future__ import annotations

from tabletdb.cql.types import BIGINT, BLOB, CqlType, ListType, MapType, SetType, TupleType
from tabletdb.schema.index_targets import parse_target
from tabletdb.schema.tables import ColumnDef, ColumnKind, IndexDef, TableDef

VALUE = "idx_value"
TOKEN = "idx_token"
BASE_KEY = "idx_pk"
BASE_CLUSTERING = "idx_ck"


def index_table_name(index: IndexDef) -> str:
    return f"{index.name}_index"


def indexed_value_type(column_type: CqlType, kind: str) -> CqlType:
    """The type of what an index of ``kind`` stores per entry of a column of ``column_type``."""
    if kind == "values":
        if isinstance(column_type, MapType):
            return column_type.value
        if isinstance(column_type, ListType | SetType):
            return column_type.element
    if kind == "keys" and isinstance(column_type, MapType):
        return column_type.key
    if kind == "entries" and isinstance(column_type, MapType):
        return TupleType((column_type.key, column_type.value))
    return column_type


def index_table(base: TableDef, index: IndexDef) -> TableDef | None:
    """The entries table of ``index`` on ``base``; None if the index has none."""
    if index.table_id is None:
        return None
    column_name, kind, local_pk = parse_target(index.target)
    column = base.column(column_name)
    if column is None or local_pk or column.kind is ColumnKind.STATIC:
        return None
    columns = (
        ColumnDef(VALUE, indexed_value_type(column.type, kind), ColumnKind.PARTITION_KEY, 0),
        ColumnDef(TOKEN, BIGINT, ColumnKind.CLUSTERING, 0),
        ColumnDef(BASE_KEY, BLOB, ColumnKind.CLUSTERING, 1),
        ColumnDef(BASE_CLUSTERING, BLOB, ColumnKind.CLUSTERING, 2),
    )
    if index.table_options is None:
        return TableDef(base.keyspace, index_table_name(index), index.table_id, columns)
    return TableDef(base.keyspace, index_table_name(index), index.table_id, columns, index.table_options)


def index_tables(base: TableDef) -> list[tuple[IndexDef, TableDef]]:
    """Every index of ``base`` that keeps an entries table, with that table."""
    out = []
    for index in base.indexes:
        table = index_table(base, index)
        if table is not None:
            out.append((index, table))
    return out
