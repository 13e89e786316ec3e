"""Definitions of virtual tables from their key columns and a name -> type map: one place for
building the columns in key order, so every virtual table module declares tables the same way."""

from __future__ import annotations

from collections.abc import Sequence

from tabletdb.cql.types import CqlType
from tabletdb.schema.model import ClusteringOrder, ColumnDef, ColumnKind, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema import legacy_table_id

SYSTEM = "system"


def virtual_table(
    keyspace: str,
    name: str,
    pk: Sequence[str],
    ck: Sequence[tuple[str, ClusteringOrder]],
    columns: dict[str, CqlType],
    comment: str,
) -> TableDef:
    """A table of ``columns``: ``pk`` in order, then ``ck`` with their orders, the rest regular;
    its id is the one Cassandra derives from the names (``legacy_table_id``)."""
    cols = [ColumnDef(n, columns[n], ColumnKind.PARTITION_KEY, i) for i, n in enumerate(pk)]
    cols += [ColumnDef(n, columns[n], ColumnKind.CLUSTERING, i, order) for i, (n, order) in enumerate(ck)]
    keys = set(pk) | {n for n, _ in ck}
    cols += [ColumnDef(n, t, ColumnKind.REGULAR) for n, t in columns.items() if n not in keys]
    return TableDef(
        keyspace, name, legacy_table_id(keyspace, name), order_columns(cols), TableOptions(comment=comment)
    )


def system_table(
    name: str, pk: Sequence[str], ck: Sequence[str], columns: dict[str, CqlType], comment: str
) -> TableDef:
    """A table of the ``system`` keyspace whose clustering columns all sort ascending."""
    return virtual_table(SYSTEM, name, pk, [(c, ClusteringOrder.ASC) for c in ck], columns, comment)
