"""Schema statements: from parsed AST to the schema layer's pure decision functions.

This module only translates; every rule lives in `tabletdb.schema`. A decision is a pure
function of (catalog, statement), which is what lets the metadata store retry it on a newer
catalog when a concurrent change won the race (DESIGN.md decision 3).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence

from tabletdb.cql import ast
from tabletdb.cql.errors import CqlSyntaxError, InvalidRequest
from tabletdb.cql.format import format_value
from tabletdb.cql.types import BIGINT, CqlType
from tabletdb.cql.unparse import cql_text
from tabletdb.cql.values import Value
from tabletdb.query.metadata_store import Decision
from tabletdb.schema import (
    ddl_alter_table,
    ddl_functions,
    ddl_keyspace,
    ddl_table,
    ddl_types,
    ddl_views,
    indexes,
)
from tabletdb.schema.ddl_common import DdlOutcome, SchemaConfig
from tabletdb.schema.model import Catalog
from tabletdb.schema.typeutil import resolve_type
from tabletdb.statements.properties import option_value, options_dict
from tabletdb.statements.terms import Bindings, term_value
from tabletdb.udf import lua
from tabletdb.udf.calls import unsupported_language

UDF_DISABLED = (
    "User defined functions are disabled. Set enable_user_defined_functions and "
    "experimental_features:udf to enable them"
)
"""ScyllaDB's refusal of CREATE/DROP FUNCTION and AGGREGATE while UDFs are off (its default)."""

DDL_STATEMENTS = (
    ast.CreateKeyspace,
    ast.AlterKeyspace,
    ast.DropKeyspace,
    ast.CreateTable,
    ast.AlterTable,
    ast.DropTable,
    ast.CreateType,
    ast.AlterType,
    ast.DropType,
    ast.CreateIndex,
    ast.DropIndex,
    ast.CreateMaterializedView,
    ast.AlterMaterializedView,
    ast.DropMaterializedView,
    ast.CreateFunction,
    ast.DropFunction,
    ast.CreateAggregate,
    ast.DropAggregate,
)


def bind_schema_statement(stmt: ast.Statement, values: Sequence[Value]) -> ast.Statement:
    """The statement with its bind markers replaced by the values bound to them: only
    ``ALTER TABLE ... DROP ... USING TIMESTAMP ?`` has one."""
    if not isinstance(stmt, ast.AlterTable) or not isinstance(stmt.action, ast.DropColumns):
        return stmt
    marker = stmt.action.timestamp
    if not isinstance(marker, ast.BindMarker):
        return stmt
    timestamp = Bindings(values).decoded(marker, BIGINT)
    if timestamp is None:
        raise InvalidRequest("Invalid null value of timestamp")
    if not isinstance(timestamp, int):  # unset: now, as when no timestamp is given
        timestamp = None
    return dataclasses.replace(stmt, action=dataclasses.replace(stmt.action, timestamp=timestamp))


def keyspace_of(name: ast.QualifiedName, session_keyspace: str | None) -> str:
    """The keyspace a name refers to, as Cassandra resolves it (explicit, else USE)."""
    if name.keyspace is not None:
        return name.keyspace
    if session_keyspace is None:
        raise InvalidRequest(
            "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"
        )
    return session_keyspace


def decision_for(
    stmt: ast.Statement,
    session_keyspace: str | None,
    config: SchemaConfig,
    new_id: Callable[[], uuid.UUID],
    now_micros: Callable[[], int],
) -> Decision:
    """A function of the catalog deciding `stmt`: mutations and events, or an error."""
    if isinstance(stmt, ast.CreateKeyspace | ast.AlterKeyspace | ast.DropKeyspace):
        return _keyspace_decision(stmt, config)
    if isinstance(stmt, ast.CreateTable):
        return _create_table(stmt, session_keyspace, config, new_id)
    if isinstance(stmt, ast.AlterTable):
        return _alter_table(stmt, session_keyspace, now_micros)
    if isinstance(stmt, ast.DropTable):
        ks = keyspace_of(stmt.name, session_keyspace)
        return lambda c: ddl_table.drop_table(c, ks, stmt.name.name, stmt.if_exists)
    if isinstance(stmt, ast.CreateType | ast.AlterType | ast.DropType):
        return _type_decision(stmt, session_keyspace)
    if isinstance(stmt, ast.CreateIndex | ast.DropIndex):
        return _index_decision(stmt, session_keyspace, new_id, config)
    if isinstance(stmt, ast.CreateMaterializedView | ast.AlterMaterializedView | ast.DropMaterializedView):
        return _view_decision(stmt, session_keyspace, new_id, config)
    if isinstance(stmt, ast.CreateFunction | ast.DropFunction | ast.CreateAggregate | ast.DropAggregate):
        if not config.user_defined_functions:
            raise InvalidRequest(UDF_DISABLED)
        return _function_decision(stmt, session_keyspace)
    raise TypeError(f"not a schema statement: {type(stmt).__name__}")


def _keyspace_decision(
    stmt: ast.CreateKeyspace | ast.AlterKeyspace | ast.DropKeyspace, config: SchemaConfig
) -> Decision:
    if isinstance(stmt, ast.DropKeyspace):
        return lambda c: ddl_keyspace.drop_keyspace(c, stmt.name, stmt.if_exists)
    opts = options_dict(stmt.options)
    replication = opts.pop("replication", None)
    durable = opts.pop("durable_writes", None)
    tablets = opts.pop("tablets", None)
    storage = opts.pop("storage", None)
    for unknown in opts:
        raise CqlSyntaxError(f"Unknown property '{unknown}'")
    if durable is not None and not isinstance(durable, bool):
        durable = str(durable).lower() == "true"
    if isinstance(stmt, ast.CreateKeyspace):
        return lambda c: ddl_keyspace.create_keyspace(
            c,
            stmt.name,
            {} if replication is None else replication,
            True if durable is None else durable,
            tablets,
            stmt.if_not_exists,
            config,
            storage,
        )
    return lambda c: ddl_keyspace.alter_keyspace(c, stmt.name, replication, durable, tablets, config)


def _create_table(
    stmt: ast.CreateTable, session_keyspace: str | None, config: SchemaConfig, new_id: Callable[[], uuid.UUID]
) -> Decision:
    ks = keyspace_of(stmt.name, session_keyspace)
    columns = [(c.name, c.type, c.static) for c in stmt.columns]
    order = [(o.column, "ASC" if o.ascending else "DESC") for o in stmt.clustering_order]
    options = options_dict(stmt.options)
    if stmt.table_id is not None:
        options["id"] = stmt.table_id
    table_id = new_id()
    return lambda c: ddl_table.create_table(
        c,
        ks,
        stmt.name.name,
        columns,
        stmt.partition_key,
        stmt.clustering_key,
        order,
        options,
        new_id=table_id,
        compact_storage=stmt.compact_storage,
        if_not_exists=stmt.if_not_exists,
        config=config,
    )


def _alter_table(
    stmt: ast.AlterTable, session_keyspace: str | None, now_micros: Callable[[], int]
) -> Decision:
    ks = keyspace_of(stmt.name, session_keyspace)
    name = stmt.name.name
    action = stmt.action
    if isinstance(action, ast.AddColumns):
        specs = [(c.name, c.type, c.static) for c in action.columns]
        return lambda c: ddl_alter_table.alter_table_add(c, ks, name, specs)
    if isinstance(action, ast.DropColumns):
        if isinstance(action.timestamp, ast.BindMarker):
            raise InvalidRequest(
                "USING TIMESTAMP ? needs its value bound (prepare and execute the statement)"
            )
        ts = action.timestamp if action.timestamp is not None else now_micros()
        return lambda c: ddl_alter_table.alter_table_drop(c, ks, name, action.columns, ts)
    if isinstance(action, ast.RenameColumns):
        return lambda c: ddl_alter_table.alter_table_rename(c, ks, name, action.renames)
    if isinstance(action, ast.AlterColumnType):
        return lambda c: ddl_alter_table.alter_table_alter_type(c, ks, name, action.column)
    if action.table_id is not None:
        raise InvalidRequest("Cannot alter table id")
    if action.compact_storage or action.clustering_order:
        raise InvalidRequest("Cannot alter CLUSTERING ORDER or COMPACT STORAGE of an existing table")
    opts = options_dict(action.options)
    return lambda c: ddl_alter_table.alter_table_options(c, ks, name, opts)


def _type_decision(
    stmt: ast.CreateType | ast.AlterType | ast.DropType, session_keyspace: str | None
) -> Decision:
    ks = keyspace_of(stmt.name, session_keyspace)
    name = stmt.name.name
    if isinstance(stmt, ast.CreateType):
        return lambda c: ddl_types.create_type(c, ks, name, stmt.fields, stmt.if_not_exists)
    if isinstance(stmt, ast.DropType):
        return lambda c: ddl_types.drop_type(c, ks, name, stmt.if_exists)
    action = stmt.action
    if isinstance(action, ast.AddField):
        return lambda c: ddl_types.alter_type_add(c, ks, name, action.field, action.type)
    if isinstance(action, ast.RenameFields):
        return lambda c: ddl_types.alter_type_rename(c, ks, name, action.renames)
    raise InvalidRequest(f"Altering the type of field {action.field} of a user type is not supported")


def _index_decision(
    stmt: ast.CreateIndex | ast.DropIndex,
    session_keyspace: str | None,
    new_id: Callable[[], uuid.UUID],
    config: SchemaConfig,
) -> Decision:
    if isinstance(stmt, ast.DropIndex):
        ks = keyspace_of(stmt.name, session_keyspace)
        return lambda c: indexes.drop_index(c, ks, stmt.name.name, stmt.if_exists)
    ks = keyspace_of(stmt.table, session_keyspace)
    if len(stmt.targets) != 1:
        raise InvalidRequest("Only one column can be indexed per CREATE INDEX statement")
    target = stmt.targets[0]
    raw = options_dict(stmt.options)
    index_options = raw.pop("options", None) or {}
    str_options = {str(k): str(v) for k, v in index_options.items()}
    local_pk = stmt.partition_columns or None
    custom_class = stmt.custom_class if stmt.custom else None
    entries_id = new_id()
    return lambda c: indexes.create_index(
        c,
        ks,
        stmt.table.name,
        stmt.name,
        target.column,
        target.kind,
        local_partition_key=local_pk,
        custom_class=custom_class,
        options=str_options,
        properties=raw,
        if_not_exists=stmt.if_not_exists,
        table_id=entries_id,
        config=config,
    )


def _view_decision(
    stmt: ast.CreateMaterializedView | ast.AlterMaterializedView | ast.DropMaterializedView,
    session_keyspace: str | None,
    new_id: Callable[[], uuid.UUID],
    config: SchemaConfig,
) -> Decision:
    ks = keyspace_of(stmt.name, session_keyspace)
    name = stmt.name.name
    if isinstance(stmt, ast.DropMaterializedView):
        return lambda c: ddl_views.drop_view(c, ks, name, stmt.if_exists)
    if isinstance(stmt, ast.AlterMaterializedView):
        opts = options_dict(stmt.options)
        return lambda c: ddl_views.alter_view(c, ks, name, opts)
    base_ks = keyspace_of(stmt.base, ks)
    if base_ks != ks:
        raise InvalidRequest("Cannot create a materialized view on a table in a different keyspace")
    selected = None if stmt.selectors is None else [_selected_column(s) for s in stmt.selectors]
    not_null, where_text = _view_where(stmt.where)
    order = [(o.column, "ASC" if o.ascending else "DESC") for o in stmt.clustering_order]
    options = options_dict(stmt.options)
    if stmt.table_id is not None:
        options["id"] = stmt.table_id
    view_id = new_id()
    return lambda c: ddl_views.create_view(
        c,
        ks,
        name,
        stmt.base.name,
        selected,
        stmt.partition_key,
        stmt.clustering_key,
        order,
        where_clause=where_text,
        not_null=not_null,
        options=options,
        new_id=view_id,
        if_not_exists=stmt.if_not_exists,
        config=config,
    )


def _selected_column(selector: ast.Selector) -> str:
    if isinstance(selector.expr, ast.ColumnRef) and selector.alias is None:
        return selector.expr.name
    raise InvalidRequest("Materialized views can only select plain columns")


def _view_where(where: tuple[ast.Relation, ...]) -> tuple[list[str], str]:
    """The `IS NOT NULL` columns and the WHERE text as ScyllaDB stores it."""
    from tabletdb.cql.identifiers import quote_identifier

    not_null: list[str] = []
    parts: list[str] = []
    for rel in where:
        if not isinstance(rel.lhs, ast.ColumnRef):
            raise InvalidRequest("Materialized view WHERE clauses only support restrictions on plain columns")
        col = rel.lhs.name
        if rel.op == "IS NOT":
            not_null.append(col)
            parts.append(f"{quote_identifier(col)} IS NOT null")
        else:
            parts.append(f"{quote_identifier(col)} {rel.op} {_term_text(rel.rhs)}")
    return not_null, " AND ".join(parts)


def _term_text(term: ast.Term | ast.InValues) -> str:
    from tabletdb.cql.identifiers import quote_string

    if isinstance(term, ast.Literal):
        return quote_string(term.text) if term.kind == "string" else term.text
    if isinstance(term, ast.InValues):
        return "(" + ", ".join(_term_text(t) for t in term.items) + ")"
    raise InvalidRequest("Materialized view WHERE clauses only support constants")


def _function_decision(
    stmt: ast.CreateFunction | ast.DropFunction | ast.CreateAggregate | ast.DropAggregate,
    session_keyspace: str | None,
) -> Decision:
    ks = keyspace_of(stmt.name, session_keyspace)
    name = stmt.name.name
    if isinstance(stmt, ast.CreateFunction):
        arg_names = [a for a, _ in stmt.arguments]
        arg_types = [t for _, t in stmt.arguments]
        refusal = unsupported_language(stmt.language)
        if refusal is not None:
            raise InvalidRequest(refusal)
        lua.check_compiles(stmt.body, arg_names)
        return lambda c: ddl_functions.create_function(
            c,
            ks,
            name,
            arg_names,
            arg_types,
            stmt.return_type,
            stmt.language,
            stmt.body,
            stmt.called_on_null_input,
            or_replace=stmt.or_replace,
            if_not_exists=stmt.if_not_exists,
        )
    if isinstance(stmt, ast.DropFunction):
        return lambda c: ddl_functions.drop_function(c, ks, name, stmt.argument_types, stmt.if_exists)
    if isinstance(stmt, ast.DropAggregate):
        return lambda c: ddl_functions.drop_aggregate(c, ks, name, stmt.argument_types, stmt.if_exists)
    if stmt.initial_condition is not None:
        _initcond_text(stmt.initial_condition)  # a constant, or refused before any lookup

    def create(c: Catalog) -> DdlOutcome:
        initcond = None
        if stmt.initial_condition is not None:
            initcond = _initcond(c, ks, stmt.state_type, stmt.initial_condition)
        return ddl_functions.create_aggregate(
            c,
            ks,
            name,
            stmt.argument_types,
            stmt.state_function,
            stmt.state_type,
            stmt.final_function,
            initcond,
            reduce_func=stmt.reduce_function,
            or_replace=stmt.or_replace,
            if_not_exists=stmt.if_not_exists,
        )

    return create


_CONSTANT_TERMS = (ast.Literal, ast.Null, ast.ListLiteral, ast.SetLiteral, ast.MapLiteral, ast.TupleLiteral)


def _initcond_text(term: ast.Term) -> str:
    """INITCOND as CQL text (how system_schema.aggregates stores it): a constant, collections and
    tuples of constants included."""
    if isinstance(term, ast.Literal) and term.kind == "string":
        from tabletdb.cql.identifiers import quote_string

        return quote_string(str(option_value(term, "INITCOND")))
    if isinstance(term, ast.Null):
        return "null"
    if isinstance(term, ast.Literal):
        return term.text
    if isinstance(term, _CONSTANT_TERMS):
        return cql_text(term)
    raise InvalidRequest("INITCOND must be a constant")


def _initcond(catalog: Catalog, keyspace: str, state_type: CqlType, term: ast.Term) -> str | None:
    """INITCOND as stored and described: the STYPE value it stands for, printed as ScyllaDB prints
    it (`(0, 0)`, `'abc'`); a value that is not of STYPE is refused here, as ScyllaDB refuses it."""
    if catalog.keyspace(keyspace) is None:
        return _initcond_text(term)  # the decision refuses the missing keyspace with its own message
    stype = resolve_type(state_type, keyspace, catalog.user_type)
    value = term_value(term, stype, "INITCOND", Bindings(()))
    return None if value is None else format_value(stype, value)
