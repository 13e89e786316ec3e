"""DESCRIBE text for schema objects, exactly in ScyllaDB's format (spec/describe.md).

DESCRIBE output is the schema backup: executed in order on an empty cluster it must recreate
the schema, table ids included (WITH INTERNALS). So objects come dependencies first, and
dropped-column history is replayed with `ALTER TABLE ... DROP ... USING TIMESTAMP`.
Roles, grants and service levels are described by their own packages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tabletdb.cql.format import format_float
from tabletdb.cql.identifiers import quote_identifier as q
from tabletdb.cql.identifiers import quote_string
from tabletdb.cql.types import CqlType, UserType
from tabletdb.schema.ddl_common import SYSTEM_KEYSPACES
from tabletdb.schema.index_targets import describe_target
from tabletdb.schema.model import (
    CDC_LOG_SUFFIX,
    AggregateDef,
    Catalog,
    ColumnDef,
    ColumnKind,
    FunctionDef,
    IndexDef,
    IndexKind,
    KeyspaceDef,
    KeyspaceSchema,
    TableDef,
    UserTypeDef,
    ViewDef,
)
from tabletdb.schema.options import TableOptions, speculative_retry_text
from tabletdb.schema.typeutil import children


@dataclass(frozen=True)
class DescribeRow:
    """One result row: names already quoted as identifiers where needed."""

    keyspace_name: str | None
    type: str
    name: str
    create_statement: str


def _map(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{quote_string(k)}: {quote_string(v)}" for k, v in sorted(pairs)) + "}"


def keyspace_statement(ks: KeyspaceDef) -> str:
    rep = [f"'class': {quote_string(ks.replication.strategy_class)}"]
    for dc, value in sorted(ks.replication.options):
        text = (
            "[" + ", ".join(quote_string(r) for r in value) + "]"
            if isinstance(value, tuple)
            else quote_string(value)
        )
        rep.append(f"{quote_string(dc)}: {text}")
    parts = [f"CREATE KEYSPACE {q(ks.name)} WITH replication = {{{', '.join(rep)}}}"]
    if ks.storage_type is not None:
        parts.append(f"storage = {_map((('type', ks.storage_type), *ks.storage_options))}")
    parts.append(f"durable_writes = {'true' if ks.durable_writes else 'false'}")
    if ks.tablets is not None:
        tablets = f"'enabled': {'true' if ks.tablets.enabled else 'false'}"
        if ks.tablets.initial is not None:
            tablets += f", 'initial': {ks.tablets.initial}"
        parts.append(f"tablets = {{{tablets}}}")
    elif ks.name not in SYSTEM_KEYSPACES:  # SimpleStrategy and other vnode-only keyspaces
        parts.append("tablets = {'enabled': false}")
    return " AND ".join(parts) + ";\n"


def type_statement(udt: UserTypeDef) -> str:
    fields = ",\n".join(f"    {q(n)} {t.cql()}" for n, t in zip(udt.field_names, udt.field_types))
    return f"CREATE TYPE {q(udt.keyspace)}.{q(udt.name)} (\n{fields}\n);\n"


def function_statement(f: FunctionDef) -> str:
    """As ScyllaDB prints it: the body on lines of its own between `$$`. Executing the text stores
    the body with those two line breaks, so they are not printed twice: the text a restored
    function describes as is the text it was restored from."""
    args = ", ".join(f"{q(n)} {t.cql()}" for n, t in zip(f.argument_names, f.argument_types))
    on_null = "CALLED ON NULL INPUT" if f.called_on_null_input else "RETURNS NULL ON NULL INPUT"
    body = f.body.removeprefix("\n").removesuffix("\n")
    return (
        f"CREATE FUNCTION {q(f.keyspace)}.{q(f.name)}({args})\n{on_null}\nRETURNS {f.return_type.cql()}\n"
        f"LANGUAGE {f.language}\nAS $$\n{body}\n$$;\n"
    )


def aggregate_statement(a: AggregateDef) -> str:
    lines = [
        f"CREATE AGGREGATE {q(a.keyspace)}.{q(a.name)}({', '.join(t.cql() for t in a.argument_types)})",
        f"SFUNC {q(a.state_func)}",
        f"STYPE {a.state_type.cql()}",
    ]
    if a.reduce_func is not None:
        lines.append(f"REDUCEFUNC {q(a.reduce_func)}")
    if a.final_func is not None:
        lines.append(f"FINALFUNC {q(a.final_func)}")
    if a.initcond is not None:
        lines.append(f"INITCOND {a.initcond}")
    return "\n".join(lines) + ";\n"


def _options(o: TableOptions, is_view: bool) -> list[str]:
    result = [
        f"bloom_filter_fp_chance = {format_float(o.bloom_filter_fp_chance)}",
        f"caching = {_map(o.caching)}",
        f"comment = {quote_string(o.comment)}",
        f"compaction = {_map(o.compaction)}",
        f"compression = {_map(o.compression)}",
        f"crc_check_chance = {format_float(o.crc_check_chance)}",
        f"default_time_to_live = {o.default_time_to_live}",
        f"gc_grace_seconds = {o.gc_grace_seconds}",
        f"max_index_interval = {o.max_index_interval}",
        f"memtable_flush_period_in_ms = {o.memtable_flush_period_in_ms}",
        f"min_index_interval = {o.min_index_interval}",
        f"speculative_retry = {quote_string(speculative_retry_text(o.speculative_retry))}",
    ]
    if o.tablets is not None:
        result.append(f"tablets = {_map(o.tablets)}")
    if o.cdc is not None:
        result.append(f"cdc = {_map(o.cdc)}")
    if o.paxos_grace_seconds is not None:
        result.append(f"paxos_grace_seconds = {o.paxos_grace_seconds}")
    if o.per_partition_rate_limit is not None:
        result.append(f"per_partition_rate_limit = {_map(o.per_partition_rate_limit)}")
    if o.scylla_tags is not None:
        result.append(f"scylla_tags = {_map(o.scylla_tags)}")
    result.append(f"tombstone_gc = {_map(o.tombstone_gc)}")
    if is_view and o.synchronous_updates is not None:
        result.append(f"synchronous_updates = {'true' if o.synchronous_updates else 'false'}")
    return result


def _primary_key(table: TableDef) -> str:
    pk = [q(c.name) for c in table.partition_key]
    head = pk[0] if len(pk) == 1 else "(" + ", ".join(pk) + ")"
    return "(" + ", ".join([head, *(q(c.name) for c in table.clustering_key)]) + ")"


def _with_clause(table: TableDef, with_internals: bool, is_view: bool) -> str:
    """The options after ``WITH``. With an ``ID``, the option after it starts at column 0
    (``WITH ID = x\nAND ...``): a quirk of ScyllaDB's printer, kept byte for byte."""
    clauses = []
    if table.clustering_key:
        orders = ", ".join(f"{q(c.name)} {c.clustering_order.value}" for c in table.clustering_key)
        clauses.append(f"CLUSTERING ORDER BY ({orders})")
    if table.is_compact_storage:
        clauses.append("COMPACT STORAGE")
    text = "\n    AND ".join(clauses + _options(table.options, is_view))
    return f"ID = {table.id}\nAND {text}" if with_internals else text


def _column_line(c: ColumnDef) -> str:
    return f"    {q(c.name)} {c.type.cql()}{' STATIC' if c.kind is ColumnKind.STATIC else ''},"


def table_statement(table: TableDef, with_internals: bool = False) -> str:
    readded = (
        {c.name for c in table.columns if table.dropped(c.name) is not None} if with_internals else set()
    )
    lines = [f"CREATE TABLE {q(table.keyspace)}.{q(table.name)} ("]
    lines += [_column_line(c) for c in table.columns if c.name not in readded]
    if with_internals:
        lines += [f"    {q(name)} {d.type.cql()}," for name, d in table.dropped_columns]
    lines.append(f"    PRIMARY KEY {_primary_key(table)}")
    text = "\n".join(lines) + "\n) WITH " + _with_clause(table, with_internals, False) + ";\n"
    if with_internals:
        # A blank line, then each dropped column's DROP, followed by its ADD if it exists again
        # (ScyllaDB's layout; the row then ends with the last ";").
        target = f"{q(table.keyspace)}.{q(table.name)}"
        for name, d in table.dropped_columns:
            text += f"\nALTER TABLE {target} DROP {q(name)} USING TIMESTAMP {d.timestamp};"
            column = table.column(name)
            if column is not None:
                static = " STATIC" if column.kind is ColumnKind.STATIC else ""
                text += f"\nALTER TABLE {target} ADD {q(name)} {column.type.cql()}{static};"
    return text


def index_statement(keyspace: str, index: IndexDef, with_internals: bool = False) -> str:
    """CREATE INDEX. WITH INTERNALS adds `ID = <entries table id>` first (the index's own table,
    as ScyllaDB prints its backing view's id), so a restore keeps it; indexes with no entries
    table have no id to print."""
    target = describe_target(index.target)
    head = "CREATE CUSTOM INDEX" if index.kind is IndexKind.CUSTOM else "CREATE INDEX"
    text = f"{head} {q(index.name)} ON {q(keyspace)}.{q(index.table)}({target})"
    if index.custom_class is not None:
        text += f" USING {quote_string(index.custom_class)}"
        extra = [(k, v) for k, v in index.options if k not in ("target", "class_name")]
        if extra:
            text += f" WITH OPTIONS = {_map(extra)}"
    given = [f"ID = {index.table_id}"] if with_internals and index.table_id is not None else []
    if index.table_options is not None:
        # The properties CREATE INDEX ... WITH set: those that differ from a table's defaults.
        defaults = set(_options(TableOptions(), True))
        given += [o for o in _options(index.table_options, True) if o not in defaults]
    if given:
        text += " WITH " + "\n    AND ".join(given)
    return text + ";\n"


def view_statement(view: ViewDef, with_internals: bool = False) -> str:
    table = view.table
    selected = "*" if view.include_all_columns else ", ".join(q(c.name) for c in table.columns)
    return (
        f"CREATE MATERIALIZED VIEW {q(view.keyspace)}.{q(view.name)} AS\n"
        f"    SELECT {selected}\n"
        f"    FROM {q(view.keyspace)}.{q(view.base_table_name)}\n"
        f"    WHERE {view.where_clause}\n"
        f"    PRIMARY KEY {_primary_key(table)}\n"
        "    WITH " + _with_clause(table, with_internals, True) + ";\n"
    )


def types_in_dependency_order(ks: KeyspaceSchema) -> list[UserTypeDef]:
    """UDTs with every type after the types it uses; otherwise by name."""
    ordered: list[UserTypeDef] = []
    placed: set[str] = set()

    def visit(name: str) -> None:
        if name in placed or name not in ks.types:
            return
        placed.add(name)
        udt = ks.types[name]
        for dependency in sorted(_udt_names(udt.field_types, ks.name)):
            visit(dependency)
        ordered.append(udt)

    for name in sorted(ks.types):
        visit(name)
    return ordered


def _udt_names(types: Iterable[object], keyspace: str) -> set[str]:
    found: set[str] = set()
    stack = [t for t in types if isinstance(t, CqlType)]
    while stack:
        t = stack.pop()
        if isinstance(t, UserType) and t.keyspace == keyspace:
            found.add(t.name)
        stack.extend(children(t))
    return found


def cdc_log_alter_statement(log: TableDef) -> str:
    """The log table is created with its base; a restore only re-applies the log's own options."""
    options = "\n    AND ".join(_options(log.options, False))
    return f"ALTER TABLE {q(log.keyspace)}.{q(log.name)} WITH {options};\n"


def cdc_log_table_statement(log: TableDef) -> str:
    """DESC TABLE on a CDC log: its CREATE for information only, commented out."""
    return (
        "/* Do NOT execute this statement! It's only for informational purposes.\n"
        "   A CDC log table is created automatically when CDC is enabled on its base table,\n"
        "   and dropped with it.\n\n" + table_statement(log) + "*/\n"
    )


def table_rows(ks: KeyspaceSchema, table: TableDef, with_internals: bool = False) -> list[DescribeRow]:
    """DESC TABLE: the table, its indexes and views by name, then its CDC log's options."""
    kq = q(ks.name)
    if table.is_cdc_log:
        return [DescribeRow(kq, "table", q(table.name), cdc_log_table_statement(table))]
    result = [DescribeRow(kq, "table", q(table.name), table_statement(table, with_internals))]
    for index in sorted(table.indexes, key=lambda i: i.name):
        statement = index_statement(ks.name, index, with_internals)
        result.append(DescribeRow(kq, "index", q(index.name), statement))
    for view in ks.views_of(table.name):
        result.append(DescribeRow(kq, "view", q(view.name), view_statement(view, with_internals)))
    log = ks.tables.get(table.name + CDC_LOG_SUFFIX)
    if table.options.cdc_enabled and log is not None and log.is_cdc_log:
        result.append(DescribeRow(kq, "table", q(log.name), cdc_log_alter_statement(log)))
    return result


def keyspace_rows(ks: KeyspaceSchema, with_internals: bool = False) -> list[DescribeRow]:
    """DESC KEYSPACE: keyspace, UDTs, UDFs, UDAs, then tables with their indexes and views."""
    kq = q(ks.name)
    result = [DescribeRow(kq, "keyspace", kq, keyspace_statement(ks.definition))]
    result += [DescribeRow(kq, "type", q(u.name), type_statement(u)) for u in types_in_dependency_order(ks)]
    for key in sorted(ks.functions):
        result.append(DescribeRow(kq, "function", q(key[0]), function_statement(ks.functions[key])))
    for key in sorted(ks.aggregates):
        result.append(DescribeRow(kq, "aggregate", q(key[0]), aggregate_statement(ks.aggregates[key])))
    for name in sorted(ks.tables):
        if not ks.tables[name].is_cdc_log:  # described after its base table
            result += table_rows(ks, ks.tables[name], with_internals)
    return result


def schema_rows(catalog: Catalog, full: bool = False, with_internals: bool = False) -> list[DescribeRow]:
    """DESC [FULL] SCHEMA for the schema objects (system keyspaces only with FULL)."""
    result: list[DescribeRow] = []
    for name in sorted(catalog.keyspaces):
        if full or name not in SYSTEM_KEYSPACES:
            result += keyspace_rows(catalog.keyspaces[name], with_internals)
    return result


def listing_rows(catalog: Catalog, kind: str, keyspace: str | None = None) -> list[DescribeRow]:
    """DESC KEYSPACES / TABLES / TYPES / FUNCTIONS / AGGREGATES: (keyspace_name, type, name) rows.

    `keyspace` (the USEd keyspace) narrows every listing but KEYSPACES; `create_statement` is
    left empty since listings do not return it.
    """
    names = sorted(catalog.keyspaces) if keyspace is None or kind == "keyspaces" else [keyspace]
    result: list[DescribeRow] = []
    for ks_name in names:
        ks = catalog.keyspaces.get(ks_name)
        if ks is None:
            continue
        kq = q(ks_name)
        if kind == "keyspaces":
            result.append(DescribeRow(kq, "keyspace", kq, ""))
        elif kind == "tables":
            result += [
                DescribeRow(kq, "table", q(n), "") for n in sorted(ks.tables) if not ks.tables[n].is_cdc_log
            ]
        elif kind == "types":
            result += [DescribeRow(kq, "type", q(n), "") for n in sorted(ks.types)]
        elif kind == "functions":
            result += [DescribeRow(kq, "function", q(n), "") for n in sorted({k[0] for k in ks.functions})]
        elif kind == "aggregates":
            result += [DescribeRow(kq, "aggregate", q(n), "") for n in sorted({k[0] for k in ks.aggregates})]
        else:
            raise ValueError(f"unknown DESCRIBE listing {kind!r}")
    return result


def object_rows(
    catalog: Catalog, keyspace: str, name: str, with_internals: bool = False
) -> list[DescribeRow]:
    """The generic `DESC name` inside a keyspace: table/view, index, type, function, aggregate.

    Returns [] when nothing has that name (the caller reports the error with its own wording).
    """
    ks = catalog.keyspaces.get(keyspace)
    if ks is None:
        return []
    kq = q(keyspace)
    if name in ks.tables:
        return table_rows(ks, ks.tables[name], with_internals)
    if name in ks.views:
        return [DescribeRow(kq, "view", q(name), view_statement(ks.views[name], with_internals))]
    found = catalog.find_index(keyspace, name)
    if found is not None:
        return [DescribeRow(kq, "index", q(name), index_statement(keyspace, found[1], with_internals))]
    if name in ks.types:
        return [DescribeRow(kq, "type", q(name), type_statement(ks.types[name]))]
    functions = [ks.functions[k] for k in sorted(ks.functions) if k[0] == name]
    if functions:
        return [DescribeRow(kq, "function", q(name), function_statement(f)) for f in functions]
    aggregates = [ks.aggregates[k] for k in sorted(ks.aggregates) if k[0] == name]
    return [DescribeRow(kq, "aggregate", q(name), aggregate_statement(a)) for a in aggregates]
