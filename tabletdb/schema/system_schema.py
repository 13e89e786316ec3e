"""Rows of the `system_schema` tables, rendered from a Catalog.

Nothing is stored twice: these rows are computed from the catalog on demand. Drivers refresh
one keyspace or one table after each schema change, so every renderer can be narrowed to a
keyspace and an object name without walking the rest of the catalog.

Values follow tabletdb.cql.codec conventions: maps as key-sorted pair tuples, sets as sorted
tuples, lists as tuples, timestamps as int milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tabletdb.schema.model import Catalog, KeyspaceSchema, Replication, TableDef, ViewDef
from tabletdb.schema.system_schema_defs import KEYSPACE, TABLES, legacy_table_id, system_schema_keyspace

__all__ = ["KEYSPACE", "TABLES", "Row", "legacy_table_id", "rows", "system_schema_keyspace"]

Row = dict[str, Any]


def _replication_rows(
    rep: Replication,
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...] | None]:
    flat = {"class": rep.strategy_class}
    v2 = {"class": rep.strategy_class}
    has_racks = False
    for dc, value in rep.options:
        if isinstance(value, tuple):
            has_racks = True
            flat[dc] = str(len(value))
            v2.update({f"{dc}:{i}": rack for i, rack in enumerate(value)})
        else:
            flat[dc] = value
            v2[dc] = value
    return tuple(sorted(flat.items())), (tuple(sorted(v2.items())) if has_racks else None)


def _keyspace_rows(ks: KeyspaceSchema, _name: str | None) -> Iterator[Row]:
    replication, replication_v2 = _replication_rows(ks.definition.replication)
    yield {
        "keyspace_name": ks.name,
        "durable_writes": ks.definition.durable_writes,
        "next_replication": None,
        "replication": replication,
        "replication_v2": replication_v2,
    }


def _scylla_keyspace_rows(ks: KeyspaceSchema, _name: str | None) -> Iterator[Row]:
    d = ks.definition
    if not d.uses_tablets and d.storage_type is None:
        return
    initial = (d.tablets.initial or 0) if d.tablets is not None and d.tablets.enabled else None
    yield {
        "keyspace_name": ks.name,
        "consistency": None,
        "initial_tablets": initial,
        "storage_options": d.storage_options if d.storage_type is not None else None,
        "storage_type": d.storage_type,
    }


def _option_values(table: TableDef) -> Row:
    o = table.options
    return {
        "bloom_filter_fp_chance": o.bloom_filter_fp_chance,
        "caching": o.caching,
        "comment": o.comment,
        "compaction": o.compaction,
        "compression": o.compression,
        "crc_check_chance": o.crc_check_chance,
        "dclocal_read_repair_chance": 0.0,
        "default_time_to_live": o.default_time_to_live,
        "extensions": (),
        "gc_grace_seconds": o.gc_grace_seconds,
        "id": table.id,
        "max_index_interval": o.max_index_interval,
        "memtable_flush_period_in_ms": o.memtable_flush_period_in_ms,
        "min_index_interval": o.min_index_interval,
        "read_repair_chance": 0.0,
        "speculative_retry": o.speculative_retry,
    }


def _selected_tables(ks: KeyspaceSchema, name: str | None) -> list[TableDef]:
    if name is not None:
        table = ks.tables.get(name)
        return [] if table is None else [table]
    return [ks.tables[n] for n in sorted(ks.tables)]


def _selected_views(ks: KeyspaceSchema, name: str | None) -> list[ViewDef]:
    if name is not None:
        view = ks.views.get(name)
        return [] if view is None else [view]
    return [ks.views[n] for n in sorted(ks.views)]


def _tables_and_views(ks: KeyspaceSchema, name: str | None) -> list[TableDef]:
    both = _selected_tables(ks, name) + [v.table for v in _selected_views(ks, name)]
    return sorted(both, key=lambda t: t.name)


def _table_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for table in _selected_tables(ks, name):
        row: Row = {"keyspace_name": ks.name, "table_name": table.name, **_option_values(table)}
        row["flags"] = tuple(sorted(table.flags))
        yield row


def _scylla_table_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for table in _tables_and_views(ks, name):
        yield {
            "keyspace_name": ks.name,
            "table_name": table.name,
            "cdc": None,
            "committed_by_group0": True,
            "in_memory": False,
            "large_data_guardrails_enabled": None,
            "partitioner": table.partitioner,
            "storage_engine": None,
            "tablets": table.options.tablets,
            "version": None,
        }


def _column_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for table in _tables_and_views(ks, name):
        for column in sorted(table.columns, key=lambda c: c.name):
            yield {
                "keyspace_name": ks.name,
                "table_name": table.name,
                "column_name": column.name,
                "clustering_order": column.clustering_order.value,
                "column_name_bytes": column.name.encode(),
                "kind": column.kind.value,
                "position": column.position,
                "type": column.type.cql(),
            }


def _dropped_column_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for table in _selected_tables(ks, name):
        for column, dropped in table.dropped_columns:
            yield {
                "keyspace_name": ks.name,
                "table_name": table.name,
                "column_name": column,
                "dropped_time": dropped.timestamp // 1000,
                "type": dropped.type.cql(),
            }


def _view_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for view in _selected_views(ks, name):
        yield {
            "keyspace_name": ks.name,
            "view_name": view.name,
            "base_table_id": view.base_table_id,
            "base_table_name": view.base_table_name,
            "include_all_columns": view.include_all_columns,
            "where_clause": view.where_clause,
            **_option_values(view.table),
        }


def _index_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for table in _selected_tables(ks, name):
        for index in table.indexes:
            yield {
                "keyspace_name": ks.name,
                "table_name": table.name,
                "index_name": index.name,
                "kind": index.kind.value,
                "options": index.options,
            }


def _type_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    names = sorted(ks.types) if name is None else [n for n in (name,) if n in ks.types]
    for type_name in names:
        udt = ks.types[type_name]
        yield {
            "keyspace_name": ks.name,
            "type_name": type_name,
            "field_names": udt.field_names,
            "field_types": tuple(t.cql() for t in udt.field_types),
        }


def _function_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for key in sorted(k for k in ks.functions if name is None or k[0] == name):
        f = ks.functions[key]
        yield {
            "keyspace_name": ks.name,
            "function_name": f.name,
            "argument_types": key[1],
            "argument_names": f.argument_names,
            "body": f.body,
            "called_on_null_input": f.called_on_null_input,
            "language": f.language,
            "return_type": f.return_type.cql(),
        }


def _aggregate_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for key in sorted(k for k in ks.aggregates if name is None or k[0] == name):
        a = ks.aggregates[key]
        yield {
            "keyspace_name": ks.name,
            "aggregate_name": a.name,
            "argument_types": key[1],
            "final_func": a.final_func,
            "initcond": a.initcond,
            "return_type": a.return_type.cql(),
            "state_func": a.state_func,
            "state_type": a.state_type.cql(),
        }


def _scylla_aggregate_rows(ks: KeyspaceSchema, name: str | None) -> Iterator[Row]:
    for key in sorted(k for k in ks.aggregates if name is None or k[0] == name):
        a = ks.aggregates[key]
        yield {
            "keyspace_name": ks.name,
            "aggregate_name": a.name,
            "argument_types": key[1],
            "reduce_func": a.reduce_func,
            "state_type": a.state_type.cql(),
        }


def _no_rows(_ks: KeyspaceSchema, _name: str | None) -> Iterator[Row]:
    return iter(())


_RENDERERS: dict[str, Callable[[KeyspaceSchema, str | None], Iterator[Row]]] = {
    "keyspaces": _keyspace_rows,
    "scylla_keyspaces": _scylla_keyspace_rows,
    "tables": _table_rows,
    "scylla_tables": _scylla_table_rows,
    "columns": _column_rows,
    "view_virtual_columns": _no_rows,
    "computed_columns": _no_rows,
    "dropped_columns": _dropped_column_rows,
    "triggers": _no_rows,
    "views": _view_rows,
    "indexes": _index_rows,
    "types": _type_rows,
    "functions": _function_rows,
    "aggregates": _aggregate_rows,
    "scylla_aggregates": _scylla_aggregate_rows,
}


def rows(
    catalog: Catalog, table_name: str, keyspace: str | None = None, name: str | None = None
) -> list[Row]:
    """Rows of system_schema.<table_name>, optionally only for one keyspace and one object.

    `name` narrows to the first clustering column (table, view, type, function or aggregate
    name); it needs `keyspace`. Rows come in (keyspace_name, clustering key) order.
    """
    renderer = _RENDERERS.get(table_name)
    if renderer is None:
        raise KeyError(f"system_schema has no table {table_name!r}")
    if name is not None and keyspace is None:
        raise ValueError("narrowing system_schema rows by name needs a keyspace")
    if keyspace is not None:
        ks = catalog.keyspace(keyspace)
        selected: Iterable[KeyspaceSchema] = () if ks is None else (ks,)
    else:
        selected = (catalog.keyspaces[k] for k in sorted(catalog.keyspaces))
    result: list[Row] = []
    for ks in selected:
        result.extend(renderer(ks, name))
    return result
