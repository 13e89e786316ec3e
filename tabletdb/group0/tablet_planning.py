"""The tablet maps a schema change brings, planned once per command by the node that decides it.

A schema command carries the tablet maps of the tables (views, index entries tables) it creates
and the removal of those it drops, so group0 applies schema and maps in one step (DESIGN.md
decision 2; ``tablets_state``). The deciding node plans them: counts from the sizing settings,
replicas over every member's shards, lightest first. ``apply`` only copies them, so it stays
deterministic on every node.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.state import Group0State, SchemaCommand, apply
from tabletdb.group0.tablets_state import ReplicaLoad, TabletChange, apply_tablet_changes, plan_tablet_changes
from tabletdb.schema.model import Catalog
from tabletdb.tablets.count import SizingConfig

Member = tuple[uuid.UUID, str, str, int]
"""(host id, datacenter, rack, shard count) of a node tablets can be placed on."""


class TabletPlanner:
    """The placement policy of one node: its sizing settings, itself as the cluster until its
    join is recorded, and the replica load per shard it keeps up to date across commands."""

    def __init__(self, sizing: SizingConfig, this_node: Member) -> None:
        self._sizing = sizing
        self._this_node = this_node
        self._load = ReplicaLoad()

    def changes(self, cluster: ClusterState, after: Catalog) -> tuple[TabletChange, ...]:
        """Tablet maps for the tables ``after`` adds to ``cluster``'s catalog, and removals for
        the ones it drops, placed over every member's shards."""
        metadata = cluster.metadata
        nodes = self._load.cluster_capacity(self._members(cluster), metadata.tablets)
        return plan_tablet_changes(metadata.catalog, after, metadata.tablets, nodes, self._sizing)

    def _members(self, cluster: ClusterState) -> Sequence[Member]:
        members = [
            (r.host_id, r.datacenter, r.rack, r.shard_count) for r in cluster.topology.members.values()
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
    planned = replace(command, tablet_changes=changes)
    return planned, replace(after, tablets=apply_tablet_changes(after.tablets, changes))
