"""Build state of views and indexes: ``system.built_views``, ``system.views_builds_in_progress``,
``system."IndexInfo"`` and ``system_distributed.view_build_status`` (ScyllaDB's schemas), rendered
from the catalog, the build statuses in group0 (``group0.view_builds``) and the fills this node
runs (``views.build_progress``, which adds the last token read).

A view or index is built once the fill that its CREATE started has finished: its coordinator
records STARTED in group0 before the fill and SUCCESS after it, and answers only then. Every node
therefore shows the same state, and a fill cut short by a crash stays in progress (it is not
resumed) rather than being listed as built. Indexes are views in ScyllaDB: the tables name an
index's fill ``<index>_index``, and ``"IndexInfo"`` (whose ``table_name`` column holds the
keyspace name, as in ScyllaDB) lists the built indexes. Views with no recorded status — indexes
answered by filtering (custom and local ones here), which need no fill, and views created before
statuses were recorded — are built, on every host.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tabletdb.cql.types import INT, TEXT
from tabletdb.cql.types import UUID as UUID_TYPE
from tabletdb.dht.murmur3 import partition_key_bytes, token_of
from tabletdb.group0.view_builds import STARTED, SUCCESS, ViewBuilds, status_of
from tabletdb.schema.model import Catalog, ClusteringOrder, ColumnDef, ColumnKind, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema import legacy_table_id
from tabletdb.systables.definitions import virtual_table
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
VIEW_BUILD_STATUS_TABLE = virtual_table(
    "system_distributed",
    "view_build_status",
    ["keyspace_name", "view_name"],
    [("host_id", ClusteringOrder.ASC)],
    {"keyspace_name": TEXT, "view_name": TEXT, "host_id": UUID_TYPE, "status": TEXT},
    "Materialized View build status",
)


def _views(catalog: Catalog) -> Iterator[tuple[str, str, uuid.UUID | None]]:
    """(keyspace, view name, view table id or None when no fill is needed) of every view,
    index views included."""
    for ks in catalog.keyspaces.values():
        for view in ks.views.values():
            yield ks.name, view.table.name, view.table.id
        for index in ks.indexes.values():
            yield ks.name, index.name + INDEX_VIEW_SUFFIX, index.table_id


def _building(ks: str, view: str, view_id: uuid.UUID | None, builds: ViewBuilds, running: Running) -> bool:
    if (ks, view) in running:
        return True
    record = status_of(builds, view_id)
    return record is not None and record.status == STARTED


def built_views_rows(catalog: Catalog, builds: ViewBuilds, running: Running) -> list[Row]:
    rows = [
        {"keyspace_name": ks, "view_name": v}
        for ks, v, vid in _views(catalog)
        if not _building(ks, v, vid, builds, running)
    ]
    return _in_order(rows, "keyspace_name", "view_name")


def builds_in_progress_rows(catalog: Catalog, builds: ViewBuilds, running: Running) -> list[Row]:
    rows = [
        {
            "keyspace_name": ks,
            "view_name": v,
            "last_token": None if running.get((ks, v)) is None else str(running[(ks, v)]),
            "generation_number": None,
        }
        for ks, v, vid in _views(catalog)
        if _building(ks, v, vid, builds, running)
    ]
    return _in_order(rows, "keyspace_name", "view_name")


def index_info_rows(catalog: Catalog, builds: ViewBuilds, running: Running) -> list[Row]:
    rows = [
        {"table_name": ks.name, "index_name": index.name}
        for ks in catalog.keyspaces.values()
        for index in ks.indexes.values()
        if not _building(ks.name, index.name + INDEX_VIEW_SUFFIX, index.table_id, builds, running)
    ]
    return _in_order(rows, "table_name", "index_name")


def view_build_status_rows(catalog: Catalog, builds: ViewBuilds, hosts: Iterable[uuid.UUID]) -> list[Row]:
    """One row per view and host: the recorded status for the hosts it was recorded for; a view
    with none recorded is SUCCESS on every host of ``hosts`` (the cluster's members)."""
    everyone = tuple(hosts)
    rows: list[Row] = []
    for ks, v, vid in _views(catalog):
        record = status_of(builds, vid)
        status, on = (SUCCESS, everyone) if record is None else (record.status, record.hosts)
        rows += [{"keyspace_name": ks, "view_name": v, "host_id": h, "status": status} for h in on]
    return sorted(rows, key=lambda r: (token_of(_key(r)), _key(r), r["host_id"].bytes))


def _key(row: Row) -> bytes:
    return partition_key_bytes([row["keyspace_name"].encode(), row["view_name"].encode()])


def _in_order(rows: list[Row], pk: str, ck: str) -> list[Row]:
    """Partitions in token order of their key, rows by clustering key."""
    return sorted(rows, key=lambda r: (token_of(r[pk].encode()), r[pk], r[ck].encode()))
