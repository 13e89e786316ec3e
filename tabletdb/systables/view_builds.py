"""Build state of views and indexes: ``system.built_views``, ``system.views_builds_in_progress``
and ``system."IndexInfo"`` (ScyllaDB's schemas), rendered from the catalog and the fills this node
runs (``views.build_progress``).

A view or index is built once the fill that its CREATE started has finished: the coordinator of
the CREATE answers only then, so the tables can show a fill in progress only to other sessions
of that coordinator while it runs. Indexes are views in ScyllaDB: ``built_views`` and the
progress table name an index's fill ``<index>_index``, and ``"IndexInfo"`` (whose
``table_name`` column holds the keyspace name, as in ScyllaDB) lists the built indexes. Indexes
answered by filtering (custom and local ones here) need no fill and are built at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tabletdb.cql.types import INT, TEXT
from tabletdb.dht.murmur3 import token_of
from tabletdb.schema.model import Catalog, ClusteringOrder, ColumnDef, ColumnKind, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema import legacy_table_id
from tabletdb.views.build_progress import INDEX_VIEW_SUFFIX

Row = dict[str, Any]
Running = Mapping[tuple[str, str], int | None]
_P, _C, _R = ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING, ColumnKind.REGULAR


def _table(name: str, pk: str, ck: str, regular: dict[str, Any], comment: str) -> TableDef:
    cols = [ColumnDef(pk, TEXT, _P, 0), ColumnDef(ck, TEXT, _C, 0, ClusteringOrder.ASC)]
    cols += [ColumnDef(n, t, _R) for n, t in regular.items()]
    return TableDef(
        "system", name, legacy_table_id("system", name), order_columns(cols), TableOptions(comment=comment)
    )


BUILT_VIEWS_TABLE = _table("built_views", "keyspace_name", "view_name", {}, "built views")
VIEWS_BUILDS_IN_PROGRESS_TABLE = _table(
    "views_builds_in_progress",
    "keyspace_name",
    "view_name",
    {"last_token": TEXT, "generation_number": INT},
    "views builds current progress",
)
INDEX_INFO_TABLE = _table("IndexInfo", "table_name", "index_name", {}, "built column indexes")


def _views(catalog: Catalog) -> Iterator[tuple[str, str, bool]]:
    """(keyspace, view name, needs a fill) of every view, index views included."""
    for ks in catalog.keyspaces.values():
        for view in ks.views.values():
            yield ks.name, view.table.name, True
        for index in ks.indexes.values():
            yield ks.name, index.name + INDEX_VIEW_SUFFIX, index.table_id is not None


def built_views_rows(catalog: Catalog, running: Running) -> list[Row]:
    rows = [{"keyspace_name": ks, "view_name": v} for ks, v, _ in _views(catalog) if (ks, v) not in running]
    return _in_order(rows, "keyspace_name", "view_name")


def builds_in_progress_rows(catalog: Catalog, running: Running) -> list[Row]:
    rows = [
        {
            "keyspace_name": ks,
            "view_name": v,
            "last_token": None if running[(ks, v)] is None else str(running[(ks, v)]),
            "generation_number": None,
        }
        for ks, v, _ in _views(catalog)
        if (ks, v) in running
    ]
    return _in_order(rows, "keyspace_name", "view_name")


def index_info_rows(catalog: Catalog, running: Running) -> list[Row]:
    rows = [
        {"table_name": ks.name, "index_name": index.name}
        for ks in catalog.keyspaces.values()
        for index in ks.indexes.values()
        if (ks.name, index.name + INDEX_VIEW_SUFFIX) not in running
    ]
    return _in_order(rows, "table_name", "index_name")


def _in_order(rows: list[Row], pk: str, ck: str) -> list[Row]:
    """Partitions in token order of their key, rows by clustering key."""
    return sorted(rows, key=lambda r: (token_of(r[pk].encode()), r[pk], r[ck].encode()))
