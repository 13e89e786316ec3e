"""What the topology coordinator's resize re-evaluation needs from group0's state: each table's
replication, hints and keyspace ``initial`` (the inputs of spec/tablets.md's count), which tables
follow another's map (a CDC log table follows its base), the cluster's shards per rack, and the
CDC stream sets a cut-over extends. Built by the node's coordinator shell on every step that may
begin a resize (cached on the catalog and membership objects, which group0 replaces on change)."""

from __future__ import annotations

import uuid

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.tablets_state import replication_of
from tabletdb.schema.index_table import index_tables
from tabletdb.schema.model import CDC_LOG_SUFFIX, Catalog
from tabletdb.tablets.count import ClusterShape, SizingConfig, TableSizing
from tabletdb.tablets.hints import parse_tablet_hints
from tabletdb.topology.resize import ResizeInputs
from tabletdb.topology.states import NodeState

PAUSED = "tablet balancing is disabled (a backup may be reading the tablets)"


def cluster_shape(state: ClusterState) -> ClusterShape:
    """Shards per (datacenter, rack) of the normal members."""
    shape: dict[str, dict[str, int]] = {}
    topology = state.topology_state
    for record in state.topology.members.values():
        if record.host_id in topology.nodes and topology.state_of(record.host_id) is not NodeState.NORMAL:
            continue
        racks = shape.setdefault(record.datacenter, {})
        racks[record.rack] = racks.get(record.rack, 0) + record.shard_count
    return shape


def catalog_sizing(
    catalog: Catalog,
) -> tuple[dict[uuid.UUID, TableSizing], dict[uuid.UUID, tuple[uuid.UUID, ...]], frozenset[uuid.UUID]]:
    """(tables deciding their own count, table -> tables following its map, CDC-enabled tables)."""
    tables: dict[uuid.UUID, TableSizing] = {}
    colocated: dict[uuid.UUID, tuple[uuid.UUID, ...]] = {}
    cdc: set[uuid.UUID] = set()
    for ks in catalog.keyspaces.values():
        definition = ks.definition
        if not definition.uses_tablets:
            continue
        replication = replication_of(definition)
        initial = (definition.tablets.initial if definition.tablets is not None else None) or None
        every = [*ks.tables.values(), *(v.table for v in ks.views.values())]
        every += [entries for t in list(every) for _, entries in index_tables(t)]
        for table in every:
            if table.is_cdc_log:
                base = ks.tables.get(table.name.removesuffix(CDC_LOG_SUFFIX))
                if base is not None:
                    colocated[base.id] = (*colocated.get(base.id, ()), table.id)
                    continue
            hints = parse_tablet_hints(dict(table.options.tablets or ()))
            tables[table.id] = TableSizing(replication, hints, keyspace_initial=initial)
            if table.options.cdc_enabled:
                cdc.add(table.id)
    return tables, colocated, frozenset(cdc)


class ResizeInputsCache:
    """``ResizeInputs`` for a state, recomputed only when the catalog or membership changed."""

    def __init__(self, sizing: SizingConfig) -> None:
        self._sizing = sizing
        self._key: tuple[object, object, object] | None = None
        self._built: ResizeInputs | None = None

    def __call__(self, state: ClusterState, now_us: int) -> ResizeInputs:
        key = (state.metadata.catalog, state.topology, state.topology_state.nodes)
        if self._built is None or self._key is None or any(a is not b for a, b in zip(key, self._key)):
            tables, colocated, cdc = catalog_sizing(state.metadata.catalog)
            self._built = ResizeInputs(tables, colocated, cluster_shape(state), self._sizing, cdc)
            self._key = key
        paused = "" if state.balancing_enabled else PAUSED
        return ResizeInputs(
            self._built.tables,
            self._built.colocated,
            self._built.shape,
            self._built.config,
            self._built.cdc_tables,
            state.metadata.cdc_stream_sets,
            now_us,
            paused=paused,
        )
