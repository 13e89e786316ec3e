"""CREATE / ALTER / DROP TYPE decisions.

Columns store resolved UDTs (fields inlined), so changing a type rewrites every type, table and
view that uses it, in the same outcome, and announces each of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tabletdb.cql.errors import AlreadyExists, InvalidRequest
from tabletdb.cql.nesting import check_type_nesting
from tabletdb.cql.types import NATIVE_TYPE_NAMES, CqlType
from tabletdb.schema.ddl_common import (
    NOOP,
    Change,
    DdlOutcome,
    SchemaChangeEvent,
    Target,
    ensure_user_modifiable,
    require_keyspace,
)
from tabletdb.schema.model import Catalog, ColumnDef, KeyspaceSchema, UserTypeDef
from tabletdb.schema.mutations import DropType, Mutation, PutTable, PutType, PutView
from tabletdb.schema.typeutil import references_udt, resolve_type, substitute_udt

_RESERVED_TYPE_NAMES = frozenset(NATIVE_TYPE_NAMES) | {
    "varchar",
    "byte",
    "complex",
    "enum",
    "interval",
    "macaddr",
    "bitstring",
}


def _field_type(catalog: Catalog, keyspace: str, type_name: str, t: CqlType) -> CqlType:
    resolved = resolve_type(t, keyspace, catalog.user_type)
    if references_udt(resolved, keyspace, type_name):
        raise InvalidRequest(f"Type {keyspace}.{type_name} cannot refer to itself")
    if resolved.is_counter:
        raise InvalidRequest("A user type cannot contain counters")
    if resolved.is_multi_cell and not resolved.is_collection:
        raise InvalidRequest("A user type cannot contain non-frozen UDTs")
    return resolved


def create_type(
    catalog: Catalog,
    keyspace: str,
    name: str,
    fields: Sequence[tuple[str, CqlType]],
    if_not_exists: bool = False,
) -> DdlOutcome:
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    if name.lower() in _RESERVED_TYPE_NAMES:
        raise InvalidRequest(f'"{name}" is not a valid name for a user type: reserved type name')
    if name in ks.types:
        if if_not_exists:
            return NOOP
        raise AlreadyExists(f"A user type of name {keyspace}.{name} already exists", keyspace, name)
    names: list[str] = []
    for field_name, _ in fields:
        if field_name in names:
            raise InvalidRequest(f"Duplicate field name {field_name} in type {name}")
        names.append(field_name)
    if not names:
        raise InvalidRequest(f"A user type must have at least one field: {keyspace}.{name}")
    types = tuple(_field_type(catalog, keyspace, name, t) for _, t in fields)
    udt = UserTypeDef(keyspace, name, tuple(names), types)
    check_type_nesting(udt.as_type(), f"Type {keyspace}.{name}")
    return DdlOutcome((PutType(udt),), (SchemaChangeEvent(Change.CREATED, Target.TYPE, keyspace, name),))


def _require_type(catalog: Catalog, keyspace: str, name: str) -> tuple[KeyspaceSchema, UserTypeDef]:
    ks = require_keyspace(catalog, keyspace)
    ensure_user_modifiable(keyspace)
    udt = ks.types.get(name)
    if udt is None:
        raise InvalidRequest(f"No user type named {keyspace}.{name} exists.")
    return ks, udt


def _propagate(ks: KeyspaceSchema, new: UserTypeDef) -> DdlOutcome:
    """The new type plus every type/table/view using it, rewritten with the new fields.

    A field added deep inside makes every type and column that uses the type deeper too, so
    each rewritten one is checked against the nesting limit again."""
    check_type_nesting(new.as_type(), f"Type {new.keyspace}.{new.name}")
    mutations: list[Mutation] = [PutType(new)]
    events = [SchemaChangeEvent(Change.UPDATED, Target.TYPE, new.keyspace, new.name)]
    for other in sorted(ks.types.values(), key=lambda u: u.name):
        if other.name != new.name and any(
            references_udt(t, new.keyspace, new.name) for t in other.field_types
        ):
            changed = replace(other, field_types=tuple(substitute_udt(t, new) for t in other.field_types))
            check_type_nesting(changed.as_type(), f"Type {other.keyspace}.{other.name}")
            mutations.append(PutType(changed))
            events.append(SchemaChangeEvent(Change.UPDATED, Target.TYPE, new.keyspace, other.name))
    for table in sorted(ks.tables.values(), key=lambda t: t.name):
        if any(references_udt(c.type, new.keyspace, new.name) for c in table.columns):
            columns = tuple(replace(c, type=substitute_udt(c.type, new)) for c in table.columns)
            _check_columns(columns, f"{new.keyspace}.{table.name}")
            mutations.append(PutTable(replace(table, columns=columns)))
            events.append(SchemaChangeEvent(Change.UPDATED, Target.TABLE, new.keyspace, table.name))
    for view in sorted(ks.views.values(), key=lambda v: v.name):
        if any(references_udt(c.type, new.keyspace, new.name) for c in view.table.columns):
            columns = tuple(replace(c, type=substitute_udt(c.type, new)) for c in view.table.columns)
            _check_columns(columns, f"{new.keyspace}.{view.name}")
            mutations.append(PutView(replace(view, table=replace(view.table, columns=columns))))
            events.append(SchemaChangeEvent(Change.UPDATED, Target.TABLE, new.keyspace, view.name))
    return DdlOutcome(tuple(mutations), tuple(events))


def _check_columns(columns: tuple[ColumnDef, ...], table: str) -> None:
    for column in columns:
        check_type_nesting(column.type, f"Column {column.name} of {table}")


def alter_type_add(catalog: Catalog, keyspace: str, name: str, field: str, field_type: CqlType) -> DdlOutcome:
    ks, udt = _require_type(catalog, keyspace, name)
    if field in udt.field_names:
        raise InvalidRequest(
            f"Cannot add new field {field} to type {keyspace}.{name}: a field of the same name already exists"
        )
    resolved = _field_type(catalog, keyspace, name, field_type)
    new = replace(udt, field_names=(*udt.field_names, field), field_types=(*udt.field_types, resolved))
    return _propagate(ks, new)


def alter_type_rename(
    catalog: Catalog, keyspace: str, name: str, renames: Sequence[tuple[str, str]]
) -> DdlOutcome:
    ks, udt = _require_type(catalog, keyspace, name)
    names = list(udt.field_names)
    for old, new_name in renames:
        if old not in names:
            raise InvalidRequest(f"Unknown field {old} in type {keyspace}.{name}")
        if new_name in names:
            raise InvalidRequest(f"Duplicate field name {new_name} in type {keyspace}.{name}")
        names[names.index(old)] = new_name
    return _propagate(ks, replace(udt, field_names=tuple(names)))


def drop_type(catalog: Catalog, keyspace: str, name: str, if_exists: bool = False) -> DdlOutcome:
    ks = catalog.keyspace(keyspace)
    if ks is None or name not in ks.types:
        if if_exists:
            return NOOP
        if ks is None:
            raise InvalidRequest(f"Keyspace {keyspace} does not exist")
        raise InvalidRequest(f"No user type named {keyspace}.{name} exists.")
    ensure_user_modifiable(keyspace)
    _check_unused(ks, name)
    return DdlOutcome(
        (DropType(keyspace, name),), (SchemaChangeEvent(Change.DROPPED, Target.TYPE, keyspace, name),)
    )


def _check_unused(ks: KeyspaceSchema, name: str) -> None:
    what = f"Cannot drop user type {ks.name}.{name} as it is still used by"
    for other in sorted(ks.types.values(), key=lambda u: u.name):
        if other.name != name and any(references_udt(t, ks.name, name) for t in other.field_types):
            raise InvalidRequest(f"{what} user type {ks.name}.{other.name}")
    for table in sorted(ks.tables.values(), key=lambda t: t.name):
        used = [c.type for c in table.columns] + [d.type for _, d in table.dropped_columns]
        if any(references_udt(t, ks.name, name) for t in used):
            raise InvalidRequest(f"{what} table {ks.name}.{table.name}")
    for view in sorted(ks.views.values(), key=lambda v: v.name):
        if any(references_udt(c.type, ks.name, name) for c in view.table.columns):
            raise InvalidRequest(f"{what} materialized view {ks.name}.{view.name}")
    for function in (ks.functions[k] for k in sorted(ks.functions)):
        if any(references_udt(t, ks.name, name) for t in (*function.argument_types, function.return_type)):
            raise InvalidRequest(f"{what} function {ks.name}.{function.name}")
    for aggregate in (ks.aggregates[k] for k in sorted(ks.aggregates)):
        if any(references_udt(t, ks.name, name) for t in (*aggregate.argument_types, aggregate.state_type)):
            raise InvalidRequest(f"{what} aggregate {ks.name}.{aggregate.name}")


def alter_type_alter_field(catalog: Catalog, keyspace: str, name: str, field: str) -> DdlOutcome:
    """ALTER TYPE ... ALTER f TYPE t: ScyllaDB refuses it (stored values would no longer decode)."""
    _, udt = _require_type(catalog, keyspace, name)
    if field not in udt.field_names:
        raise InvalidRequest(f"Unknown field {field} in type {keyspace}.{name}")
    raise InvalidRequest("Altering of types is not allowed")
