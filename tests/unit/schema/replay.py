"""Test-only: run DESCRIBE output back through the real parser and the DDL decision functions.

This mimics the executor's AST -> decision-function translation for the statements DESCRIBE
emits, so tests can check the backup contract (describe, replay on an empty catalog, describe
again: identical text).
"""

from __future__ import annotations

from typing import Any

from tabletdb.cql import ast
from tabletdb.cql.ast_terms import ColumnRef, ListLiteral, Literal, MapLiteral, Properties, Relation
from tabletdb.cql.identifiers import quote_identifier
from tabletdb.cql.parser import parse
from tabletdb.schema.ddl_alter_table import alter_table_add, alter_table_drop, alter_table_options
from tabletdb.schema.ddl_common import DdlOutcome, SchemaConfig
from tabletdb.schema.ddl_functions import create_aggregate, create_function
from tabletdb.schema.ddl_keyspace import create_keyspace
from tabletdb.schema.ddl_table import create_table
from tabletdb.schema.ddl_types import create_type
from tabletdb.schema.ddl_views import create_view
from tabletdb.schema.indexes import create_index
from tabletdb.schema.model import Catalog

from .helpers import apply, next_id


def value(term: object) -> Any:
    if isinstance(term, Literal):
        if term.kind == "integer":
            return int(term.text)
        if term.kind == "float":
            return float(term.text)
        if term.kind == "boolean":
            return term.text.lower() == "true"
        return term.text
    if isinstance(term, MapLiteral):
        return {value(k): value(v) for k, v in term.pairs}
    if isinstance(term, ListLiteral):
        return [value(i) for i in term.items]
    raise TypeError(f"unsupported term {term!r}")


def options(props: Properties) -> dict[str, Any]:
    return {k: value(v) for k, v in props.items}


def _column(expr: object) -> str:
    assert isinstance(expr, ColumnRef), expr
    return expr.name


def _where(relations: tuple[Relation, ...]) -> tuple[str, list[str]]:
    parts, not_null = [], []
    for r in relations:
        assert isinstance(r.lhs, ColumnRef) and r.op == "IS NOT"
        parts.append(f"{quote_identifier(r.lhs.name)} IS NOT NULL")
        not_null.append(r.lhs.name)
    return " AND ".join(parts), not_null


def decide(catalog: Catalog, st: ast.Statement, config: SchemaConfig) -> DdlOutcome:
    if isinstance(st, ast.CreateKeyspace):
        o = options(st.options)
        return create_keyspace(
            catalog, st.name, o["replication"], o.get("durable_writes", True), o.get("tablets"), config=config
        )
    if isinstance(st, ast.CreateType):
        return create_type(catalog, st.name.keyspace or "", st.name.name, st.fields)
    if isinstance(st, ast.CreateFunction):
        names = [n for n, _ in st.arguments]
        types = [t for _, t in st.arguments]
        return create_function(
            catalog,
            st.name.keyspace or "",
            st.name.name,
            names,
            types,
            st.return_type,
            st.language,
            st.body,
            st.called_on_null_input,
        )
    if isinstance(st, ast.CreateAggregate):
        init = None if st.initial_condition is None else str(value(st.initial_condition))
        return create_aggregate(
            catalog,
            st.name.keyspace or "",
            st.name.name,
            st.argument_types,
            st.state_function,
            st.state_type,
            st.final_function,
            init,
            reduce_func=st.reduce_function,
        )
    if isinstance(st, ast.CreateTable):
        columns = [(c.name, c.type, c.static) for c in st.columns]
        order = [(o.column, "ASC" if o.ascending else "DESC") for o in st.clustering_order]
        return create_table(
            catalog,
            st.name.keyspace or "",
            st.name.name,
            columns,
            st.partition_key,
            st.clustering_key,
            order,
            options(st.options),
            new_id=next_id(),
            table_id=st.table_id,
            compact_storage=st.compact_storage,
            config=config,
        )
    if isinstance(st, ast.AlterTable):
        ks, name = st.name.keyspace or "", st.name.name
        if isinstance(st.action, ast.DropColumns):
            assert st.action.timestamp is not None
            return alter_table_drop(catalog, ks, name, st.action.columns, st.action.timestamp)
        if isinstance(st.action, ast.AddColumns):
            return alter_table_add(catalog, ks, name, [(c.name, c.type, c.static) for c in st.action.columns])
        if isinstance(st.action, ast.AlterOptions):  # DESCRIBE's ALTER of a CDC log's own options
            return alter_table_options(catalog, ks, name, options(st.action.options))
    if isinstance(st, ast.CreateIndex):
        (target,) = st.targets
        return create_index(
            catalog,
            st.table.keyspace or "",
            st.table.name,
            st.name,
            target.column,
            target.kind,
            local_partition_key=st.partition_columns or None,
            custom_class=st.custom_class,
            options={k: str(v) for k, v in options(st.options).get("options", {}).items()},
        )
    if isinstance(st, ast.CreateMaterializedView):
        where, not_null = _where(st.where)
        selected = None if st.selectors is None else [_column(sel.expr) for sel in st.selectors]
        order = [(o.column, "ASC" if o.ascending else "DESC") for o in st.clustering_order]
        return create_view(
            catalog,
            st.name.keyspace or "",
            st.name.name,
            st.base.name,
            selected,
            st.partition_key,
            st.clustering_key,
            order,
            where_clause=where,
            not_null=not_null,
            options=options(st.options),
            new_id=next_id(),
            table_id=st.table_id,
            config=config,
        )
    raise TypeError(f"replay does not handle {type(st).__name__}")


def replay(text: str, config: SchemaConfig, catalog: Catalog | None = None) -> Catalog:
    catalog = catalog or Catalog()
    for statement in parse(text):
        catalog = apply(catalog, decide(catalog, statement, config))
    return catalog
