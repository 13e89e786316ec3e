"""Table definitions: columns, secondary indexes and the table itself.

They sit below the catalog (`schema.model`) because the catalog resolves ids to tables, including
the hidden entries table of an index (`schema.index_table`), which is built from these
definitions; keeping them apart lets that builder import them without importing the catalog.
`schema.model` re-exports them, so users of the catalog import everything from one place.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from tabletdb.cql.types import CqlType
from tabletdb.schema.options import Pairs, TableOptions

CDC_PARTITIONER = "com.scylladb.dht.CDCPartitioner"


class ColumnKind(StrEnum):
    PARTITION_KEY = "partition_key"
    CLUSTERING = "clustering"
    STATIC = "static"
    REGULAR = "regular"


class ClusteringOrder(StrEnum):
    ASC = "ASC"
    DESC = "DESC"
    NONE = "NONE"


class IndexKind(StrEnum):
    KEYS = "KEYS"
    COMPOSITES = "COMPOSITES"
    CUSTOM = "CUSTOM"


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: CqlType
    kind: ColumnKind
    position: int = -1
    clustering_order: ClusteringOrder = ClusteringOrder.NONE

    @property
    def is_primary_key(self) -> bool:
        return self.kind in (ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING)


@dataclass(frozen=True)
class DroppedColumn:
    type: CqlType
    timestamp: int  # microseconds since the epoch, the DROP's write timestamp


@dataclass(frozen=True)
class IndexDef:
    """A secondary index. `options` holds `target` (and `class_name` for custom indexes).

    `table_id` names the hidden table holding the index's entries (`schema.index_table`); None
    for indexes that have none (custom and local indexes, and ones created before index tables
    existed), which queries then answer by scanning and filtering. `table_options`: the
    properties given by `CREATE INDEX ... WITH` (`schema.index_properties`), the entries table's
    options; None when none were given (the table then has the defaults).
    """

    name: str
    table: str
    kind: IndexKind
    options: Pairs
    table_id: uuid.UUID | None = None
    table_options: TableOptions | None = None

    @property
    def target(self) -> str:
        return dict(self.options)["target"]

    @property
    def custom_class(self) -> str | None:
        return dict(self.options).get("class_name")


def order_columns(columns: tuple[ColumnDef, ...] | list[ColumnDef]) -> tuple[ColumnDef, ...]:
    """Scylla's column order (SELECT *, DESCRIBE): partition key and clustering columns by
    position, then static columns, then regular columns, each by name bytes."""
    rank = {
        ColumnKind.PARTITION_KEY: 0,
        ColumnKind.CLUSTERING: 1,
        ColumnKind.STATIC: 2,
        ColumnKind.REGULAR: 3,
    }

    def key(c: ColumnDef) -> tuple[int, int, bytes]:
        return (rank[c.kind], c.position, c.name.encode())

    return tuple(sorted(columns, key=key))


@dataclass(frozen=True)
class TableDef:
    keyspace: str
    name: str
    id: uuid.UUID
    columns: tuple[ColumnDef, ...]
    options: TableOptions = field(default_factory=TableOptions)
    dropped_columns: tuple[tuple[str, DroppedColumn], ...] = ()
    is_compact_storage: bool = False
    indexes: tuple[IndexDef, ...] = ()
    partitioner: str | None = None  # only a non-default one, e.g. CDC_PARTITIONER for CDC log tables

    @property
    def is_cdc_log(self) -> bool:
        return self.partitioner == CDC_PARTITIONER

    @cached_property  # cached ones: a frozen table never changes, and the data path asks per request
    def _by_name(self) -> dict[str, ColumnDef]:
        return {c.name: c for c in self.columns}

    def column(self, name: str) -> ColumnDef | None:
        return self._by_name.get(name)

    @cached_property
    def partition_key(self) -> tuple[ColumnDef, ...]:
        return tuple(c for c in self.columns if c.kind is ColumnKind.PARTITION_KEY)

    @cached_property
    def clustering_key(self) -> tuple[ColumnDef, ...]:
        return tuple(c for c in self.columns if c.kind is ColumnKind.CLUSTERING)

    @cached_property
    def primary_key(self) -> tuple[ColumnDef, ...]:
        return self.partition_key + self.clustering_key

    @cached_property
    def static_columns(self) -> tuple[ColumnDef, ...]:
        return tuple(c for c in self.columns if c.kind is ColumnKind.STATIC)

    @cached_property
    def regular_columns(self) -> tuple[ColumnDef, ...]:
        return tuple(c for c in self.columns if c.kind is ColumnKind.REGULAR)

    @cached_property
    def is_counter(self) -> bool:
        return any(c.type.is_counter for c in self.columns if not c.is_primary_key)

    @property
    def is_dense(self) -> bool:
        """COMPACT STORAGE with clustering columns: one value cell per clustering row."""
        return self.is_compact_storage and bool(self.clustering_key)

    @property
    def flags(self) -> frozenset[str]:
        """system_schema.tables.flags; drivers take an empty set as a compact static-only table."""
        result = set()
        if self.is_counter:
            result.add("counter")
        if not self.is_compact_storage or len(self.clustering_key) > 1:
            result.add("compound")
        if self.is_dense:
            result.add("dense")
        return frozenset(result)

    def dropped(self, name: str) -> DroppedColumn | None:
        return dict(self.dropped_columns).get(name)

    def index(self, name: str) -> IndexDef | None:
        return next((i for i in self.indexes if i.name == name), None)
