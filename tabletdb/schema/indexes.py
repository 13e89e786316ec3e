"""Secondary indexes: CREATE / DROP INDEX decisions.

An index lives inside its base table's definition (so dropping the table drops it). Its
`target` option uses ScyllaDB's stored forms (`schema.index_targets`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import MapType
from tabletdb.schema.ddl_common import (
    NAME_LENGTH,
    NOOP,
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    SchemaConfig,
    Target,
    check_rf_rack_valid,
    ensure_user_modifiable,
    require_keyspace,
)
from tabletdb.schema.index_properties import check_index_can_hold, index_properties
from tabletdb.schema.index_targets import TARGET_KINDS, local_target_string, target_string
from tabletdb.schema.model import Catalog, ColumnKind, IndexDef, IndexKind, TableDef
from tabletdb.schema.mutations import PutTable
from tabletdb.schema.rack_rules import check_placeable, views_warning

SUPPORTED_CUSTOM_CLASSES: frozenset[str] = frozenset()
"""Custom index classes CREATE CUSTOM INDEX takes: none. ScyllaDB refuses every class it has no
implementation for (Cassandra's SASI and SAI, any Java class); its own `vector_index` serves
`ORDER BY ... ANN OF` through an external vector store, which this database does not have.
Accepting a class and answering its queries by filtering would look like support that is not
there, so each is refused with ScyllaDB's words. Custom indexes already in a schema (from an
older version) are still described and dropped."""


def default_index_name(table: TableDef, column: str, existing: set[str]) -> str:
    base = re.sub(r"\W", "", f"{table.name}_{column}_idx")
    name, i = base, 0
    while name in existing:
        i += 1
        name = f"{base}_{i}"
    return name


def _validate_target(table: TableDef, column: str, kind: str) -> None:
    col = table.column(column)
    if col is None:
        raise InvalidRequest(f"No column definition found for column {column}")
    if kind not in TARGET_KINDS:
        raise InvalidRequest(f"Unknown index target kind {kind!r}")
    if len(table.partition_key) == 1 and table.partition_key[0].name == column and not table.clustering_key:
        raise InvalidRequest(f"Cannot create secondary index on the only partition key column {column}")
    if col.type.is_collection:
        if not col.type.is_multi_cell and kind != "full":
            raise InvalidRequest(
                f"Cannot create {'values' if kind == 'simple' else kind}() index on frozen column {column}. "
                "Frozen collections only support full() indexes"
            )
        if col.type.is_multi_cell and kind == "full":
            raise InvalidRequest("full() indexes can only be created on frozen collections")
        if kind in ("keys", "entries") and not isinstance(col.type, MapType):
            raise InvalidRequest(f"Cannot create index on {kind} of column {column} with non-map type")
    elif kind not in ("simple",):
        if kind == "full":
            raise InvalidRequest("full() indexes can only be created on frozen collections")
        raise InvalidRequest(
            f"Cannot create {kind}() index on {column}. Non-collection columns support only simple indexes"
        )


def create_index(
    catalog: Catalog,
    keyspace: str,
    table_name: str,
    name: str | None,
    column: str,
    kind: str = "simple",
    *,
    local_partition_key: Sequence[str] | None = None,
    custom_class: str | None = None,
    options: Mapping[str, str] | None = None,
    properties: Mapping[str, object] | None = None,
    if_not_exists: bool = False,
    config: SchemaConfig | None = None,
    table_id: uuid.UUID | None = None,
) -> DdlOutcome:
    """CREATE [CUSTOM] INDEX. `kind` is simple/values/keys/entries/full; a plain collection
    column (kind simple) indexes its values, as in CQL. `table_id` (a fresh id from the caller)
    becomes the id of the index's entries table unless `properties` give an ID; custom, local
    and static-column indexes get none. `properties`: the WITH map besides `options`."""
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    if custom_class is not None and custom_class not in SUPPORTED_CUSTOM_CLASSES:
        raise InvalidRequest(f"Non-supported custom class '{custom_class}' provided")
    properties = properties or {}
    table_options, given_id = index_properties(properties)  # refused even where IF NOT EXISTS ends it
    if table_name in ks.views:
        raise InvalidRequest("Secondary indexes are not supported on materialized views")
    table = ks.tables.get(table_name)
    if table is None:
        raise InvalidRequest(f"unconfigured table {table_name}")
    if table.is_counter:
        raise InvalidRequest("Secondary indexes are not supported on counter tables")
    if name is not None and len(name) > NAME_LENGTH:
        # The index's entries table is named after it: a longer name would make a table name
        # past the limit every other table keeps.
        raise InvalidRequest(
            f'index names shouldn\'t be more than {NAME_LENGTH} characters long (got "{name}")'
        )
    col = table.column(column)
    if local_partition_key is not None and col is not None and col.kind is ColumnKind.STATIC:
        # A local index orders a partition's rows by the indexed value; a static cell belongs
        # to the partition, not to a row, so there is nothing to order.
        raise InvalidRequest("Local indexes containing static columns are not supported.")
    if kind == "simple" and col is not None and col.type.is_collection and col.type.is_multi_cell:
        kind = "values"
    _validate_target(table, column, kind)
    existing = {i.name for t in ks.tables.values() for i in t.indexes}
    if local_partition_key is not None:
        if tuple(local_partition_key) != tuple(c.name for c in table.partition_key):
            raise InvalidRequest("Local index definition must contain full partition key only")
        target = local_target_string(local_partition_key, column)
    else:
        target = target_string(column, kind)
    index_name = name or default_index_name(table, column, existing)
    if index_name in existing:
        if if_not_exists:
            return NOOP
        raise InvalidRequest(f"Index {index_name} already exists")
    duplicate = next(
        (i for i in table.indexes if i.target == target and i.custom_class == custom_class), None
    )
    if duplicate is not None:
        if if_not_exists:
            return NOOP
        raise InvalidRequest(f"Index {index_name} is a duplicate of existing index {duplicate.name}")
    why = f"Cannot create index {index_name} on {keyspace}.{table_name}"
    config = config or SchemaConfig()
    check_placeable(ks.definition, config.cluster)
    check_rf_rack_valid(ks.definition, config, why, views=True)
    stored = dict(options or {})
    if custom_class is not None:
        stored["class_name"] = custom_class
    stored["target"] = target
    index_kind = IndexKind.CUSTOM if custom_class is not None else IndexKind.COMPOSITES
    has_table = custom_class is None and local_partition_key is None
    has_table = has_table and col is not None and col.kind is not ColumnKind.STATIC
    check_index_can_hold(has_table, properties)
    entries_id = (given_id or table_id) if has_table else None
    owner = None if entries_id is None else catalog.ids.get(entries_id)
    if owner is not None:
        raise InvalidRequest(f"Table with ID {entries_id} already exists: {owner[0]}.{owner[1]}")
    index = IndexDef(
        index_name, table_name, index_kind, tuple(sorted(stored.items())), entries_id, table_options
    )
    indexes = tuple(sorted((*table.indexes, index), key=lambda i: i.name))
    new_table = replace(table, indexes=indexes)
    event = SchemaChangeEvent(Change.UPDATED, Target.TABLE, keyspace, table_name)
    return DdlOutcome((PutTable(new_table),), (event,), views_warning(ks.definition))


def drop_index(catalog: Catalog, keyspace: str, name: str, if_exists: bool = False) -> DdlOutcome:
    ks = catalog.keyspace(keyspace)
    if ks is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(f"Keyspace {keyspace} does not exist")
    ensure_user_modifiable(keyspace)
    found = catalog.find_index(keyspace, name)
    if found is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(
            f"Index '{name}' could not be found in any of the tables of keyspace '{keyspace}'"
        )
    table, _ = found
    new_table = replace(table, indexes=tuple(i for i in table.indexes if i.name != name))
    event = SchemaChangeEvent(Change.UPDATED, Target.TABLE, keyspace, table.name)
    return DdlOutcome((PutTable(new_table),), (event,))
