"""CREATE / ALTER / DROP MATERIALIZED VIEW decisions.

The executor passes the parsed SELECT as plain data: the selected columns (None for `*`), the
view's primary key, the columns restricted with IS NOT NULL, and the WHERE clause's CQL text
(kept verbatim for system_schema.views and DESCRIBE).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tabletdb.cql.errors import AlreadyExists, ConfigurationError, InvalidRequest
from tabletdb.cql.types import CqlType
from tabletdb.schema.ddl_common import (
    NOOP,
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    SchemaConfig,
    Target,
    check_rf_rack_valid,
    check_tablet_options,
    ensure_user_modifiable,
    name_taken_by_table_or_view,
    require_keyspace,
    validate_table_name,
)
from tabletdb.schema.ddl_table import check_key_column_type, claim_table_id, clustering_orders
from tabletdb.schema.model import Catalog, ColumnDef, ColumnKind, TableDef, ViewDef, order_columns
from tabletdb.schema.mutations import DropView, PutView
from tabletdb.schema.options import TableOptions, apply_options, table_id_option
from tabletdb.schema.rack_rules import check_placeable, views_warning


def _unknown(name: str) -> InvalidRequest:
    return InvalidRequest(f"Unknown column name detected in CREATE MATERIALIZED VIEW statement: {name}")


def _view_columns(
    base: TableDef,
    selected: Sequence[str] | None,
    partition_key: Sequence[str],
    clustering_key: Sequence[str],
    clustering_order: Sequence[tuple[str, str]],
    not_null: Sequence[str],
) -> tuple[ColumnDef, ...]:
    key = [*partition_key, *clustering_key]
    if not partition_key:
        raise InvalidRequest("No PRIMARY KEY specifed for view (exactly one required)")
    for name in [*(selected or ()), *key]:
        if base.column(name) is None:
            raise _unknown(name)
    if len(set(key)) != len(key):
        raise InvalidRequest("Duplicate column in materialized view primary key")
    base_key = {c.name for c in base.primary_key}
    missing = [c.name for c in base.primary_key if c.name not in key]
    if missing:
        raise InvalidRequest(
            "Cannot create Materialized View without primary key columns from base "
            f"{base.name} ({', '.join(missing)})"
        )
    extra = [n for n in key if n not in base_key]
    if len(extra) > 1:
        raise InvalidRequest(
            "Cannot include more than one non-primary key column in materialized view primary key "
            f"(got {', '.join(extra)})"
        )
    for name in extra:
        if name not in not_null:
            raise InvalidRequest(f"Primary key column '{name}' is required to be filtered by 'IS NOT NULL'")
    for name in key:
        column = base.column(name)
        assert column is not None
        if column.kind is ColumnKind.STATIC:
            raise InvalidRequest(f"Cannot use static column {name} in PRIMARY KEY of materialized view")
        check_key_column_type(name, column.type)
    orders = clustering_orders(clustering_key, clustering_order)
    result = [ColumnDef(n, _type(base, n), ColumnKind.PARTITION_KEY, i) for i, n in enumerate(partition_key)]
    result += [
        ColumnDef(n, _type(base, n), ColumnKind.CLUSTERING, i, orders[i])
        for i, n in enumerate(clustering_key)
    ]
    chosen = [c.name for c in base.columns] if selected is None else list(selected)
    for name in chosen:
        column = base.column(name)
        assert column is not None
        if name in key:
            continue
        if column.kind is ColumnKind.STATIC:
            raise InvalidRequest(
                f"Unable to include static column '{name}' which would be included by Materialized View "
                "SELECT * statement"
                if selected is None
                else f"Cannot include static column '{name}' in a materialized view"
            )
        result.append(ColumnDef(name, column.type, ColumnKind.REGULAR))
    return order_columns(result)


def _type(base: TableDef, name: str) -> CqlType:
    column = base.column(name)
    assert column is not None
    return column.type


def create_view(
    catalog: Catalog,
    keyspace: str,
    name: str,
    base_table: str,
    selected: Sequence[str] | None,
    partition_key: Sequence[str],
    clustering_key: Sequence[str] = (),
    clustering_order: Sequence[tuple[str, str]] = (),
    *,
    where_clause: str,
    not_null: Sequence[str] = (),
    options: Mapping[str, object] | None = None,
    new_id: uuid.UUID,
    table_id: uuid.UUID | str | None = None,
    if_not_exists: bool = False,
    config: SchemaConfig | None = None,
) -> DdlOutcome:
    options = options or {}
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    validate_table_name(name)
    if base_table in ks.views:
        raise InvalidRequest("Materialized views cannot be created against other materialized views")
    base = ks.tables.get(base_table)
    if base is None:
        raise InvalidRequest(f"unconfigured table {base_table}")
    if base.is_counter:
        raise InvalidRequest("Materialized views are not supported on counter tables")
    if name_taken_by_table_or_view(ks, name):
        if if_not_exists:
            return NOOP
        raise AlreadyExists(
            f'Cannot add already existing table "{name}" to keyspace "{keyspace}"', keyspace, name
        )
    config = config or SchemaConfig()
    check_placeable(ks.definition, config.cluster)
    why = f"Cannot create materialized view {keyspace}.{name}"
    check_rf_rack_valid(ks.definition, config, why, views=True)
    columns = _view_columns(base, selected, partition_key, clustering_key, clustering_order, not_null)
    view_options = apply_options(TableOptions(), options, for_view=True)
    view_id = claim_table_id(catalog, keyspace, name, options, new_id, table_id)
    table = TableDef(keyspace, name, view_id, columns, view_options)
    check_tablet_options(ks.definition, view_options.tablets)
    view = ViewDef(table, base.id, base.name, where_clause, selected is None)
    event = SchemaChangeEvent(Change.CREATED, Target.TABLE, keyspace, name)
    return DdlOutcome((PutView(view),), (event,), views_warning(ks.definition))


def alter_view(catalog: Catalog, keyspace: str, name: str, options: Mapping[str, object]) -> DdlOutcome:
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    if name in ks.tables:
        raise InvalidRequest("Cannot use ALTER MATERIALIZED VIEW on Table")
    view = ks.views.get(name)
    if view is None:
        raise InvalidRequest(f"unconfigured table {name}")
    if table_id_option(options) is not None:
        raise InvalidRequest("Cannot alter table id.")
    new_options = apply_options(view.table.options, options, for_view=True)
    check_tablet_options(ks.definition, new_options.tablets if "tablets" in options else None)
    new_view = replace(view, table=replace(view.table, options=new_options))
    return DdlOutcome(
        (PutView(new_view),), (SchemaChangeEvent(Change.UPDATED, Target.TABLE, keyspace, name),)
    )


def drop_view(catalog: Catalog, keyspace: str, name: str, if_exists: bool = False) -> DdlOutcome:
    ks = catalog.keyspace(keyspace)
    if ks is None:
        if if_exists:
            return NOOP
        raise InvalidRequest(f"Keyspace {keyspace} does not exist")
    ensure_user_modifiable(keyspace)
    if name in ks.tables:
        raise InvalidRequest("Cannot use DROP MATERIALIZED VIEW on Table")
    if name not in ks.views:
        if if_exists:
            return NOOP
        raise ConfigurationError(
            f"Cannot drop non existing materialized view '{name}' in keyspace '{keyspace}'."
        )
    return DdlOutcome(
        (DropView(keyspace, name),), (SchemaChangeEvent(Change.DROPPED, Target.TABLE, keyspace, name),)
    )
