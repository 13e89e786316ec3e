"""CDC log maps made before tablet maps could name a base, brought under their base (issue 16).

A log map made by an earlier version does not name its base (``TabletMap.base_table``), so it
was planned on its own and its tablets may sit elsewhere than the base's; a base replica then
writes log rows to a log tablet it does not hold. The group0 leader adopts such maps on its
idle turns (``node.group0_shell.cdc_log_maps``): while the tablets differ it moves one log
replica at a time onto the base tablet's replica (``tablets.colocation.adoption_move``); once
they are equal it commits a schema command that puts the base again, unchanged, and the planner
names the base in the log's map in that command (``named_log_changes``), deciding on the state
the command is decided on, so a migration that started meanwhile simply waits for a later turn.
From then on the log is planned with its base, like a new one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from tabletdb.group0.tablets_state import TabletChange
from tabletdb.schema.model import CDC_LOG_SUFFIX, Catalog, TableDef
from tabletdb.schema.mutations import Mutation, PutTable
from tabletdb.tablets.colocation import adoptable, follow_map
from tabletdb.tablets.tablet_map import TabletMap


@dataclass(frozen=True)
class UnnamedLog:
    """A base table and its CDC log whose map does not name it yet."""

    base: TableDef
    log: TableDef
    base_map: TabletMap
    log_map: TabletMap


def unnamed_logs(catalog: Catalog, maps: Mapping[uuid.UUID, TabletMap]) -> Iterator[UnnamedLog]:
    """Every CDC log of a tablets keyspace whose map does not name its base, in name order."""
    for ks_name in sorted(catalog.keyspaces):
        ks = catalog.keyspaces[ks_name]
        if not ks.definition.uses_tablets:
            continue
        for name in sorted(ks.tables):
            table = ks.tables[name]
            if not table.is_cdc_log:
                continue
            base = ks.tables.get(name.removesuffix(CDC_LOG_SUFFIX))
            log_map = maps.get(table.id)
            base_map = None if base is None else maps.get(base.id)
            if base is None or log_map is None or base_map is None or log_map.base_table is not None:
                continue
            yield UnnamedLog(base, table, base_map, log_map)


def named_log_changes(
    mutations: Sequence[Mutation], catalog: Catalog, maps: Mapping[uuid.UUID, TabletMap]
) -> tuple[TabletChange, ...]:
    """For each table a command puts whose CDC log map does not name it yet but already sits
    exactly on its tablets: the log's map naming it. Looks only at the command's own tables."""
    changes = []
    for mutation in mutations:
        if not isinstance(mutation, PutTable):
            continue
        base = mutation.table
        log = catalog.table(base.keyspace, base.name + CDC_LOG_SUFFIX)
        base_map = maps.get(base.id)
        log_map = None if log is None else maps.get(log.id)
        if log is None or base_map is None or log_map is None or not log.is_cdc_log:
            continue
        if adoptable(base_map, log_map):
            changes.append(TabletChange(log.id, follow_map(base_map, log.id)))
    return tuple(changes)
