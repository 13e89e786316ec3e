"""CQL statement objects (import them from `tabletdb.cql.ast`).

Each statement lists its fields explicitly; no parser trees leak out. Every statement exposes
`bind_markers`: the markers of the whole statement ordered by index, which is what PREPARE
reports and EXECUTE binds against.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tabletdb.cql.ast_terms import (
    NO_ATTRIBUTES,
    NO_PROPERTIES,
    Attributes,
    BindMarker,
    ColumnDef,
    ElementRef,
    FieldRef,
    Ordering,
    Properties,
    QualifiedName,
    Relation,
    Selector,
    Term,
)
from tabletdb.cql.types import CqlType


def _collect_markers(node: Any, out: list[BindMarker]) -> None:
    if isinstance(node, BindMarker):
        out.append(node)
    elif isinstance(node, tuple):
        for item in node:
            _collect_markers(item, out)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type | CqlType):
        for f in dataclasses.fields(node):
            _collect_markers(getattr(node, f.name), out)


class Statement:
    """Base of all statements."""

    @cached_property
    def bind_markers(self) -> tuple[BindMarker, ...]:
        """All bind markers, by index (computed once from the fields; statements are immutable)."""
        found: list[BindMarker] = []
        _collect_markers(self, found)
        return tuple(sorted(found, key=lambda m: m.index))


# ------------------------------------------------------------------------------------ queries


@dataclass(frozen=True)
class UseStatement(Statement):
    keyspace: str


@dataclass(frozen=True)
class SelectStatement(Statement):
    """`selectors` is None for `SELECT *`. `timeout` comes from `USING TIMEOUT`,
    `service_level` from ScyllaDB's `USING SERVICE LEVEL sl` (its timeout applies)."""

    table: QualifiedName
    selectors: tuple[Selector, ...] | None
    where: tuple[Relation, ...] = ()
    distinct: bool = False
    json: bool = False
    group_by: tuple[str, ...] = ()
    order_by: tuple[Ordering, ...] = ()
    per_partition_limit: Term | None = None
    limit: Term | None = None
    allow_filtering: bool = False
    bypass_cache: bool = False
    timeout: Term | None = None
    service_level: str | None = None


@dataclass(frozen=True)
class InsertStatement(Statement):
    """`INSERT ... (cols) VALUES (terms)` or, when `json` is set, `INSERT ... JSON term`
    (columns/values empty; `json_default_unset` from `DEFAULT UNSET`, the default being NULL)."""

    table: QualifiedName
    columns: tuple[str, ...]
    values: tuple[Term, ...]
    json: Term | None = None
    json_default_unset: bool = False
    if_not_exists: bool = False
    attributes: Attributes = NO_ATTRIBUTES


@dataclass(frozen=True)
class SetColumn:
    """`c = term`."""

    column: str
    value: Term


@dataclass(frozen=True)
class SetElement:
    """`m['k'] = v`, `l[2] = v`."""

    column: str
    key: Term
    value: Term


@dataclass(frozen=True)
class SetField:
    """`u.f = v`."""

    column: str
    field: str
    value: Term


@dataclass(frozen=True)
class AddToColumn:
    """`c = c + term` or `c += term` (counter increment, append, set/map union)."""

    column: str
    value: Term


@dataclass(frozen=True)
class SubtractFromColumn:
    """`c = c - term` or `c -= term` (counter decrement, element removal)."""

    column: str
    value: Term


@dataclass(frozen=True)
class PrependToColumn:
    """`l = term + l` (list prepend)."""

    column: str
    value: Term


Assignment = SetColumn | SetElement | SetField | AddToColumn | SubtractFromColumn | PrependToColumn


@dataclass(frozen=True)
class UpdateStatement(Statement):
    """`conditions` are the IF relations; `if_exists` is `IF EXISTS` (never both)."""

    table: QualifiedName
    assignments: tuple[Assignment, ...]
    where: tuple[Relation, ...]
    attributes: Attributes = NO_ATTRIBUTES
    conditions: tuple[Relation, ...] = ()
    if_exists: bool = False


@dataclass(frozen=True)
class DeleteColumn:
    column: str


DeleteTarget = DeleteColumn | ElementRef | FieldRef


@dataclass(frozen=True)
class DeleteStatement(Statement):
    """`targets` empty means the whole row(s)."""

    table: QualifiedName
    targets: tuple[DeleteTarget, ...]
    where: tuple[Relation, ...]
    attributes: Attributes = NO_ATTRIBUTES
    conditions: tuple[Relation, ...] = ()
    if_exists: bool = False


ModificationStatement = InsertStatement | UpdateStatement | DeleteStatement


@dataclass(frozen=True)
class BatchStatement(Statement):
    """`kind` is 'LOGGED', 'UNLOGGED' or 'COUNTER'. Bind markers are numbered across the batch."""

    kind: str
    statements: tuple[ModificationStatement, ...]
    attributes: Attributes = NO_ATTRIBUTES


@dataclass(frozen=True)
class TruncateStatement(Statement):
    table: QualifiedName
    timeout: Term | None = None


# ---------------------------------------------------------------------------- schema changes


@dataclass(frozen=True)
class CreateKeyspace(Statement):
    name: str
    options: Properties
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterKeyspace(Statement):
    name: str
    options: Properties


@dataclass(frozen=True)
class DropKeyspace(Statement):
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class CreateTable(Statement):
    """Columns in written order. `table_id` is the uuid text of `WITH ID = ...` (kept out of
    `options`), as are CLUSTERING ORDER BY and COMPACT STORAGE."""

    name: QualifiedName
    columns: tuple[ColumnDef, ...]
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    clustering_order: tuple[Ordering, ...] = ()
    compact_storage: bool = False
    table_id: str | None = None
    options: Properties = NO_PROPERTIES
    if_not_exists: bool = False


@dataclass(frozen=True)
class AddColumns:
    columns: tuple[ColumnDef, ...]


@dataclass(frozen=True)
class DropColumns:
    """`timestamp` from `DROP col USING TIMESTAMP n` (restoring dropped-column history); a bind
    marker for `USING TIMESTAMP ?`, which the processor binds before the schema decision."""

    columns: tuple[str, ...]
    timestamp: int | BindMarker | None = None


@dataclass(frozen=True)
class AlterColumnType:
    column: str
    type: CqlType


@dataclass(frozen=True)
class RenameColumns:
    renames: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AlterOptions:
    """`ALTER TABLE/MATERIALIZED VIEW ... WITH ...`; `table_id` is refused later if set."""

    options: Properties
    clustering_order: tuple[Ordering, ...] = ()
    compact_storage: bool = False
    table_id: str | None = None


AlterTableAction = AddColumns | DropColumns | AlterColumnType | RenameColumns | AlterOptions


@dataclass(frozen=True)
class AlterTable(Statement):
    name: QualifiedName
    action: AlterTableAction


@dataclass(frozen=True)
class DropTable(Statement):
    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class CreateType(Statement):
    name: QualifiedName
    fields: tuple[tuple[str, CqlType], ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class AddField:
    field: str
    type: CqlType


@dataclass(frozen=True)
class RenameFields:
    renames: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AlterFieldType:
    field: str
    type: CqlType


@dataclass(frozen=True)
class AlterType(Statement):
    name: QualifiedName
    action: AddField | RenameFields | AlterFieldType


@dataclass(frozen=True)
class DropType(Statement):
    name: QualifiedName
    if_exists: bool = False


INDEX_TARGET_KINDS = frozenset({"simple", "keys", "values", "entries", "full"})


@dataclass(frozen=True)
class IndexTarget:
    """`col` (kind 'simple'), `keys(m)`, `values(c)`, `entries(m)`, `full(c)`."""

    column: str
    kind: str = "simple"


@dataclass(frozen=True)
class CreateIndex(Statement):
    """`partition_columns` non-empty for a local index `((p1, p2), c)`; `custom_class` from
    `CREATE CUSTOM INDEX ... USING 'class'`; `options` from `WITH options = {...}` etc."""

    name: str | None
    table: QualifiedName
    targets: tuple[IndexTarget, ...]
    partition_columns: tuple[str, ...] = ()
    custom: bool = False
    custom_class: str | None = None
    options: Properties = NO_PROPERTIES
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropIndex(Statement):
    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class CreateMaterializedView(Statement):
    name: QualifiedName
    base: QualifiedName
    selectors: tuple[Selector, ...] | None
    where: tuple[Relation, ...]
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    clustering_order: tuple[Ordering, ...] = ()
    table_id: str | None = None
    options: Properties = NO_PROPERTIES
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterMaterializedView(Statement):
    name: QualifiedName
    options: Properties


@dataclass(frozen=True)
class DropMaterializedView(Statement):
    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class CreateFunction(Statement):
    name: QualifiedName
    arguments: tuple[tuple[str, CqlType], ...]
    return_type: CqlType
    language: str
    body: str
    called_on_null_input: bool
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropFunction(Statement):
    """`argument_types` None: no signature given (drops the only overload)."""

    name: QualifiedName
    argument_types: tuple[CqlType, ...] | None = None
    if_exists: bool = False


@dataclass(frozen=True)
class CreateAggregate(Statement):
    name: QualifiedName
    argument_types: tuple[CqlType, ...]
    state_function: str
    state_type: CqlType
    final_function: str | None = None
    reduce_function: str | None = None
    initial_condition: Term | None = None
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropAggregate(Statement):
    name: QualifiedName
    argument_types: tuple[CqlType, ...] | None = None
    if_exists: bool = False


__all__ = [
    "AddColumns",
    "AddField",
    "AddToColumn",
    "AlterColumnType",
    "AlterFieldType",
    "AlterKeyspace",
    "AlterMaterializedView",
    "AlterOptions",
    "AlterTable",
    "AlterTableAction",
    "AlterType",
    "Assignment",
    "BatchStatement",
    "CreateAggregate",
    "CreateFunction",
    "CreateIndex",
    "CreateKeyspace",
    "CreateMaterializedView",
    "CreateTable",
    "CreateType",
    "DeleteColumn",
    "DeleteStatement",
    "DeleteTarget",
    "DropAggregate",
    "DropColumns",
    "DropFunction",
    "DropIndex",
    "DropKeyspace",
    "DropMaterializedView",
    "DropTable",
    "DropType",
    "INDEX_TARGET_KINDS",
    "IndexTarget",
    "InsertStatement",
    "ModificationStatement",
    "PrependToColumn",
    "RenameColumns",
    "RenameFields",
    "SelectStatement",
    "SetColumn",
    "SetElement",
    "SetField",
    "Statement",
    "SubtractFromColumn",
    "TruncateStatement",
    "UpdateStatement",
    "UseStatement",
]
