"""Tablet maps in group0: which tables get a map when the schema changes, and how changes apply.

A schema command that creates a table in a tablets keyspace also carries the table's new
TabletMap, and one that drops a table carries its removal, so schema and tablet maps change in
one atomic, replicated step (DESIGN.md decision 2). The maps are computed by the deciding node
(counts from spec/tablets.md, replicas from the allocator) and only copied by ``apply``, which
keeps apply deterministic on every node.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.index_table import index_tables
from tabletdb.schema.model import CDC_LOG_SUFFIX, Catalog, KeyspaceDef, TableDef
from tabletdb.tablets.allocation import NodeCapacity, allocate_replicas
from tabletdb.tablets.colocation import follow_map
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


def replication_of(keyspace: KeyspaceDef) -> dict[str, DcReplication]:
    """Per-DC replication for placement, as the keyspace states it.

    Never capped at the nodes a DC has: a tablet with fewer replicas than RF would let CL=ALL
    succeed on fewer copies than the keyspace promises. DDL refuses what cannot be placed
    (``schema.rack_rules.check_placeable``); the allocator refuses it again with the same text.
    """
    out: dict[str, DcReplication] = {}
    for dc, value in keyspace.replication.options:
        if dc in ("class", "replication_factor"):
            continue
        out[dc] = value if isinstance(value, tuple) else int(value)
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
    replication = replication_of(keyspace)
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
    but have none, and removals for mapped tables that ``after`` no longer has.

    ``after`` is normally ``before`` with one command applied, so only the keyspaces and tables
    whose objects changed are looked at (shared structure: the cost follows the change, not the
    schema). A change to a keyspace itself (created, dropped, altered, e.g. switched to tablets)
    checks every table instead, and so does a result that would not leave exactly one map per
    table (a table left without a map earlier is repaired by the next change).
    """
    if isinstance(maps, FrozenMap):
        changed = _changed_tables(before, after)
        if changed is not None:
            changes = _plan_for_changed(changed, after, maps, nodes, sizing)
            created = sum(1 for c in changes if c.tablet_map is not None)
            if len(maps) + 2 * created - len(changes) == _tablet_table_count(after):
                return _colocate_cdc_logs(changes, after, maps)
    return _colocate_cdc_logs(_plan_by_scan(after, maps, nodes, sizing), after, maps)


def _colocate_cdc_logs(
    changes: tuple[TabletChange, ...], after: Catalog, maps: Mapping[uuid.UUID, TabletMap]
) -> tuple[TabletChange, ...]:
    """A new CDC log table is co-located with its base (``tablets.colocation.follow_map``): same
    tablets on the same replicas, so each base replica holds the log partitions of its own writes
    (``cdc.tablet_streams``), and from then on the log's tablets move only with the base's."""
    planned = {c.table_id: c.tablet_map for c in changes}
    out = []
    for change in changes:
        owner = after.ids.get(change.table_id) if change.tablet_map is not None else None
        ks = None if owner is None else after.keyspaces.get(owner[0])
        table = None if ks is None or owner is None else ks.tables.get(owner[1])
        if ks is not None and table is not None and table.is_cdc_log:
            base = ks.tables.get(table.name.removesuffix(CDC_LOG_SUFFIX))
            base_map = None if base is None else planned.get(base.id) or maps.get(base.id)
            if base_map is not None:
                change = TabletChange(change.table_id, follow_map(base_map, change.table_id))
        out.append(change)
    return tuple(out)


def _tablet_table_count(catalog: Catalog) -> int:
    """Tables, views and index entries tables in tablets keyspaces: how many maps there should be.

    Sizes of the per-keyspace maps plus each keyspace's index entries tables, which
    `_INDEX_TABLES` keeps by diffing table maps, so the guard costs per keyspace, not per table."""
    count = 0
    for name, ks in catalog.keyspaces.items():
        if ks.definition.uses_tablets:
            count += len(ks.tables) + len(ks.views) + _INDEX_TABLES.count(name, ks.tables)
    return count


class _IndexTableCounts:
    """Index entries tables of each keyspace's tables, updated from the last table map seen for
    the keyspace by a shared-structure diff (exact for any two maps; cheap when one was derived
    from the other). A per-process cache: planning never depends on which maps it saw before."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[FrozenMap[str, TableDef], int]] = {}

    def count(self, keyspace: str, tables: FrozenMap[str, TableDef]) -> int:
        last = self._last.get(keyspace)
        if last is None:
            count = _index_tables_in(tables.values())
        elif last[0] is tables:
            return last[1]
        else:
            previous, count = last
            count -= _index_tables_in(t for _, t in previous.items_missing_from(tables))
            count += _index_tables_in(t for _, t in tables.items_missing_from(previous))
        self._last[keyspace] = (tables, count)
        return count


def _index_tables_in(tables: Iterable[TableDef]) -> int:
    return sum(len(index_tables(t)) for t in tables if t.indexes)


_INDEX_TABLES = _IndexTableCounts()


_ChangedTables = tuple[list[TableDef], list[TableDef]]


def _changed_tables(before: Catalog, after: Catalog) -> _ChangedTables | None:
    """(tables as ``after`` has them, tables as ``before`` had them) for every table or view
    that was added, removed or redefined; None when a keyspace definition changed."""
    new: list[TableDef] = []
    old: list[TableDef] = []
    for name, ks_after in after.keyspaces.items_missing_from(before.keyspaces):
        ks_before = before.keyspaces.get(name)
        if ks_before is None or ks_before.definition != ks_after.definition:
            return None
        new += [t for _, t in ks_after.tables.items_missing_from(ks_before.tables)]
        new += [v.table for _, v in ks_after.views.items_missing_from(ks_before.views)]
        old += [t for _, t in ks_before.tables.items_missing_from(ks_after.tables)]
        old += [v.table for _, v in ks_before.views.items_missing_from(ks_after.views)]
    if any(name not in after.keyspaces for name in before.keyspaces.keys_missing_from(after.keyspaces)):
        return None
    return new, old


def _with_index_tables(table: TableDef) -> list[TableDef]:
    return [table] + [entries for _, entries in index_tables(table)]


def _plan_for_changed(
    changed: _ChangedTables,
    after: Catalog,
    maps: Mapping[uuid.UUID, TabletMap],
    nodes: Sequence[NodeCapacity],
    sizing: SizingConfig,
) -> tuple[TabletChange, ...]:
    new, old = changed
    wanted = [t for table in new if _uses_tablets(after, table.keyspace) for t in _with_index_tables(table)]
    wanted_ids = {t.id for t in wanted}
    created = sorted((t for t in wanted if t.id not in maps), key=lambda t: (t.keyspace, t.name))
    gone = {t.id for table in old for t in _with_index_tables(table)} - wanted_ids
    removed = sorted((t for t in gone if t in maps), key=lambda t: t.bytes)
    return tuple(
        [TabletChange(t.id, _new_map(after, t, nodes, sizing)) for t in created]
        + [TabletChange(t, None) for t in removed]
    )


def _uses_tablets(catalog: Catalog, keyspace: str) -> bool:
    ks = catalog.keyspace(keyspace)
    return ks is not None and ks.definition.uses_tablets


def _new_map(
    catalog: Catalog, table: TableDef, nodes: Sequence[NodeCapacity], sizing: SizingConfig
) -> TabletMap:
    ks = catalog.keyspaces[table.keyspace]
    return new_table_map(ks.definition, table, nodes, sizing)


def _plan_by_scan(
    after: Catalog, maps: Mapping[uuid.UUID, TabletMap], nodes: Sequence[NodeCapacity], sizing: SizingConfig
) -> tuple[TabletChange, ...]:
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


class ReplicaLoad:
    """Tablet replicas per (host, shard) over all maps, kept up to date by comparing each new
    ``TabletMaps`` with the last one seen (shared structure: the cost follows the change), so
    placing a new table does not walk every tablet of the cluster."""

    def __init__(self) -> None:
        self._maps: TabletMaps = EMPTY_TABLET_MAPS
        self._load: dict[tuple[uuid.UUID, int], int] = {}

    def of(self, maps: TabletMaps) -> dict[tuple[uuid.UUID, int], int]:
        for sign, changed in (
            (-1, self._maps.items_missing_from(maps)),
            (1, maps.items_missing_from(self._maps)),
        ):
            for _, tablet_map in changed:
                for replica, count in tablet_map.replica_load().items():
                    total = self._load.get(replica, 0) + sign * count
                    if total:
                        self._load[replica] = total
                    else:
                        self._load.pop(replica, None)
        self._maps = maps
        return self._load

    def cluster_capacity(
        self, members: Sequence[tuple[uuid.UUID, str, str, int]], maps: TabletMaps
    ) -> list[NodeCapacity]:
        """(host, dc, rack, shards) of every member, with the tablet replicas each shard holds
        now, so new tables fill the shards earlier tables left light."""
        load = self.of(maps)
        return [
            NodeCapacity(host, dc, rack, shards, tuple(load.get((host, s), 0) for s in range(shards)))
            for host, dc, rack, shards in sorted(members, key=lambda m: m[0].bytes)
        ]


def cluster_capacity(
    members: Sequence[tuple[uuid.UUID, str, str, int]], maps: Mapping[uuid.UUID, TabletMap]
) -> list[NodeCapacity]:
    """`ReplicaLoad.cluster_capacity` from scratch, for one-off callers."""
    return ReplicaLoad().cluster_capacity(members, maps if isinstance(maps, FrozenMap) else FrozenMap(maps))
