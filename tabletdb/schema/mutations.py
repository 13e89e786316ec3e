"""Catalog mutations: the replicated form of a schema change, and their deterministic apply.

DDL decision functions (validation, needing the current catalog) produce these; group0 logs
them and every node applies them in order. Apply never validates and never consults clocks or
randomness, so all replicas end with equal catalogs. Each mutation touches one keyspace entry,
so its cost does not grow with the number of other keyspaces' objects.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import (
    AggregateDef,
    Catalog,
    FunctionDef,
    KeyspaceDef,
    KeyspaceSchema,
    TableDef,
    UserTypeDef,
    ViewDef,
)


@dataclass(frozen=True)
class PutKeyspace:
    """Create a keyspace or replace its definition (its tables, types... are kept)."""

    keyspace: KeyspaceDef


@dataclass(frozen=True)
class DropKeyspace:
    name: str


@dataclass(frozen=True)
class PutTable:
    table: TableDef


@dataclass(frozen=True)
class DropTable:
    keyspace: str
    name: str


@dataclass(frozen=True)
class PutView:
    view: ViewDef


@dataclass(frozen=True)
class DropView:
    keyspace: str
    name: str


@dataclass(frozen=True)
class PutType:
    type: UserTypeDef


@dataclass(frozen=True)
class DropType:
    keyspace: str
    name: str


@dataclass(frozen=True)
class PutFunction:
    function: FunctionDef


@dataclass(frozen=True)
class DropFunction:
    keyspace: str
    name: str
    argument_types: tuple[str, ...]  # CQL type strings, as in the function's signature


@dataclass(frozen=True)
class PutAggregate:
    aggregate: AggregateDef


@dataclass(frozen=True)
class DropAggregate:
    keyspace: str
    name: str
    argument_types: tuple[str, ...]


Mutation = (
    PutKeyspace
    | DropKeyspace
    | PutTable
    | DropTable
    | PutView
    | DropView
    | PutType
    | DropType
    | PutFunction
    | DropFunction
    | PutAggregate
    | DropAggregate
)


class CatalogApplyError(Exception):
    """A mutation does not fit the catalog (e.g. a table in a missing keyspace): a bug upstream."""


def apply_mutations(catalog: Catalog, mutations: Iterable[Mutation], new_version: uuid.UUID) -> Catalog:
    """Apply mutations in order and stamp the result with `new_version`."""
    for mutation in mutations:
        catalog = _apply_one(catalog, mutation)
    return replace(catalog, version=new_version)


def _keyspace(catalog: Catalog, name: str, mutation: Mutation) -> KeyspaceSchema:
    ks = catalog.keyspaces.get(name)
    if ks is None:
        raise CatalogApplyError(f"{type(mutation).__name__}: keyspace {name!r} does not exist")
    return ks


def _with_keyspace(
    catalog: Catalog, ks: KeyspaceSchema, ids: FrozenMap[uuid.UUID, tuple[str, str]]
) -> Catalog:
    return replace(catalog, keyspaces=catalog.keyspaces.set(ks.name, ks), ids=ids)


def _apply_one(catalog: Catalog, m: Mutation) -> Catalog:
    ids = catalog.ids
    if isinstance(m, PutKeyspace):
        old = catalog.keyspaces.get(m.keyspace.name)
        ks = KeyspaceSchema(m.keyspace) if old is None else replace(old, definition=m.keyspace)
        return _with_keyspace(catalog, ks, ids)
    if isinstance(m, DropKeyspace):
        old = catalog.keyspaces.get(m.name)
        if old is None:
            return catalog
        for table in old.tables.values():
            ids = _without_index_ids(ids.remove(table.id), table)
        for view in old.views.values():
            ids = ids.remove(view.table.id)
        return replace(catalog, keyspaces=catalog.keyspaces.remove(m.name), ids=ids)
    if isinstance(m, PutTable):
        ks = _keyspace(catalog, m.table.keyspace, m)
        previous = ks.tables.get(m.table.name)
        if previous is not None and previous.id != m.table.id:
            ids = ids.remove(previous.id)
        if previous is not None:
            ids = _without_index_ids(ids, previous)
        ids = _with_index_ids(ids.set(m.table.id, (m.table.keyspace, m.table.name)), m.table)
        return _with_keyspace(catalog, replace(ks, tables=ks.tables.set(m.table.name, m.table)), ids)
    if isinstance(m, DropTable):
        ks = _keyspace(catalog, m.keyspace, m)
        dropped = ks.tables.get(m.name)
        if dropped is None:
            return catalog
        ids = _without_index_ids(ids.remove(dropped.id), dropped)
        return _with_keyspace(catalog, replace(ks, tables=ks.tables.remove(m.name)), ids)
    if isinstance(m, PutView):
        ks = _keyspace(catalog, m.view.keyspace, m)
        previous_view = ks.views.get(m.view.name)
        if previous_view is not None and previous_view.table.id != m.view.table.id:
            ids = ids.remove(previous_view.table.id)
        ids = ids.set(m.view.table.id, (m.view.keyspace, m.view.name))
        return _with_keyspace(catalog, replace(ks, views=ks.views.set(m.view.name, m.view)), ids)
    if isinstance(m, DropView):
        ks = _keyspace(catalog, m.keyspace, m)
        dropped_view = ks.views.get(m.name)
        if dropped_view is None:
            return catalog
        views = ks.views.remove(m.name)
        return _with_keyspace(catalog, replace(ks, views=views), ids.remove(dropped_view.table.id))
    if isinstance(m, PutType):
        ks = _keyspace(catalog, m.type.keyspace, m)
        return _with_keyspace(catalog, replace(ks, types=ks.types.set(m.type.name, m.type)), ids)
    if isinstance(m, DropType):
        ks = _keyspace(catalog, m.keyspace, m)
        return _with_keyspace(catalog, replace(ks, types=ks.types.remove(m.name)), ids)
    if isinstance(m, PutFunction):
        ks = _keyspace(catalog, m.function.keyspace, m)
        functions = ks.functions.set(m.function.signature, m.function)
        return _with_keyspace(catalog, replace(ks, functions=functions), ids)
    if isinstance(m, DropFunction):
        ks = _keyspace(catalog, m.keyspace, m)
        functions = ks.functions.remove((m.name, m.argument_types))
        return _with_keyspace(catalog, replace(ks, functions=functions), ids)
    if isinstance(m, PutAggregate):
        ks = _keyspace(catalog, m.aggregate.keyspace, m)
        aggregates = ks.aggregates.set(m.aggregate.signature, m.aggregate)
        return _with_keyspace(catalog, replace(ks, aggregates=aggregates), ids)
    if isinstance(m, DropAggregate):
        ks = _keyspace(catalog, m.keyspace, m)
        aggregates = ks.aggregates.remove((m.name, m.argument_types))
        return _with_keyspace(catalog, replace(ks, aggregates=aggregates), ids)
    raise CatalogApplyError(f"unknown catalog mutation {m!r}")


def _index_ids(table: TableDef) -> list[tuple[uuid.UUID, str]]:
    return [(i.table_id, f"{i.name}_index") for i in table.indexes if i.table_id is not None]


def _with_index_ids(
    ids: FrozenMap[uuid.UUID, tuple[str, str]], table: TableDef
) -> FrozenMap[uuid.UUID, tuple[str, str]]:
    """Index entries tables are stored like tables, so their ids are taken (and their files
    removed when the id goes) like a table's."""
    for table_id, name in _index_ids(table):
        ids = ids.set(table_id, (table.keyspace, name))
    return ids


def _without_index_ids(
    ids: FrozenMap[uuid.UUID, tuple[str, str]], table: TableDef
) -> FrozenMap[uuid.UUID, tuple[str, str]]:
    for table_id, _ in _index_ids(table):
        if table_id in ids:
            ids = ids.remove(table_id)
    return ids
