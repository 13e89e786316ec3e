"""Layer 1: the schema catalog (an immutable value), DDL decisions, system_schema rows, DESCRIBE text.

Flow: the executor calls a decision function (`create_table(catalog, ...)`) -> DdlOutcome with
catalog mutations and SCHEMA_CHANGE events -> group0 replicates the mutations (serialize.py) ->
every node runs `apply_mutations(catalog, mutations, new_version)`.
"""

from tabletdb.schema.ddl_alter_table import (
    alter_table_add,
    alter_table_alter_type,
    alter_table_drop,
    alter_table_options,
    alter_table_rename,
)
from tabletdb.schema.ddl_common import Change, DdlOutcome, SchemaChangeEvent, SchemaConfig, Target
from tabletdb.schema.ddl_functions import create_aggregate, create_function, drop_aggregate, drop_function
from tabletdb.schema.ddl_keyspace import alter_keyspace, create_keyspace, drop_keyspace
from tabletdb.schema.ddl_table import create_table, drop_table
from tabletdb.schema.ddl_types import (
    alter_type_add,
    alter_type_alter_field,
    alter_type_rename,
    create_type,
    drop_type,
)
from tabletdb.schema.ddl_views import alter_view, create_view, drop_view
from tabletdb.schema.indexes import create_index, drop_index
from tabletdb.schema.model import (
    AggregateDef,
    Catalog,
    ClusteringOrder,
    ColumnDef,
    ColumnKind,
    DroppedColumn,
    FunctionDef,
    IndexDef,
    IndexKind,
    KeyspaceDef,
    KeyspaceSchema,
    KeyspaceTablets,
    Replication,
    TableDef,
    UserTypeDef,
    ViewDef,
)
from tabletdb.schema.mutations import Mutation, apply_mutations
from tabletdb.schema.options import TableOptions

__all__ = [
    "AggregateDef",
    "Catalog",
    "Change",
    "ClusteringOrder",
    "ColumnDef",
    "ColumnKind",
    "DdlOutcome",
    "DroppedColumn",
    "FunctionDef",
    "IndexDef",
    "IndexKind",
    "KeyspaceDef",
    "KeyspaceSchema",
    "KeyspaceTablets",
    "Mutation",
    "Replication",
    "SchemaChangeEvent",
    "SchemaConfig",
    "TableDef",
    "TableOptions",
    "Target",
    "UserTypeDef",
    "ViewDef",
    "alter_keyspace",
    "alter_table_add",
    "alter_table_alter_type",
    "alter_table_drop",
    "alter_table_options",
    "alter_table_rename",
    "alter_type_add",
    "alter_type_alter_field",
    "alter_type_rename",
    "alter_view",
    "apply_mutations",
    "create_aggregate",
    "create_function",
    "create_index",
    "create_keyspace",
    "create_table",
    "create_type",
    "create_view",
    "drop_aggregate",
    "drop_function",
    "drop_index",
    "drop_keyspace",
    "drop_table",
    "drop_type",
    "drop_view",
]
