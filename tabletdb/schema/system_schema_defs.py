"""Definitions of the `system_schema` tables drivers read (spec/clients.md 3.1).

They are ordinary TableDefs in keyspace system_schema with fixed name-based ids, so the query
layer can plan SELECTs against them like any table; their rows come from `system_schema.rows`.
"""

from __future__ import annotations

import hashlib
import uuid

from tabletdb.cql.types import (
    BLOB,
    BOOLEAN,
    DOUBLE,
    INT,
    TEXT,
    TIMESTAMP,
    UUID,
    CqlType,
    ListType,
    MapType,
    SetType,
)
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import (
    LOCAL,
    ClusteringOrder,
    ColumnDef,
    ColumnKind,
    KeyspaceDef,
    KeyspaceSchema,
    Replication,
    TableDef,
    order_columns,
)
from tabletdb.schema.options import TableOptions

KEYSPACE = "system_schema"

_FROZEN_TEXT_MAP = MapType(TEXT, TEXT, frozen=True)
_FROZEN_TEXT_LIST = ListType(TEXT, frozen=True)


def legacy_table_id(keyspace: str, table: str) -> uuid.UUID:
    """Fixed id of a system table: an MD5 name-based (version 3) uuid of keyspace + table name."""
    digest = bytearray(hashlib.md5((keyspace + table).encode()).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(digest))


def _define(
    name: str, pk: list[str], ck: list[str], columns: dict[str, CqlType], comment: str = ""
) -> TableDef:
    cols = [ColumnDef(n, columns[n], ColumnKind.PARTITION_KEY, i) for i, n in enumerate(pk)]
    cols += [
        ColumnDef(n, columns[n], ColumnKind.CLUSTERING, i, ClusteringOrder.ASC) for i, n in enumerate(ck)
    ]
    cols += [ColumnDef(n, t, ColumnKind.REGULAR) for n, t in columns.items() if n not in pk and n not in ck]
    options = TableOptions(comment=comment, gc_grace_seconds=604800)
    return TableDef(KEYSPACE, name, legacy_table_id(KEYSPACE, name), order_columns(cols), options)


_OPTION_COLUMNS: dict[str, CqlType] = {
    "bloom_filter_fp_chance": DOUBLE,
    "caching": _FROZEN_TEXT_MAP,
    "comment": TEXT,
    "compaction": _FROZEN_TEXT_MAP,
    "compression": _FROZEN_TEXT_MAP,
    "crc_check_chance": DOUBLE,
    "dclocal_read_repair_chance": DOUBLE,
    "default_time_to_live": INT,
    "extensions": MapType(TEXT, BLOB, frozen=True),
    "gc_grace_seconds": INT,
    "id": UUID,
    "max_index_interval": INT,
    "memtable_flush_period_in_ms": INT,
    "min_index_interval": INT,
    "read_repair_chance": DOUBLE,
    "speculative_retry": TEXT,
}
_KT = {"keyspace_name": TEXT}
_COLUMNS_SHAPE: dict[str, CqlType] = {
    **_KT,
    "table_name": TEXT,
    "column_name": TEXT,
    "clustering_order": TEXT,
    "column_name_bytes": BLOB,
    "kind": TEXT,
    "position": INT,
    "type": TEXT,
}
_FN_KEY = ["function_name", "argument_types"]

TABLES: dict[str, TableDef] = {
    t.name: t
    for t in (
        _define(
            "keyspaces",
            ["keyspace_name"],
            [],
            {
                **_KT,
                "durable_writes": BOOLEAN,
                "next_replication": _FROZEN_TEXT_MAP,
                "replication": _FROZEN_TEXT_MAP,
                "replication_v2": _FROZEN_TEXT_MAP,
            },
            "keyspace definitions",
        ),
        _define(
            "scylla_keyspaces",
            ["keyspace_name"],
            [],
            {
                **_KT,
                "consistency": TEXT,
                "initial_tablets": INT,
                "storage_options": _FROZEN_TEXT_MAP,
                "storage_type": TEXT,
            },
        ),
        _define(
            "tables",
            ["keyspace_name"],
            ["table_name"],
            {**_KT, "table_name": TEXT, **_OPTION_COLUMNS, "flags": SetType(TEXT, frozen=True)},
            "table definitions",
        ),
        _define(
            "scylla_tables",
            ["keyspace_name"],
            ["table_name"],
            {
                **_KT,
                "table_name": TEXT,
                "cdc": _FROZEN_TEXT_MAP,
                "committed_by_group0": BOOLEAN,
                "in_memory": BOOLEAN,
                "large_data_guardrails_enabled": BOOLEAN,
                "partitioner": TEXT,
                "storage_engine": TEXT,
                "tablets": _FROZEN_TEXT_MAP,
                "version": UUID,
            },
        ),
        _define(
            "columns", ["keyspace_name"], ["table_name", "column_name"], _COLUMNS_SHAPE, "column definitions"
        ),
        _define("view_virtual_columns", ["keyspace_name"], ["table_name", "column_name"], _COLUMNS_SHAPE),
        _define(
            "computed_columns",
            ["keyspace_name"],
            ["table_name", "column_name"],
            {**_KT, "table_name": TEXT, "column_name": TEXT, "computation": BLOB},
        ),
        _define(
            "dropped_columns",
            ["keyspace_name"],
            ["table_name", "column_name"],
            {**_KT, "table_name": TEXT, "column_name": TEXT, "dropped_time": TIMESTAMP, "type": TEXT},
            "dropped column registry",
        ),
        _define(
            "triggers",
            ["keyspace_name"],
            ["table_name", "trigger_name"],
            {**_KT, "table_name": TEXT, "trigger_name": TEXT, "options": _FROZEN_TEXT_MAP},
            "trigger definitions",
        ),
        _define(
            "views",
            ["keyspace_name"],
            ["view_name"],
            {
                **_KT,
                "view_name": TEXT,
                "base_table_id": UUID,
                "base_table_name": TEXT,
                "include_all_columns": BOOLEAN,
                "where_clause": TEXT,
                **_OPTION_COLUMNS,
            },
            "view definitions",
        ),
        _define(
            "indexes",
            ["keyspace_name"],
            ["table_name", "index_name"],
            {**_KT, "table_name": TEXT, "index_name": TEXT, "kind": TEXT, "options": _FROZEN_TEXT_MAP},
            "secondary index definitions",
        ),
        _define(
            "types",
            ["keyspace_name"],
            ["type_name"],
            {**_KT, "type_name": TEXT, "field_names": _FROZEN_TEXT_LIST, "field_types": _FROZEN_TEXT_LIST},
            "user defined type definitions",
        ),
        _define(
            "functions",
            ["keyspace_name"],
            _FN_KEY,
            {
                **_KT,
                "function_name": TEXT,
                "argument_types": _FROZEN_TEXT_LIST,
                "argument_names": _FROZEN_TEXT_LIST,
                "body": TEXT,
                "called_on_null_input": BOOLEAN,
                "language": TEXT,
                "return_type": TEXT,
            },
            "user defined function definitions",
        ),
        _define(
            "aggregates",
            ["keyspace_name"],
            ["aggregate_name", "argument_types"],
            {
                **_KT,
                "aggregate_name": TEXT,
                "argument_types": _FROZEN_TEXT_LIST,
                "final_func": TEXT,
                "initcond": TEXT,
                "return_type": TEXT,
                "state_func": TEXT,
                "state_type": TEXT,
            },
            "user defined aggregate definitions",
        ),
        _define(
            "scylla_aggregates",
            ["keyspace_name"],
            ["aggregate_name", "argument_types"],
            {
                **_KT,
                "aggregate_name": TEXT,
                "argument_types": _FROZEN_TEXT_LIST,
                "reduce_func": TEXT,
                "state_type": TEXT,
            },
        ),
    )
}


def system_schema_keyspace() -> KeyspaceSchema:
    """The system_schema keyspace itself, for nodes that list it in the catalog (LocalStrategy)."""
    definition = KeyspaceDef(KEYSPACE, Replication(LOCAL), durable_writes=True)
    return KeyspaceSchema(definition, tables=FrozenMap(TABLES))
