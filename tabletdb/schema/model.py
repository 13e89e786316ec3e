"""The schema catalog as an immutable value.

Every node holds the same Catalog (group0 applies the same mutations in the same order), and
readers keep using the object they fetched while a new one is built. Column types are always
resolved: a UDT appears as `tabletdb.cql.types.UserType` carrying its fields, never as a
`UserTypeRef`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from tabletdb.cql.types import CqlType, UserType
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.index_table import index_table
from tabletdb.schema.options import Pairs
from tabletdb.schema.tables import (
    CDC_PARTITIONER,
    ClusteringOrder,
    ColumnDef,
    ColumnKind,
    DroppedColumn,
    IndexDef,
    IndexKind,
    TableDef,
    order_columns,
)

NTS = "org.apache.cassandra.locator.NetworkTopologyStrategy"
SIMPLE = "org.apache.cassandra.locator.SimpleStrategy"
LOCAL = "org.apache.cassandra.locator.LocalStrategy"
EVERYWHERE = "org.apache.cassandra.locator.EverywhereStrategy"
CDC_LOG_SUFFIX = "_scylla_cdc_log"  # a base table t has its CDC log in t_scylla_cdc_log

RackList = tuple[str, ...]
ZERO_VERSION = uuid.UUID(int=0)


@dataclass(frozen=True)
class Replication:
    """Strategy class (full Java name) and its options; a DC's factor is a number string or a rack list."""

    strategy_class: str
    options: tuple[tuple[str, str | RackList], ...] = ()

    def factor(self, dc: str) -> int:
        value = dict(self.options).get(dc, "0")
        return len(value) if isinstance(value, tuple) else int(value)


@dataclass(frozen=True)
class KeyspaceTablets:
    """`tablets = {'enabled': ..., 'initial': N}`; None on a keyspace means tablets do not apply."""

    enabled: bool
    initial: int | None = None


@dataclass(frozen=True)
class KeyspaceDef:
    name: str
    replication: Replication
    durable_writes: bool = True
    tablets: KeyspaceTablets | None = None
    storage_type: str | None = None
    storage_options: Pairs = ()

    @property
    def uses_tablets(self) -> bool:
        return self.tablets is not None and self.tablets.enabled


@dataclass(frozen=True)
class ViewDef:
    """A materialized view: its own table shape plus the link to its base table."""

    table: TableDef
    base_table_id: uuid.UUID
    base_table_name: str
    where_clause: str
    include_all_columns: bool = False

    @property
    def keyspace(self) -> str:
        return self.table.keyspace

    @property
    def name(self) -> str:
        return self.table.name


@dataclass(frozen=True)
class UserTypeDef:
    keyspace: str
    name: str
    field_names: tuple[str, ...]
    field_types: tuple[CqlType, ...]

    def as_type(self, frozen: bool = False) -> UserType:
        return UserType(self.keyspace, self.name, self.field_names, self.field_types, frozen)


@dataclass(frozen=True)
class FunctionDef:
    keyspace: str
    name: str
    argument_names: tuple[str, ...]
    argument_types: tuple[CqlType, ...]
    return_type: CqlType
    language: str
    body: str
    called_on_null_input: bool

    @property
    def signature(self) -> FunctionKey:
        return (self.name, tuple(t.cql() for t in self.argument_types))


@dataclass(frozen=True)
class AggregateDef:
    keyspace: str
    name: str
    argument_types: tuple[CqlType, ...]
    state_func: str
    state_type: CqlType
    return_type: CqlType
    final_func: str | None = None
    initcond: str | None = None  # the CQL literal text of the initial state
    reduce_func: str | None = None

    @property
    def signature(self) -> FunctionKey:
        return (self.name, tuple(t.cql() for t in self.argument_types))


FunctionKey = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class KeyspaceSchema:
    definition: KeyspaceDef
    tables: FrozenMap[str, TableDef] = field(default_factory=FrozenMap)
    views: FrozenMap[str, ViewDef] = field(default_factory=FrozenMap)
    types: FrozenMap[str, UserTypeDef] = field(default_factory=FrozenMap)
    functions: FrozenMap[FunctionKey, FunctionDef] = field(default_factory=FrozenMap)
    aggregates: FrozenMap[FunctionKey, AggregateDef] = field(default_factory=FrozenMap)

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def indexes(self) -> dict[str, IndexDef]:
        """All secondary indexes of the keyspace by name (they are stored in their tables)."""
        return {i.name: i for t in self.tables.values() for i in t.indexes}

    def views_of(self, table: str) -> list[ViewDef]:
        return sorted((v for v in self.views.values() if v.base_table_name == table), key=lambda v: v.name)

    def functions_named(self, name: str) -> list[FunctionDef]:
        """Overloads of a function, by argument types."""
        return [self.functions[key] for key in sorted(self.functions) if key[0] == name]

    def aggregates_named(self, name: str) -> list[AggregateDef]:
        return [self.aggregates[key] for key in sorted(self.aggregates) if key[0] == name]


@dataclass(frozen=True)
class Catalog:
    """All keyspaces plus the schema version (the id of the group0 state that produced it)."""

    keyspaces: FrozenMap[str, KeyspaceSchema] = field(default_factory=FrozenMap)
    version: uuid.UUID = field(default_factory=lambda: ZERO_VERSION)
    # table or view id -> (keyspace, name): keeps `WITH ID` uniqueness checks O(1).
    ids: FrozenMap[uuid.UUID, tuple[str, str]] = field(default_factory=FrozenMap)

    def keyspace(self, name: str) -> KeyspaceSchema | None:
        return self.keyspaces.get(name)

    def table(self, keyspace: str, name: str) -> TableDef | None:
        ks = self.keyspaces.get(keyspace)
        return None if ks is None else ks.tables.get(name)

    def view(self, keyspace: str, name: str) -> ViewDef | None:
        ks = self.keyspaces.get(keyspace)
        return None if ks is None else ks.views.get(name)

    def table_or_view(self, keyspace: str, name: str) -> TableDef | None:
        table = self.table(keyspace, name)
        if table is not None:
            return table
        view = self.view(keyspace, name)
        return None if view is None else view.table

    def user_type(self, keyspace: str, name: str) -> UserTypeDef | None:
        ks = self.keyspaces.get(keyspace)
        return None if ks is None else ks.types.get(name)

    def by_id(self, table_id: uuid.UUID) -> TableDef | None:
        """A table, view or index entries table by id (replicas resolve requests by id)."""
        where = self.ids.get(table_id)
        if where is None:
            return None
        found = self.table_or_view(*where)
        return found if found is not None else self._index_table(where[0], table_id)

    def _index_table(self, keyspace: str, table_id: uuid.UUID) -> TableDef | None:
        ks = self.keyspaces.get(keyspace)
        for table in ks.tables.values() if ks is not None else ():
            for index in table.indexes:
                if index.table_id == table_id:
                    return index_table(table, index)
        return None

    def find_index(self, keyspace: str, name: str) -> tuple[TableDef, IndexDef] | None:
        ks = self.keyspaces.get(keyspace)
        if ks is None:
            return None
        for table in ks.tables.values():
            index = table.index(name)
            if index is not None:
                return table, index
        return None


__all__ = [
    "CDC_LOG_SUFFIX",
    "CDC_PARTITIONER",
    "EVERYWHERE",
    "LOCAL",
    "NTS",
    "SIMPLE",
    "ZERO_VERSION",
    "AggregateDef",
    "Catalog",
    "ClusteringOrder",
    "ColumnDef",
    "ColumnKind",
    "DroppedColumn",
    "FunctionDef",
    "FunctionKey",
    "IndexDef",
    "IndexKind",
    "KeyspaceDef",
    "KeyspaceSchema",
    "KeyspaceTablets",
    "RackList",
    "Replication",
    "TableDef",
    "UserTypeDef",
    "ViewDef",
    "order_columns",
]
