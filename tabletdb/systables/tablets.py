"""``system.tablets``: rendered from group0's tablet maps (spec/clients.md 3.1), never stored.

One partition per table, one row per tablet in last-token order. The UDT-typed bookkeeping
columns Scylla adds for repair and task scheduling are left out: nothing here schedules repairs,
and no client reads this table (spec/clients.md 5); tools read the columns below.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from tabletdb.cql.types import BIGINT, INT, TEXT, UUID, CqlType, ListType, TupleType
from tabletdb.schema.model import Catalog, ClusteringOrder, ColumnDef, ColumnKind, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema import legacy_table_id
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

NAME = "tablets"
_REPLICAS = ListType(TupleType((UUID, INT)), frozen=True)

_COLUMNS: list[tuple[str, CqlType, ColumnKind]] = [
    ("table_id", UUID, ColumnKind.PARTITION_KEY),
    ("last_token", BIGINT, ColumnKind.CLUSTERING),
    ("base_table", UUID, ColumnKind.STATIC),
    ("keyspace_name", TEXT, ColumnKind.STATIC),
    ("resize_seq_number", BIGINT, ColumnKind.STATIC),
    ("resize_type", TEXT, ColumnKind.STATIC),
    ("table_name", TEXT, ColumnKind.STATIC),
    ("tablet_count", INT, ColumnKind.STATIC),
    ("new_replicas", _REPLICAS, ColumnKind.REGULAR),
    ("replicas", _REPLICAS, ColumnKind.REGULAR),
    ("session", UUID, ColumnKind.REGULAR),
    ("stage", TEXT, ColumnKind.REGULAR),
    ("transition", TEXT, ColumnKind.REGULAR),
]


def _table(keyspace: str) -> TableDef:
    cols = [
        ColumnDef(
            name,
            t,
            kind,
            0 if kind in (ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING) else -1,
            ClusteringOrder.ASC if kind is ColumnKind.CLUSTERING else ClusteringOrder.NONE,
        )
        for name, t, kind in _COLUMNS
    ]
    return TableDef(
        keyspace,
        NAME,
        legacy_table_id(keyspace, NAME),
        order_columns(cols),
        TableOptions(comment="tablet maps, rendered from group0"),
    )


TABLETS_TABLE = _table("system")


def _replicas(replicas: tuple[TabletReplica, ...] | None) -> tuple[tuple[uuid.UUID, int], ...] | None:
    return None if replicas is None else tuple((r.host, r.shard) for r in replicas)


def tablets_rows(catalog: Catalog, maps: Mapping[uuid.UUID, TabletMap]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for table_id in sorted(maps, key=lambda t: t.bytes):
        tablet_map = maps[table_id]
        where = catalog.ids.get(table_id)  # tables, views and index entries tables (`<index>_index`)
        static = {
            "table_id": table_id,
            "base_table": tablet_map.base_table,
            "keyspace_name": None if where is None else where[0],
            "table_name": None if where is None else where[1],
            "resize_seq_number": tablet_map.resize_seq_number,
            "resize_type": tablet_map.resize.value,
            "tablet_count": tablet_map.tablet_count,
        }
        for tablet in tablet_map.tablets:
            rows.append(
                {
                    **static,
                    "last_token": tablet.last_token,
                    "replicas": _replicas(tablet.replicas),
                    "new_replicas": _replicas(tablet.new_replicas),
                    "session": None,
                    "stage": None if tablet.stage is None else tablet.stage.value,
                    "transition": None if tablet.transition is None else tablet.transition.value,
                }
            )
    return rows
