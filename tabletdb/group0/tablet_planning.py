"""The tablet maps a schema change brings, planned once per command by the node that decides it.

A schema command carries the tablet maps of the tables (views, index entries tables) it creates
and the removal of those it drops, so group0 applies schema and maps in one step (DESIGN.md
decision 2; ``tablets_state``). The deciding node plans them: counts from the sizing settings,
replicas over every member's shards, lightest first. ``apply`` only copies them, so it stays
deterministic on every node. The same node builds the CDC generation a command needs (a CDC
table in a vnode keyspace, ``cdc_generation_for``), random stream bits included, for the same
reason.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace

from tabletdb.cdc.generation import Generation, VnodeOwner, next_generation, refines
from tabletdb.cdc.tablet_streams import StreamSets, next_stream_set
from tabletdb.group0.cdc_log_maps import named_log_changes
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import Group0State, SchemaCommand, apply
from tabletdb.group0.tablets_state import (
    ReplicaLoad,
    TabletChange,
    TabletMaps,
    apply_tablet_changes,
    plan_tablet_changes,
)
from tabletdb.schema.model import Catalog, TableDef
from tabletdb.schema.mutations import Mutation, PutTable
from tabletdb.tablets.count import SizingConfig
from tabletdb.topology.states import NodeState
from tabletdb.topology.vnode_ranges import token_map

Member = tuple[uuid.UUID, str, str, int]
"""(host id, datacenter, rack, shard count) of a node tablets can be placed on."""


class TabletPlanner:
    """The placement policy of one node: its sizing settings, itself as the cluster until its
    join is recorded, and the replica load per shard it keeps up to date across commands."""

    def __init__(
        self, sizing: SizingConfig, this_node: Member, clock: Callable[[], float] = time.time
    ) -> None:
        self._clock = clock
        self._sizing = sizing
        self._this_node = this_node
        self._load = ReplicaLoad()

    @property
    def sizing(self) -> SizingConfig:
        return self._sizing

    def now_micros(self) -> int:
        return int(self._clock() * 1_000_000)

    def changes(self, cluster: ClusterState, after: Catalog) -> tuple[TabletChange, ...]:
        """Tablet maps for the tables ``after`` adds to ``cluster``'s catalog, and removals for
        the ones it drops, placed over every member's shards."""
        metadata = cluster.metadata
        nodes = self._load.cluster_capacity(self._members(cluster), metadata.tablets)
        return plan_tablet_changes(metadata.catalog, after, metadata.tablets, nodes, self._sizing)

    def _members(self, cluster: ClusterState) -> Sequence[Member]:
        """Normal members only: a node still joining (or leaving) gets tablets by migration, or
        loses them, through the topology coordinator; a replica placed on it now could be lost
        with a rolled-back join, or left behind by a decommission planned before the table. Nor a
        node the coordinator ignores (a dead node being replaced or removed, or named in
        ``ignore_nodes``): its replica would never be written. (A member without a state-machine
        record predates it and counts as normal.)"""
        topology = cluster.topology_state
        members = [
            (r.host_id, r.datacenter, r.rack, r.shard_count)
            for r in cluster.topology.members.values()
            if r.host_id not in topology.ignored
            and (r.host_id not in topology.nodes or topology.state_of(r.host_id) is NodeState.NORMAL)
        ]
        # The founder's first DDL can precede its own join record.
        return members or [self._this_node]


def with_tablet_changes(
    cluster: ClusterState, command: SchemaCommand, planner: TabletPlanner | None
) -> tuple[SchemaCommand, Group0State]:
    """``command`` carrying the tablet maps it brings, and the metadata it leaves.

    The command's mutations are applied once: the catalog they make is both what the planner
    places tables for and, with the planned maps, the state the next command is decided on.
    """
    after, _ = apply(cluster.metadata, command)
    if planner is None:
        return command, after
    changes = planner.changes(cluster, after.catalog)  # tablet maps move with the schema, atomically
    planned_maps = apply_tablet_changes(after.tablets, changes)
    changes += named_log_changes(command.mutations, after.catalog, planned_maps)  # old log maps
    now = planner.now_micros()
    generation = cdc_generation_for(cluster, command, after.catalog, now)
    tablets = apply_tablet_changes(after.tablets, changes)
    stream_sets = cdc_stream_sets_for(command, after, tablets, now)
    planned = replace(command, tablet_changes=changes, cdc_generation=generation, cdc_stream_sets=stream_sets)
    generations = after.cdc_generations if generation is None else (*after.cdc_generations, generation)
    return planned, replace(
        after,
        tablets=tablets,
        cdc_generations=generations,
        cdc_stream_sets=(*after.cdc_stream_sets, *stream_sets),
    )


def cdc_stream_sets_for(
    command: SchemaCommand, after: Group0State, tablets: TabletMaps, now_micros: int
) -> StreamSets:
    """A new stream set for each CDC table of a tablets keyspace that ``command`` touches whose
    tablets no longer match its latest set (first of all: a log table just made)."""
    found = []
    for mutation in command.mutations:
        if not isinstance(mutation, PutTable) or not mutation.table.options.cdc_enabled:
            continue
        tablet_map = tablets.get(mutation.table.id)
        if tablet_map is None:
            continue
        new = next_stream_set(after.cdc_stream_sets, mutation.table.id, tablet_map.last_tokens, now_micros)
        if new is not None:
            found.append(new)
    return tuple(found)


CDC_IGNORE_MSB = 12
"""The sharding every node uses (``murmur3_partitioner_ignore_msb_bits``' default)."""
CDC_GENERATION_DELAY_US = 5_000_000
"""A rebuilt generation operates this far after it is decided, so every node applies it before
its first write (spec/cdc.md: generation leeway)."""


def cdc_generation_for(
    cluster: ClusterState, command: SchemaCommand, after: Catalog, now_micros: int
) -> tuple[int, Generation] | None:
    """A new CDC generation when ``command`` puts a CDC table in a vnode keyspace and the ring has
    none built for it: the first one (operating from the start of time), or one for a ring that
    changed since the last (operating a little after now). Otherwise None.

    When the ring changes with no schema change, the group0 leader finds the generation outdated
    (``cdc_generation_outdated``) and commits such a command itself
    (``node.group0_shell.cdc_generations``).
    """
    if not any(_cdc_vnode_table(after, m) for m in command.mutations):
        return None
    rng = random.SystemRandom()
    return next_generation(
        cluster.metadata.cdc_generations,
        ring_owners(cluster),
        now_micros,
        lambda: rng.getrandbits(38),
        CDC_GENERATION_DELAY_US,
    )


def ring_owners(cluster: ClusterState) -> list[VnodeOwner]:
    """Every member's vnodes, each once with its owner's sharding: the ring a generation is built
    for (a replacing node shares the dead node's tokens until the replace ends: one vnode each,
    ``vnode_ranges.token_map``, or the generation would have two ranges ending at one token)."""
    members = cluster.topology.members
    named = token_map(cluster.topology_state, {h: r.tokens for h, r in members.items()})
    return [VnodeOwner(token, members[host].shard_count, CDC_IGNORE_MSB) for token, host in named.items()]


def cdc_generation_outdated(cluster: ClusterState) -> TableDef | None:
    """A CDC table of a vnode keyspace, if there is one and the latest generation was built for
    another ring than the members' (None: nothing to rebuild). Cheap when nothing changed: the
    ring is compared first, the catalog searched only when it no longer fits."""
    vnodes = ring_owners(cluster)
    current = cluster.metadata.cdc_generations
    if not vnodes or (current and refines(current[-1][1], [v.end for v in vnodes])):
        return None
    catalog = cluster.metadata.catalog
    return next(
        (
            t
            for ks in catalog.keyspaces.values()
            if not ks.definition.uses_tablets
            for t in ks.tables.values()
            if t.options.cdc_enabled
        ),
        None,
    )


def _cdc_vnode_table(after: Catalog, mutation: Mutation) -> bool:
    if not isinstance(mutation, PutTable) or not mutation.table.options.cdc_enabled:
        return False
    ks = after.keyspace(mutation.table.keyspace)
    return ks is not None and not ks.definition.uses_tablets
