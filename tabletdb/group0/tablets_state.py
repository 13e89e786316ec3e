"""Tablet maps in group0: which tables get a map when the schema changes, and how changes apply.

A schema command that creates a table in a tablets keyspace also carries the table's new
TabletMap, and one that drops a table carries its removal, so schema and tablet maps change in
one atomic, replicated step (DESIGN.md decision 2). The maps are computed by the deciding node
(counts from spec/tablets.md, replicas from the allocator) and only copied by ``apply``, which
keeps apply deterministic on every node.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.index_table import index_tables
from tabletdb.schema.model import Catalog, KeyspaceDef, TableDef
from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas
from tabletdb.tablets.count import ClusterShape, DcReplication, SizingConfig, TableSizing, tablet_count
from tabletdb.tablets.hints import parse_tablet_hints
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.tablets.wire import tablet_map_from_plain, tablet_map_to_plain

TabletMaps = FrozenMap[uuid.UUID, TabletMap]
EMPTY_TABLET_MAPS: TabletMaps = FrozenMap()


@dataclass(frozen=True)
class TabletChange:
    """Set (``tablet_map`` given) or remove (None) the tablet map of ``table_id``."""

    table_id: uuid.UUID
    tablet_map: TabletMap | None


def apply_tablet_changes(maps: TabletMaps, changes: Sequence[TabletChange]) -> TabletMaps:
    for change in changes:
        if change.tablet_map is None:
            maps = maps.remove(change.table_id) if change.table_id in maps else maps
        else:
            maps = maps.set(change.table_id, change.tablet_map)
    return maps


def changes_to_plain(changes: Sequence[TabletChange]) -> list[list[Any]]:
    return [
        [c.table_id.bytes, None if c.tablet_map is None else tablet_map_to_plain(c.tablet_map)]
        for c in changes
    ]


def changes_from_plain(data: list[list[Any]]) -> tuple[TabletChange, ...]:
    return tuple(
        TabletChange(uuid.UUID(bytes=bytes(tid)), None if plain is None else tablet_map_from_plain(plain))
        for tid, plain in data
    )


def maps_to_plain(maps: TabletMaps) -> list[dict[str, Any]]:
    return [tablet_map_to_plain(maps[tid]) for tid in sorted(maps, key=lambda t: t.bytes)]


def maps_from_plain(data: list[dict[str, Any]]) -> TabletMaps:
    return FrozenMap((m.table_id, m) for m in (tablet_map_from_plain(d) for d in data))


def replication_of(keyspace: KeyspaceDef, nodes: Sequence[NodeCapacity]) -> dict[str, DcReplication]:
    """Per-DC replication for placement, capped at the nodes each DC has.

    Capping keeps a single-node cluster usable with RF > 1 (as a vnode keyspace would be): the
    missing replicas simply do not exist until nodes join and the balancer adds them.
    """
    per_dc: dict[str, int] = {}
    for node in nodes:
        per_dc[node.dc] = per_dc.get(node.dc, 0) + 1
    out: dict[str, DcReplication] = {}
    for dc, value in keyspace.replication.options:
        if dc in ("class", "replication_factor"):
            continue
        if isinstance(value, tuple):
            out[dc] = value
        else:
            out[dc] = min(int(value), per_dc.get(dc, 0))
    return out


def _shape(nodes: Sequence[NodeCapacity]) -> ClusterShape:
    shape: dict[str, dict[str, int]] = {}
    for node in nodes:
        racks = shape.setdefault(node.dc, {})
        racks[node.rack] = racks.get(node.rack, 0) + node.shard_count
    return shape


def new_table_map(
    keyspace: KeyspaceDef, table: TableDef, nodes: Sequence[NodeCapacity], sizing: SizingConfig
) -> TabletMap:
    """The count of spec/tablets.md for a new table, and its replicas placed by the allocator."""
    replication = replication_of(keyspace, nodes)
    hints = parse_tablet_hints(dict(table.options.tablets or ()))
    initial = keyspace.tablets.initial if keyspace.tablets is not None else None
    sizing_input = TableSizing(replication, hints, keyspace_initial=initial or None)
    count = tablet_count(sizing_input, _shape(nodes), sizing)
    replicas, _ = allocate_replicas(count, replication, nodes)
    return TabletMap.even(table.id, replicas)


def plan_tablet_changes(
    before: Catalog,
    after: Catalog,
    maps: Mapping[uuid.UUID, TabletMap],
    nodes: Sequence[NodeCapacity],
    sizing: SizingConfig,
) -> tuple[TabletChange, ...]:
    """Maps for tables (views, index entries tables) that exist in ``after`` in tablets keyspaces
    but have none, and removals for mapped tables that ``after`` no longer has."""
    del before  # the diff is against the maps themselves, so a missed change is repaired later
    changes: list[TabletChange] = []
    live: set[uuid.UUID] = set()
    for ks_name in sorted(after.keyspaces):
        ks = after.keyspaces[ks_name]
        if not ks.definition.uses_tablets:
            continue
        tables = [ks.tables[n] for n in sorted(ks.tables)] + [ks.views[n].table for n in sorted(ks.views)]
        tables += [entries for t in list(tables) for _, entries in index_tables(t)]
        for table in tables:
            live.add(table.id)
            if table.id not in maps:
                changes.append(TabletChange(table.id, new_table_map(ks.definition, table, nodes, sizing)))
    for table_id in sorted(maps, key=lambda t: t.bytes):
        if table_id not in live:
            changes.append(TabletChange(table_id, None))
    return tuple(changes)


def cluster_capacity(
    members: Sequence[tuple[uuid.UUID, str, str, int]], maps: Mapping[uuid.UUID, TabletMap]
) -> list[NodeCapacity]:
    """(host, dc, rack, shards) of every member, with the tablet replicas each shard holds now,
    so new tables fill the shards earlier tables left light."""
    load: dict[tuple[uuid.UUID, int], int] = {}
    for tablet_map in maps.values():
        for (host, shard), count in tablet_map.replica_load().items():
            load[(host, shard)] = load.get((host, shard), 0) + count
    return [
        NodeCapacity(host, dc, rack, shards, tuple(load.get((host, s), 0) for s in range(shards)))
        for host, dc, rack, shards in sorted(members, key=lambda m: m[0].bytes)
    ]
