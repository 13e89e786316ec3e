"""ALTER TABLE decisions: ADD, DROP [USING TIMESTAMP], RENAME, ALTER TYPE and WITH options.

Views with `include_all_columns` follow their base table's added columns, so ADD may also
produce view updates; every changed table or view is announced as an UPDATED TABLE event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tabletdb.cql.errors import InvalidRequest
from tabletdb.schema.cdc_log import log_for, log_name
from tabletdb.schema.ddl_common import (
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    Target,
    ensure_user_modifiable,
    require_keyspace,
)
from tabletdb.schema.ddl_table import (
    STATIC_NEEDS_CLUSTERING,
    ColumnSpec,
    check_table_options,
    resolve_in,
)
from tabletdb.schema.index_targets import target_columns
from tabletdb.schema.model import (
    Catalog,
    ColumnDef,
    ColumnKind,
    DroppedColumn,
    TableDef,
    ViewDef,
    order_columns,
)
from tabletdb.schema.mutations import Mutation, PutTable, PutView
from tabletdb.schema.options import apply_options, table_id_option
from tabletdb.schema.typeutil import udts_as_tuples


def _base_table(catalog: Catalog, keyspace: str, name: str) -> TableDef:
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    if name in ks.views:
        raise InvalidRequest("Cannot use ALTER TABLE on Materialized View")
    table = ks.tables.get(name)
    if table is None:
        raise InvalidRequest(f"unconfigured table {name}")
    return table


def _columns_table(catalog: Catalog, keyspace: str, name: str) -> TableDef:
    """A table whose columns may change: CDC log tables follow their base and take options only."""
    table = _base_table(catalog, keyspace, name)
    if table.is_cdc_log:
        raise InvalidRequest(
            f"Cannot change the columns of CDC log table {keyspace}.{name}: only its options can be altered"
        )
    return table


def _updated(catalog: Catalog, table: TableDef, views: Sequence[ViewDef] = ()) -> DdlOutcome:
    """The changed table and views, and its CDC log rebuilt to match (created when CDC is
    switched on), all in one command."""
    mutations: list[Mutation] = [PutTable(table)]
    events = [SchemaChangeEvent(Change.UPDATED, Target.TABLE, table.keyspace, table.name)]
    ks = require_keyspace(catalog, table.keyspace)
    if not table.is_cdc_log:
        if table.options.cdc_enabled:
            check_table_options(table, ks)
        existing = ks.tables.get(log_name(table.name))
        log = log_for(table, existing)
        if log is not None and log != existing:
            created = existing is None or not existing.is_cdc_log
            mutations.append(PutTable(log))
            change = Change.CREATED if created else Change.UPDATED
            events.append(SchemaChangeEvent(change, Target.TABLE, log.keyspace, log.name))
    for view in views:
        mutations.append(PutView(view))
        events.append(SchemaChangeEvent(Change.UPDATED, Target.TABLE, view.keyspace, view.name))
    return DdlOutcome(tuple(mutations), tuple(events))


def alter_table_add(catalog: Catalog, keyspace: str, name: str, columns: Sequence[ColumnSpec]) -> DdlOutcome:
    table = _columns_table(catalog, keyspace, name)
    added: list[ColumnDef] = []
    for col_name, raw_type, is_static in columns:
        t = resolve_in(catalog, keyspace, raw_type)
        if table.column(col_name) is not None or any(c.name == col_name for c in added):
            raise InvalidRequest(
                f"Invalid column name {col_name} because it conflicts with an existing column"
            )
        if is_static:
            if table.is_compact_storage:
                raise InvalidRequest("Static columns are not allowed in COMPACT STORAGE tables")
            if not table.clustering_key:
                raise InvalidRequest(STATIC_NEEDS_CLUSTERING)
        if table.is_compact_storage:
            raise InvalidRequest(f"Cannot add new column {col_name} to a COMPACT STORAGE table")
        if t.is_counter and not table.is_counter:
            raise InvalidRequest(f"Cannot add a counter column ({col_name}) in a non counter column family")
        if table.is_counter and not t.is_counter:
            raise InvalidRequest(f"Cannot add a non counter column ({col_name}) in a counter column family")
        dropped = table.dropped(col_name)
        if dropped is not None and udts_as_tuples(t) != dropped.type:
            raise InvalidRequest(
                f"Cannot re-add previously dropped column '{col_name}' of type {t.cql()}, "
                f"incompatible with previous type {dropped.type.cql()}"
            )
        added.append(ColumnDef(col_name, t, ColumnKind.STATIC if is_static else ColumnKind.REGULAR))
    new_table = replace(table, columns=order_columns([*table.columns, *added]))
    ks = require_keyspace(catalog, keyspace)
    views = []
    for view in ks.views_of(name):
        if view.include_all_columns:
            view_cols = [*view.table.columns, *(replace(c, kind=ColumnKind.REGULAR) for c in added)]
            views.append(replace(view, table=replace(view.table, columns=order_columns(view_cols))))
    return _updated(catalog, new_table, views)


def alter_table_drop(
    catalog: Catalog, keyspace: str, name: str, columns: Sequence[str], timestamp: int
) -> DdlOutcome:
    """DROP columns, recording (type, timestamp) so data written before the drop stays invisible."""
    table = _columns_table(catalog, keyspace, name)
    ks = require_keyspace(catalog, keyspace)
    dropped = dict(table.dropped_columns)
    remaining = list(table.columns)
    for col_name in columns:
        column = table.column(col_name)
        if column is None or column not in remaining:
            raise InvalidRequest(f"Column {col_name} was not found in table {name}")
        if column.is_primary_key:
            raise InvalidRequest(f"Cannot drop PRIMARY KEY part {col_name}")
        if table.is_compact_storage:
            raise InvalidRequest("Cannot drop columns from a non-CQL3 table")
        dependent = [i.name for i in table.indexes if _index_uses(i.target, col_name)]
        if dependent:
            raise InvalidRequest(
                f"Cannot drop column {col_name} because it has dependent secondary indexes "
                f"({', '.join(dependent)})"
            )
        needed_by = next((v.name for v in ks.views_of(name) if v.table.column(col_name) is not None), None)
        if needed_by is not None:
            raise InvalidRequest(
                f"Cannot drop column {col_name} from base table {keyspace}.{name}: "
                f"materialized view {needed_by} needs this column"
            )
        previous = dropped.get(col_name)
        ts = timestamp if previous is None else max(previous.timestamp, timestamp)
        dropped[col_name] = DroppedColumn(udts_as_tuples(column.type), ts)
        remaining.remove(column)
    if not [c for c in remaining if not c.is_primary_key] and table.is_compact_storage:
        raise InvalidRequest("Cannot drop the last regular column of a COMPACT STORAGE table")
    new_table = replace(table, columns=tuple(remaining), dropped_columns=tuple(sorted(dropped.items())))
    return _updated(catalog, new_table)


def _index_uses(target: str, column: str) -> bool:
    """Whether an index target string (`c`, `keys(c)`, `(p1, p2), c`...) mentions the column."""
    return column in target_columns(target)


def alter_table_rename(
    catalog: Catalog, keyspace: str, name: str, renames: Sequence[tuple[str, str]]
) -> DdlOutcome:
    table = _columns_table(catalog, keyspace, name)
    ks = require_keyspace(catalog, keyspace)
    columns = {c.name: c for c in table.columns}
    for old, new in renames:
        column = columns.get(old)
        if column is None:
            raise InvalidRequest(f"Cannot rename unknown column {old} in table {name}")
        if not column.is_primary_key:
            raise InvalidRequest(f"Cannot rename non PRIMARY KEY part {old}")
        if new in columns:
            raise InvalidRequest(
                f"Cannot rename column {old} to {new} in table {name}; "
                "another column of that name already exist"
            )
        dependent = [i.name for i in table.indexes if _index_uses(i.target, old)]
        if dependent:
            raise InvalidRequest(
                f"Cannot rename column {old} because it has dependent secondary indexes "
                f"({', '.join(dependent)})"
            )
        if ks.views_of(name):
            raise InvalidRequest(
                f"Cannot rename column {old} of table {keyspace}.{name}: it has materialized views"
            )
        del columns[old]
        columns[new] = replace(column, name=new)
    return _updated(catalog, replace(table, columns=order_columns(list(columns.values()))))


def alter_table_alter_type(catalog: Catalog, keyspace: str, name: str, column: str) -> DdlOutcome:
    """ScyllaDB removed ALTER ... TYPE (type changes broke stored data); refuse it the same way."""
    table = _columns_table(catalog, keyspace, name)
    if table.column(column) is None:
        raise InvalidRequest(f"Column {column} was not found in table {name}")
    raise InvalidRequest("Altering of types is not allowed")


def alter_table_options(
    catalog: Catalog, keyspace: str, name: str, options: Mapping[str, object]
) -> DdlOutcome:
    table = _base_table(catalog, keyspace, name)
    if table_id_option(options) is not None:
        raise InvalidRequest("Cannot alter table id.")
    new_table = replace(table, options=apply_options(table.options, options))
    check_table_options(new_table, require_keyspace(catalog, keyspace))
    return _updated(catalog, new_table)
