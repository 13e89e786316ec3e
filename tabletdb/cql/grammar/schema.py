"""Grammar callbacks for schema statements: keyspaces, tables, types, indexes, views,
functions and aggregates (see parse_terms for the conventions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lark import Token

from tabletdb.cql import ast
from tabletdb.cql import types as t
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.grammar.errors import fail
from tabletdb.cql.grammar.statements import StatementCallbacks
from tabletdb.cql.grammar.terms import present, unquote_string


@dataclass(frozen=True)
class TableOptions:
    """The WITH clause of CREATE/ALTER TABLE and views, split into its special parts."""

    properties: ast.Properties
    clustering_order: tuple[ast.Ordering, ...] = ()
    compact_storage: bool = False
    table_id: str | None = None
    id_given: bool = False
    """`ID = ...` was written, even as `ID = null` (which ALTER refuses like any other id)."""


NO_TABLE_OPTIONS = TableOptions(ast.Properties())


def build_properties(items: tuple[tuple[str, ast.Term], ...]) -> ast.Properties:
    seen: set[str] = set()
    for name, _ in items:
        if name in seen:
            fail(f"Multiple definition for property {name}")
        seen.add(name)
    return ast.Properties(items)


def table_id_of(value: ast.Term) -> str | None:
    """`ID = <uuid>` (ScyllaDB prints it bare; a quoted uuid is accepted too); `ID = null` is
    accepted, as ScyllaDB's grammar does, and means no id was given (one is generated)."""
    if isinstance(value, ast.Null):
        return None
    if isinstance(value, ast.Literal) and value.kind in ("uuid", "string"):
        return value.text
    fail(f"table ID must be a uuid, got {value}")


def split_primary_key(
    elements: tuple[Any, ...],
) -> tuple[tuple[ast.ColumnDef, ...], tuple[str, ...], tuple[str, ...]]:
    """Columns and the (only) primary key of a CREATE TABLE's element list."""
    columns: list[ast.ColumnDef] = []
    keys: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for element in elements:
        if element[0] == "column":
            columns.append(element[1])
            if element[2]:
                keys.append(((element[1].name,), ()))
        else:
            keys.append((element[1], element[2]))
    if not keys:
        raise InvalidRequest("No PRIMARY KEY specifed (exactly one required)")
    if len(keys) > 1:
        raise InvalidRequest("Multiple PRIMARY KEYs specifed (exactly one required)")
    return tuple(columns), keys[0][0], keys[0][1]


class SchemaCallbacks(StatementCallbacks):
    # ----------------------------------------------------------------------- keyspaces

    def property(self, name: str, value: ast.Term) -> tuple[str, ast.Term]:
        return (name, value)

    def properties(self, *items: tuple[str, ast.Term]) -> ast.Properties:
        return build_properties(items)

    def create_keyspace(
        self, if_not_exists: bool | None, name: str, options: ast.Properties | None
    ) -> ast.CreateKeyspace:
        """``WITH`` is optional, as in ScyllaDB: no properties mean the default replication."""
        return ast.CreateKeyspace(name, options or ast.NO_PROPERTIES, bool(if_not_exists))

    def alter_keyspace(self, name: str, options: ast.Properties) -> ast.AlterKeyspace:
        return ast.AlterKeyspace(name, options)

    def drop_keyspace(self, if_exists: bool | None, name: str) -> ast.DropKeyspace:
        return ast.DropKeyspace(name, bool(if_exists))

    # --------------------------------------------------------------------------- tables

    def static_flag(self) -> bool:
        return True

    def primary_key_flag(self) -> bool:
        return True

    def column_element(
        self, name: str, cql_type: t.CqlType, static: bool | None, primary_key: bool | None
    ) -> tuple[str, ast.ColumnDef, bool]:
        return ("column", ast.ColumnDef(name, cql_type, bool(static)), bool(primary_key))

    def primary_key_element(
        self, partition_key: tuple[str, ...], *clustering: str
    ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        return ("key", partition_key, clustering)

    def single_partition_key(self, name: str) -> tuple[str, ...]:
        return (name,)

    def composite_partition_key(self, names: tuple[str, ...]) -> tuple[str, ...]:
        return names

    def table_option(self, item: tuple[str, ast.Term]) -> tuple[str, ast.Term]:
        return item

    def clustering_order_option(self, *orderings: ast.Ordering) -> tuple[str, Any]:
        return ("\0clustering", orderings)

    def compact_storage_option(self) -> tuple[str, Any]:
        return ("\0compact", True)

    def table_options(self, *items: tuple[str, Any]) -> TableOptions:
        order: tuple[ast.Ordering, ...] = ()
        compact = False
        table_id: str | None = None
        id_given = False
        props: list[tuple[str, ast.Term]] = []
        for name, value in items:
            if name == "\0clustering":
                if order:
                    fail("Multiple definition for CLUSTERING ORDER BY")
                order = value
            elif name == "\0compact":
                compact = True
            elif name == "id":
                table_id, id_given = table_id_of(value), True
            else:
                props.append((name, value))
        return TableOptions(build_properties(tuple(props)), order, compact, table_id, id_given)

    def create_table(
        self, if_not_exists: bool | None, name: ast.QualifiedName, *rest: Any
    ) -> ast.CreateTable:
        options: TableOptions = rest[-1] or NO_TABLE_OPTIONS
        columns, partition_key, clustering_key = split_primary_key(rest[:-1])
        return ast.CreateTable(
            name=name,
            columns=columns,
            partition_key=partition_key,
            clustering_key=clustering_key,
            clustering_order=options.clustering_order,
            compact_storage=options.compact_storage,
            table_id=options.table_id,
            options=options.properties,
            if_not_exists=bool(if_not_exists),
        )

    def added_column(self, name: str, cql_type: t.CqlType, static: bool | None) -> ast.ColumnDef:
        return ast.ColumnDef(name, cql_type, bool(static))

    def add_columns(self, *columns: ast.ColumnDef) -> ast.AddColumns:
        return ast.AddColumns(columns)

    def drop_timestamp(self, value: Token | ast.BindMarker) -> int | ast.BindMarker:
        """A literal, or a bind marker (``USING TIMESTAMP ?``, bound when executed)."""
        return value if isinstance(value, ast.BindMarker) else int(value)

    def drop_columns(self, column: str, timestamp: int | ast.BindMarker | None) -> ast.DropColumns:
        return ast.DropColumns((column,), timestamp)

    def drop_column_list(
        self, columns: tuple[str, ...], timestamp: int | ast.BindMarker | None
    ) -> ast.DropColumns:
        return ast.DropColumns(columns, timestamp)

    def alter_column_type(self, column: str, cql_type: t.CqlType) -> ast.AlterColumnType:
        return ast.AlterColumnType(column, cql_type)

    def rename(self, old: str, new: str) -> tuple[str, str]:
        return (old, new)

    def rename_columns(self, *renames: tuple[str, str]) -> ast.RenameColumns:
        return ast.RenameColumns(renames)

    def alter_options(self, options: TableOptions) -> ast.AlterOptions:
        # `ID = null` is still an id to alter: the statement is refused as any other id is
        table_id = "null" if options.id_given and options.table_id is None else options.table_id
        return ast.AlterOptions(
            options.properties, options.clustering_order, options.compact_storage, table_id
        )

    def alter_table(self, name: ast.QualifiedName, action: ast.AlterTableAction) -> ast.AlterTable:
        return ast.AlterTable(name, action)

    def drop_table(self, if_exists: bool | None, name: ast.QualifiedName) -> ast.DropTable:
        return ast.DropTable(name, bool(if_exists))

    # ---------------------------------------------------------------------------- types

    def type_field(self, name: str, cql_type: t.CqlType) -> tuple[str, t.CqlType]:
        return (name, cql_type)

    def create_type(
        self, if_not_exists: bool | None, name: ast.QualifiedName, *fields: tuple[str, t.CqlType]
    ) -> ast.CreateType:
        return ast.CreateType(name, fields, bool(if_not_exists))

    def add_field(self, name: str, cql_type: t.CqlType) -> ast.AddField:
        return ast.AddField(name, cql_type)

    def rename_fields(self, *renames: tuple[str, str]) -> ast.RenameFields:
        return ast.RenameFields(renames)

    def alter_field_type(self, name: str, cql_type: t.CqlType) -> ast.AlterFieldType:
        return ast.AlterFieldType(name, cql_type)

    def alter_type(self, name: ast.QualifiedName, action: Any) -> ast.AlterType:
        return ast.AlterType(name, action)

    def drop_type(self, if_exists: bool | None, name: ast.QualifiedName) -> ast.DropType:
        return ast.DropType(name, bool(if_exists))

    # -------------------------------------------------------------------------- indexes

    def custom_flag(self) -> bool:
        return True

    def simple_target(self, column: str) -> ast.IndexTarget:
        return ast.IndexTarget(column, "simple")

    def index_kind(self, token: Token) -> str:
        return token.lower()

    def kind_target(self, kind: str, column: str) -> ast.IndexTarget:
        return ast.IndexTarget(column, kind)

    def global_targets(
        self, *targets: ast.IndexTarget
    ) -> tuple[tuple[str, ...], tuple[ast.IndexTarget, ...]]:
        return ((), targets)

    def local_targets(
        self, partition: tuple[str, ...], *targets: ast.IndexTarget
    ) -> tuple[tuple[str, ...], tuple[ast.IndexTarget, ...]]:
        return (partition, targets)

    def index_using(self, token: Token) -> str:
        return unquote_string(token)

    def index_with(self, options: ast.Properties) -> ast.Properties:
        return options

    def create_index(
        self,
        custom: bool | None,
        if_not_exists: bool | None,
        name: str | None,
        table: ast.QualifiedName,
        targets: tuple[tuple[str, ...], tuple[ast.IndexTarget, ...]] | None,
        custom_class: str | None,
        options: ast.Properties | None,
    ) -> ast.CreateIndex:
        if custom and custom_class is None:
            fail("CUSTOM index requires specifying the index class (USING '...')")
        if custom_class is not None and not custom:
            fail("Cannot specify index class (USING) for a non-CUSTOM index")
        partition, columns = targets or ((), ())
        return ast.CreateIndex(
            name=name,
            table=table,
            targets=columns,
            partition_columns=partition,
            custom=bool(custom),
            custom_class=custom_class,
            options=options or ast.Properties(),
            if_not_exists=bool(if_not_exists),
        )

    def drop_index(self, if_exists: bool | None, name: ast.QualifiedName) -> ast.DropIndex:
        return ast.DropIndex(name, bool(if_exists))

    # ---------------------------------------------------------------------------- views

    def create_view(self, if_not_exists: bool | None, name: ast.QualifiedName, *rest: Any) -> ast.Statement:
        selectors, base, where, partition_key = rest[:4]
        clustering: tuple[str, ...] = rest[4:-1]
        options: TableOptions = rest[-1] or NO_TABLE_OPTIONS
        if options.compact_storage:
            fail("Cannot use 'COMPACT STORAGE' when defining a materialized view")
        return ast.CreateMaterializedView(
            name=name,
            base=base,
            selectors=selectors,
            where=where,
            partition_key=partition_key,
            clustering_key=clustering,
            clustering_order=options.clustering_order,
            table_id=options.table_id,
            options=options.properties,
            if_not_exists=bool(if_not_exists),
        )

    def alter_view(self, name: ast.QualifiedName, options: TableOptions) -> ast.AlterMaterializedView:
        if options.clustering_order or options.compact_storage or options.id_given:
            fail("ALTER MATERIALIZED VIEW accepts only table properties")
        return ast.AlterMaterializedView(name, options.properties)

    def drop_view(self, if_exists: bool | None, name: ast.QualifiedName) -> ast.DropMaterializedView:
        return ast.DropMaterializedView(name, bool(if_exists))

    # ----------------------------------------------------------------- functions, aggregates

    def or_replace(self) -> bool:
        return True

    def function_arg(self, name: str, cql_type: t.CqlType) -> tuple[str, t.CqlType]:
        return (name, cql_type)

    def called_on_null(self) -> bool:
        return True

    def returns_null_on_null(self) -> bool:
        return False

    def create_function(
        self, or_replace: bool | None, if_not_exists: bool | None, name: ast.QualifiedName, *rest: Any
    ) -> ast.CreateFunction:
        arguments = present(rest[:-4])
        called, return_type, language, body = rest[-4:]
        if or_replace and if_not_exists:
            fail("Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives")
        return ast.CreateFunction(
            name, arguments, return_type, language, unquote_string(body), called, bool(or_replace),
            bool(if_not_exists),
        )  # fmt: skip

    def type_signature(self, *types: t.CqlType | None) -> tuple[t.CqlType, ...]:
        return present(types)

    def drop_function(
        self, if_exists: bool | None, name: ast.QualifiedName, signature: tuple[t.CqlType, ...] | None
    ) -> ast.DropFunction:
        return ast.DropFunction(name, signature, bool(if_exists))

    def reducefunc(self, name: str) -> str:
        return name

    def finalfunc(self, name: str) -> str:
        return name

    def initcond(self, value: ast.Term) -> ast.Term:
        return value

    def create_aggregate(
        self,
        or_replace: bool | None,
        if_not_exists: bool | None,
        name: ast.QualifiedName,
        signature: tuple[t.CqlType, ...],
        state_function: str,
        state_type: t.CqlType,
        reduce_function: str | None,
        final_function: str | None,
        initial_condition: ast.Term | None,
    ) -> ast.CreateAggregate:
        if or_replace and if_not_exists:
            fail("Cannot use both 'OR REPLACE' and 'IF NOT EXISTS' directives")
        return ast.CreateAggregate(
            name, signature, state_function, state_type, final_function, reduce_function,
            initial_condition, bool(or_replace), bool(if_not_exists),
        )  # fmt: skip

    def drop_aggregate(
        self, if_exists: bool | None, name: ast.QualifiedName, signature: tuple[t.CqlType, ...] | None
    ) -> ast.DropAggregate:
        return ast.DropAggregate(name, signature, bool(if_exists))
