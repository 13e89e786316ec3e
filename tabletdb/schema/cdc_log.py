"""The CDC log table of a base table: its name, columns and options (spec/cdc.md, "Log table").

Pure: built from the base definition every time the base is created or altered with CDC, so the
log always has a column for every base column. Key columns keep their types; non-key columns
are logged as their frozen form, each with a ``cdc$deleted_<col>`` flag, and non-frozen
collections also get ``cdc$deleted_elements_<col>`` (the removed set elements or map keys); a
non-frozen list is logged as the map of its elements by timeuuid key (``cdc.list_keys``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from tabletdb.cql.types import (
    BIGINT,
    BLOB,
    BOOLEAN,
    INT,
    SMALLINT,
    TIMEUUID,
    TINYINT,
    CqlType,
    ListType,
    MapType,
    SetType,
    UserType,
)
from tabletdb.schema.model import CDC_LOG_SUFFIX, ColumnDef, ColumnKind, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.tables import CDC_PARTITIONER, ClusteringOrder

STREAM_ID = "cdc$stream_id"
TIME = "cdc$time"
BATCH_SEQ_NO = "cdc$batch_seq_no"
END_OF_BATCH = "cdc$end_of_batch"
OPERATION = "cdc$operation"
TTL = "cdc$ttl"
DELETED = "cdc$deleted_"
DELETED_ELEMENTS = "cdc$deleted_elements_"

LOG_COMPACTION = (
    ("class", "TimeWindowCompactionStrategy"),
    ("compaction_window_size", "60"),
    ("compaction_window_unit", "MINUTES"),
)
LOG_CACHING = (("enabled", "false"), ("keys", "NONE"), ("rows_per_partition", "NONE"))


@dataclass(frozen=True)
class CdcOptions:
    """A base table's `cdc = {...}` as values (``schema.options.validate_cdc`` normalised it)."""

    enabled: bool = False
    preimage: str = "false"
    postimage: bool = False
    delta: str = "full"
    ttl: int = 86400

    @classmethod
    def of(cls, table: TableDef) -> CdcOptions:
        if table.options.cdc is None:
            return cls()
        opts = dict(table.options.cdc)
        return cls(
            enabled=opts["enabled"] == "true",
            preimage=opts["preimage"],
            postimage=opts["postimage"] == "true",
            delta=opts["delta"],
            ttl=int(opts["ttl"]),
        )


def log_name(base_name: str) -> str:
    return base_name + CDC_LOG_SUFFIX


def log_table_id(base_id: uuid.UUID) -> uuid.UUID:
    """Derived from the base id, so every node (and a re-enable) names the same log table."""
    return uuid.uuid5(base_id, "cdc log")


def deleted_elements_type(t: CqlType) -> CqlType | None:
    if isinstance(t, SetType) and not t.frozen:
        return SetType(t.element, frozen=True)
    if isinstance(t, MapType) and not t.frozen:
        return SetType(t.key, frozen=True)
    if isinstance(t, ListType) and not t.frozen:  # elements by their timeuuid keys (cdc.list_keys)
        return SetType(TIMEUUID, frozen=True)
    if isinstance(t, UserType) and not t.frozen:  # fields by index (statements.udt_cells)
        return SetType(SMALLINT, frozen=True)
    return None


def value_type(t: CqlType) -> CqlType:
    """The log's value column type of a non-key base column: its frozen form, and for a
    non-frozen ``list<V>`` the ``frozen<map<timeuuid, V>>`` of its elements by key."""
    if isinstance(t, ListType) and not t.frozen:
        return MapType(TIMEUUID, t.element, frozen=True)
    return t.frozen_form()


def log_columns(base: TableDef) -> tuple[ColumnDef, ...]:
    reg = ColumnKind.REGULAR
    columns = [
        ColumnDef(STREAM_ID, BLOB, ColumnKind.PARTITION_KEY, 0),
        ColumnDef(TIME, TIMEUUID, ColumnKind.CLUSTERING, 0, ClusteringOrder.ASC),
        ColumnDef(BATCH_SEQ_NO, INT, ColumnKind.CLUSTERING, 1, ClusteringOrder.ASC),
        ColumnDef(END_OF_BATCH, BOOLEAN, reg),
        ColumnDef(OPERATION, TINYINT, reg),
        ColumnDef(TTL, BIGINT, reg),
    ]
    for column in base.columns:
        if column.is_primary_key:
            columns.append(ColumnDef(column.name, column.type, reg))
            continue
        columns.append(ColumnDef(column.name, value_type(column.type), reg))
        columns.append(ColumnDef(DELETED + column.name, BOOLEAN, reg))
        elements = deleted_elements_type(column.type)
        if elements is not None:
            columns.append(ColumnDef(DELETED_ELEMENTS + column.name, elements, reg))
    return order_columns(columns)  # ScyllaDB's order: keys by position, the rest by name


def default_log_options(base: TableDef) -> TableOptions:
    return TableOptions(
        caching=LOG_CACHING,
        comment=f"CDC log for {base.keyspace}.{base.name}",
        compaction=LOG_COMPACTION,
        default_time_to_live=CdcOptions.of(base).ttl,
        gc_grace_seconds=0,
    )


def log_for(base: TableDef, existing: TableDef | None) -> TableDef | None:
    """The log ``base`` should have after a change: a new one if CDC is on and there is none, the
    existing one rebuilt from the base's columns (also while CDC is off, so re-enabling finds it
    current), or None."""
    if existing is not None and not existing.is_cdc_log:
        existing = None
    if existing is None and not base.options.cdc_enabled:
        return None
    return log_table(base, existing)


def log_table(base: TableDef, existing: TableDef | None) -> TableDef:
    """The log of ``base``: ``existing`` (an earlier log) keeps its id and its own options except
    the TTL, which follows the base's cdc ttl; otherwise a new one with the default options."""
    columns = log_columns(base)
    if existing is not None:
        options = replace(existing.options, default_time_to_live=CdcOptions.of(base).ttl)
        return replace(existing, columns=columns, options=options)
    return TableDef(
        base.keyspace,
        log_name(base.name),
        log_table_id(base.id),
        columns,
        default_log_options(base),
        partitioner=CDC_PARTITIONER,
    )
