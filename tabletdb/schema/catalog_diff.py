"""The SCHEMA_CHANGE events that take one catalog to another.

A node that catches up by installing a group0 snapshot skips the individual commands, and with
them their events; drivers connected to it would never refresh their metadata. Diffing the
catalog before and after the install recovers the events (ScyllaDB likewise announces what a
schema pull changed). Only changed keyspaces are walked, by identity first, so the cost follows
the size of the change on the persistent maps, not the size of the schema.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import TypeVar

from tabletdb.schema.ddl_common import Change, SchemaChangeEvent, Target
from tabletdb.schema.model import Catalog, KeyspaceSchema

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def catalog_events(old: Catalog, new: Catalog) -> tuple[SchemaChangeEvent, ...]:
    """Events for every keyspace, table, view, type, function and aggregate that differs."""
    events: list[SchemaChangeEvent] = []
    for name in sorted(set(old.keyspaces) | set(new.keyspaces)):
        before, after = old.keyspaces.get(name), new.keyspaces.get(name)
        if before is after:
            continue
        if after is None:
            events.append(SchemaChangeEvent(Change.DROPPED, Target.KEYSPACE, name))
            continue
        if before is None:
            events.append(SchemaChangeEvent(Change.CREATED, Target.KEYSPACE, name))
        elif before.definition != after.definition:
            events.append(SchemaChangeEvent(Change.UPDATED, Target.KEYSPACE, name))
        events += _keyspace_object_events(name, before, after)
    return tuple(events)


def _keyspace_object_events(
    keyspace: str, before: KeyspaceSchema | None, after: KeyspaceSchema
) -> list[SchemaChangeEvent]:
    events: list[SchemaChangeEvent] = []
    for target, old_map, new_map in (
        (Target.TYPE, before.types if before else {}, after.types),
        (Target.TABLE, before.tables if before else {}, after.tables),
        (Target.TABLE, before.views if before else {}, after.views),
    ):
        for change, key in _changes(old_map, new_map):
            events.append(SchemaChangeEvent(change, target, keyspace, str(key)))
    for target, old_fns, new_fns in (
        (Target.FUNCTION, before.functions if before else {}, after.functions),
        (Target.AGGREGATE, before.aggregates if before else {}, after.aggregates),
    ):
        for change, (fname, arg_types) in _changes(old_fns, new_fns):
            events.append(SchemaChangeEvent(change, target, keyspace, fname, tuple(arg_types)))
    return events


def _changes(old: Mapping[K, V], new: Mapping[K, V]) -> list[tuple[Change, K]]:
    result: list[tuple[Change, K]] = []
    for key in new:
        if key not in old:
            result.append((Change.CREATED, key))
        elif old[key] != new[key]:
            result.append((Change.UPDATED, key))
    result += [(Change.DROPPED, key) for key in old if key not in new]
    return result
