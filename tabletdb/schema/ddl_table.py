"""CREATE TABLE and DROP TABLE decisions.

Column specs arrive as plain `(name, type, is_static)` tuples with UDTs still as references;
validation mirrors ScyllaDB's create_table_statement so users get the errors they know.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from tabletdb.cql.errors import AlreadyExists, ConfigurationError, InvalidRequest
from tabletdb.cql.types import CqlType, UserType
from tabletdb.schema.cdc_log import log_for
from tabletdb.schema.ddl_common import (
    NOOP,
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    SchemaConfig,
    Target,
    check_tablet_options,
    ensure_user_modifiable,
    name_taken_by_table_or_view,
    require_keyspace,
    validate_table_name,
)
from tabletdb.schema.model import (
    CDC_LOG_SUFFIX,
    Catalog,
    ClusteringOrder,
    ColumnDef,
    ColumnKind,
    KeyspaceSchema,
    TableDef,
    order_columns,
)
from tabletdb.schema.mutations import DropTable, Mutation, PutTable
from tabletdb.schema.options import TableOptions, apply_options, table_id_option
from tabletdb.schema.rack_rules import check_placeable
from tabletdb.schema.typeutil import resolve_type

ColumnSpec = tuple[str, CqlType, bool]  # name, type (UserTypeRef allowed), is_static
STATIC_NEEDS_CLUSTERING = (
    "Static columns are only useful (and thus allowed) if the table has at least one clustering column"
)


def resolve_in(catalog: Catalog, keyspace: str, t: CqlType) -> CqlType:
    return resolve_type(t, keyspace, catalog.user_type)


def check_key_column_type(name: str, t: CqlType) -> None:
    """Key components must be single-cell and orderable."""
    if t.is_multi_cell:
        what = "user-defined type" if isinstance(t, UserType) else "collection type"
        raise InvalidRequest(f"Invalid non-frozen {what} for PRIMARY KEY component {name}")
    if t.is_counter:
        raise InvalidRequest(f"counter type is not supported for PRIMARY KEY part {name}")
    if t.cql() == "duration":
        raise InvalidRequest(f"duration type is not supported for PRIMARY KEY part {name}")


def clustering_orders(
    clustering_key: Sequence[str], given: Sequence[tuple[str, str]]
) -> list[ClusteringOrder]:
    """CLUSTERING ORDER BY must name a prefix of the clustering key, in key order; the rest is ASC."""
    orders = [ClusteringOrder.ASC] * len(clustering_key)
    for i, (name, order) in enumerate(given):
        if name in (n for n, _ in given[:i]):
            raise InvalidRequest(f"Duplicate column {name} in CLUSTERING ORDER directive")
        if name not in clustering_key:
            raise InvalidRequest(
                f"Only clustering key columns can be defined in CLUSTERING ORDER directive: {name} is not one"
            )
        if clustering_key[i] != name:
            expected = clustering_key[i]
            if expected in (n for n, _ in given):
                raise InvalidRequest(
                    "The order of columns in the CLUSTERING ORDER directive must match that of the "
                    f"clustering columns ({expected} must appear before {name})"
                )
            raise InvalidRequest(f"Missing CLUSTERING ORDER for column {expected}")
        upper = order.upper()
        if upper not in ("ASC", "DESC"):
            raise InvalidRequest(
                f"Invalid clustering order {order!r} for column {name}: expected ASC or DESC"
            )
        orders[i] = ClusteringOrder(upper)
    return orders


def build_columns(
    catalog: Catalog,
    keyspace: str,
    columns: Sequence[ColumnSpec],
    partition_key: Sequence[str],
    clustering_key: Sequence[str],
    clustering_order: Sequence[tuple[str, str]],
) -> tuple[ColumnDef, ...]:
    """Validate column definitions and the primary key; return the ordered ColumnDefs."""
    types: dict[str, CqlType] = {}
    statics: set[str] = set()
    for name, t, is_static in columns:
        if name in types:
            raise InvalidRequest(f"Multiple definition of identifier {name}")
        types[name] = resolve_in(catalog, keyspace, t)
        if is_static:
            statics.add(name)
    if not partition_key:
        raise InvalidRequest("No PRIMARY KEY specifed (exactly one required)")
    seen: set[str] = set()
    for name in [*partition_key, *clustering_key]:
        if name not in types:
            raise InvalidRequest(f"Unknown definition {name} referenced in PRIMARY KEY")
        if name in seen:
            raise InvalidRequest(f"Multiple definition of identifier {name} in PRIMARY KEY")
        if name in statics:
            raise InvalidRequest(f"Static column {name} cannot be part of the PRIMARY KEY")
        seen.add(name)
        check_key_column_type(name, types[name])
    if statics and not clustering_key:
        raise InvalidRequest(STATIC_NEEDS_CLUSTERING)
    orders = clustering_orders(clustering_key, clustering_order)
    result = [ColumnDef(n, types[n], ColumnKind.PARTITION_KEY, i) for i, n in enumerate(partition_key)]
    result += [
        ColumnDef(n, types[n], ColumnKind.CLUSTERING, i, orders[i]) for i, n in enumerate(clustering_key)
    ]
    for name, t in types.items():
        if name not in seen:
            kind = ColumnKind.STATIC if name in statics else ColumnKind.REGULAR
            result.append(ColumnDef(name, t, kind))
    non_key = [c for c in result if not c.is_primary_key]
    counters = [c for c in non_key if c.type.is_counter]
    if counters and len(counters) != len(non_key):
        raise InvalidRequest("Cannot mix counter and non counter columns in the same table")
    return order_columns(result)


def _check_compact(columns: tuple[ColumnDef, ...], config: SchemaConfig) -> None:
    if not config.enable_create_table_with_compact_storage:
        raise InvalidRequest(
            "Support for the deprecated feature of 'CREATE TABLE WITH COMPACT STORAGE' is disabled and will "
            "eventually be removed in a future version. To enable, set the "
            "'enable_create_table_with_compact_storage' config option to 'true'."
        )
    regular = [c.name for c in columns if c.kind is ColumnKind.REGULAR]
    if any(c.kind is ColumnKind.STATIC for c in columns):
        raise InvalidRequest("Static columns are not supported in COMPACT STORAGE tables")
    if any(c.type.is_multi_cell for c in columns):
        raise InvalidRequest("Non-frozen collections and UDTs are not supported with COMPACT STORAGE")
    if any(c.kind is ColumnKind.CLUSTERING for c in columns) and len(regular) > 1:
        raise InvalidRequest(
            "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the "
            f"PRIMARY KEY (got: {', '.join(regular)})"
        )


def check_table_options(table: TableDef, ks: KeyspaceSchema) -> None:
    """Cross-checks between options and columns, shared by CREATE and ALTER."""
    if table.is_counter and table.options.default_time_to_live:
        raise InvalidRequest("Cannot set default_time_to_live on a table with counters")
    if table.options.cdc_enabled:
        if table.is_cdc_log:
            raise InvalidRequest(f"Cannot enable CDC on {table.keyspace}.{table.name}: it is a CDC log table")
        if table.is_counter:  # ScyllaDB's words (its CDC has no counter support)
            raise InvalidRequest(
                f"Cannot create CDC log for table {table.keyspace}.{table.name}. "
                "Counter support not implemented"
            )
        log_name = table.name + CDC_LOG_SUFFIX
        if log_name in ks.tables and not ks.tables[log_name].is_cdc_log:
            raise InvalidRequest(
                f"Cannot create CDC log for table {table.keyspace}.{table.name} because keyspace "
                f"{table.keyspace} already has a table named {log_name}"
            )
    check_tablet_options(ks.definition, table.options.tablets)


def claim_table_id(
    catalog: Catalog,
    keyspace: str,
    name: str,
    options: Mapping[str, object],
    new_id: uuid.UUID,
    explicit: uuid.UUID | str | None = None,
) -> uuid.UUID:
    """`WITH ID = ...` (restore keeps ids) if given, else the caller's fresh id; ids must be unique."""
    chosen = table_id_option({"id": explicit}) if explicit is not None else table_id_option(options)
    table_id = chosen or new_id
    owner = catalog.ids.get(table_id)
    if owner is not None:
        raise InvalidRequest(
            f"Cannot create {keyspace}.{name}: table id {table_id} is already used by {owner[0]}.{owner[1]}"
        )
    return table_id


def create_table(
    catalog: Catalog,
    keyspace: str,
    name: str,
    columns: Sequence[ColumnSpec],
    partition_key: Sequence[str],
    clustering_key: Sequence[str] = (),
    clustering_order: Sequence[tuple[str, str]] = (),
    options: Mapping[str, object] | None = None,
    *,
    new_id: uuid.UUID,
    table_id: uuid.UUID | str | None = None,
    compact_storage: bool = False,
    if_not_exists: bool = False,
    config: SchemaConfig | None = None,
) -> DdlOutcome:
    """CREATE TABLE; `new_id` (a fresh uuid1 from the caller) is used unless `WITH ID` is given
    (as `table_id` or as an `id` option)."""
    config = config or SchemaConfig()
    options = options or {}
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    validate_table_name(name)
    if name_taken_by_table_or_view(ks, name):
        if if_not_exists:
            return NOOP
        raise AlreadyExists(
            f'Cannot add already existing table "{name}" to keyspace "{keyspace}"', keyspace, name
        )
    cols = build_columns(catalog, keyspace, columns, partition_key, clustering_key, clustering_order)
    check_placeable(ks.definition, config.cluster)  # its tablets get RF replicas now, or never
    if compact_storage:
        _check_compact(cols, config)
    table_options = apply_options(TableOptions(), options)
    chosen_id = claim_table_id(catalog, keyspace, name, options, new_id, table_id)
    table = TableDef(keyspace, name, chosen_id, cols, table_options, is_compact_storage=compact_storage)
    check_table_options(table, ks)
    mutations: list[Mutation] = [PutTable(table)]
    events = [SchemaChangeEvent(Change.CREATED, Target.TABLE, keyspace, name)]
    log = log_for(table, None)
    if log is not None:  # the log is created in the same command as its base
        mutations.append(PutTable(log))
        events.append(SchemaChangeEvent(Change.CREATED, Target.TABLE, keyspace, log.name))
    return DdlOutcome(tuple(mutations), tuple(events))


def drop_table(catalog: Catalog, keyspace: str, name: str, if_exists: bool = False) -> DdlOutcome:
    ks = catalog.keyspace(keyspace)
    if ks is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(f"Keyspace {keyspace} does not exist")
    ensure_user_modifiable(keyspace)
    if name in ks.views:
        raise InvalidRequest("Cannot use DROP TABLE on Materialized View")
    if name not in ks.tables:
        if if_exists:
            return NOOP
        raise ConfigurationError(f"Cannot drop non existing table '{name}' in keyspace '{keyspace}'.")
    views = ks.views_of(name)
    if views:
        names = ", ".join(f"{keyspace}.{v.name}" for v in views)
        raise InvalidRequest(f"Cannot drop table when materialized views still depend on it ({names})")
    if ks.tables[name].is_cdc_log:
        raise InvalidRequest(
            f"Cannot drop CDC log table {keyspace}.{name}: it is dropped with its base table"
        )
    mutations: list[Mutation] = [DropTable(keyspace, name)]
    events = [SchemaChangeEvent(Change.DROPPED, Target.TABLE, keyspace, name)]
    log = ks.tables.get(name + CDC_LOG_SUFFIX)
    if log is not None and log.is_cdc_log:
        mutations.append(DropTable(keyspace, log.name))
        events.append(SchemaChangeEvent(Change.DROPPED, Target.TABLE, keyspace, log.name))
    return DdlOutcome(tuple(mutations), tuple(events))
