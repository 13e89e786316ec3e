"""The balancer loop's pure half: when the coordinator has nothing else to do and balancing is
on, plan tablet moves with ``tablets.balancer`` and start them as one transition.

A round of moves is a transition like a request's (a ``balance`` request the coordinator makes
itself, never queued): the moves go through the same migration stages, barriers, streaming and
cleanup, in lockstep, and roll back the same way if a node they need stays down. When the round
finishes the coordinator is idle again and plans the next round on the new loads, so repeated
rounds converge (each move lowers the balancer's imbalance measure) and stop when no move helps.

Only NORMAL, non-ignored nodes take part; a node leaving or being removed is drained by its own
request, which always goes first (the queue is checked before balancing). Replicas stay in their
racks (``keep_racks``): the topology state does not say which keyspaces list racks, and a move
between racks could leave a listed one. Each node is in at most ``MAX_PER_NODE`` moves of a round.

Moves between the shards of one node (intranode) never share a round with moves between nodes:
the node carries one out by moving the tablet's file between its shard directories at the
streaming stage (``node.tablet_streaming``). Such a move rolls back like any other when its node
stays down (the node then uses the file in whichever shard holds it,
``StorageService.resident_shard``). A plan that has both kinds starts the moves between nodes;
the intranode ones are planned again on the next round.

Merges (``topology.resize``): while the re-evaluation wants a table merged whose sibling tablets
are apart (``merging``), rounds co-locate them first (``tablets.merge_colocation``: moves between
nodes, then between shards, under the same per-node bound); the coordinator begins the merge
once every pair is co-located. Rounds of ordinary balancing meanwhile move co-located siblings
of those tables only together (``BalancerInput.merging``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from typing import NamedTuple

from tabletdb.tablets.allocation import NodeCapacity
from tabletdb.tablets.balancer import BalancerInput, TabletKey, plan_migrations
from tabletdb.tablets.colocation import group_sizes, planning_maps
from tabletdb.tablets.count import DcReplication
from tabletdb.tablets.merge_colocation import ColocationInput, plan_colocation
from tabletdb.tablets.migration import Migration, begin_migration
from tabletdb.tablets.tablet_map import TabletMap, TransitionKind
from tabletdb.topology.commands import TabletUpdate
from tabletdb.topology.state import Request, TopologyState, Transition
from tabletdb.topology.states import RequestKind, TransitionState

MAX_PER_NODE = 2
"""Moves one node streams in or out at once (ScyllaDB bounds migrations per shard likewise)."""
MAX_PER_ROUND = 64


class Round(NamedTuple):
    topology: TopologyState
    """With the round's transition started (version + 1)."""
    updates: list[TabletUpdate]
    reason: str


def plan_round(
    topology: TopologyState,
    tablets: Mapping[uuid.UUID, TabletMap],
    shards: Mapping[uuid.UUID, int],
    locations: Mapping[uuid.UUID, tuple[str, str]],
    sizes: Mapping[TabletKey, int],
    request_id: uuid.UUID,
    alive: frozenset[uuid.UUID] | None = None,
    merging: frozenset[uuid.UUID] = frozenset(),
    replication: Mapping[uuid.UUID, Mapping[str, DcReplication]] | None = None,
) -> Round | None:
    """The topology with a round started, its tablet updates and why; None when balanced (and
    every pair of the ``merging`` tables that can move is co-located), or while a node that takes
    part is down (``alive``, None: all up): its load is unknown and a move it is in could only
    wait or roll back. ``replication`` (per table) lets co-location move a replica to another
    rack where the keyspace's RF is a number (never where it lists racks, nor for a table not in
    it)."""
    sizes = group_sizes(tablets, sizes)
    tablets = planning_maps(tablets)  # co-located tables move with their base (coordinator._command)
    hosts = [h for h in topology.normal_nodes() if h not in topology.ignored]
    if alive is not None and any(h not in alive for h in hosts):
        return None
    nodes = [NodeCapacity(h, *locations.get(h, ("", "")), max(1, shards.get(h, 1))) for h in hosts]
    if len(nodes) < 1 or not tablets:
        return None
    merging = frozenset(t for t in merging if t in tablets)
    moves = _colocation_moves(nodes, tablets, merging, replication or {})
    what = "co-locating sibling tablets for a merge"
    if not moves:
        moves = _balance_moves(nodes, tablets, sizes, merging)
        what = ""
    if not moves:
        return None
    maps = dict(tablets)
    updates: list[TabletUpdate] = []
    for m in moves:
        before = maps[m.table_id].tablets[m.tablet_id]
        maps[m.table_id] = begin_migration(maps[m.table_id], m)
        updates.append(TabletUpdate(m.table_id, m.tablet_id, before, maps[m.table_id].tablets[m.tablet_id]))
    request = Request(request_id, RequestKind.BALANCE, moves[0].target.host)
    after = replace(
        topology,
        transition=Transition(request, TransitionState.TABLET_MIGRATION),
        version=topology.version + 1,
    )
    return Round(after, updates, f"balance: {len(updates)} tablet move(s)" + (f" {what}" if what else ""))


def _colocation_moves(
    nodes: list[NodeCapacity],
    tablets: Mapping[uuid.UUID, TabletMap],
    merging: frozenset[uuid.UUID],
    replication: Mapping[uuid.UUID, Mapping[str, DcReplication]],
) -> list[Migration]:
    """Moves between nodes first; moves between the shards of a node once none is left."""
    if not merging:
        return []
    for across in (True, False):
        found = plan_colocation(
            ColocationInput(nodes, tablets, merging, replication, MAX_PER_NODE, across_nodes=across),
            max_migrations=MAX_PER_ROUND,
        )
        if found:
            return found
    return []


def _balance_moves(
    nodes: list[NodeCapacity],
    tablets: Mapping[uuid.UUID, TabletMap],
    sizes: Mapping[TabletKey, int],
    merging: frozenset[uuid.UUID],
) -> list[Migration]:
    known = [s for s in sizes.values() if s > 0]
    default = max(1, sum(known) // len(known)) if known else 1  # a tablet not measured yet weighs the mean
    moves = plan_migrations(
        BalancerInput(
            nodes,
            tablets,
            tablet_sizes=sizes,
            default_tablet_size=default,
            keep_racks=True,
            max_per_node=MAX_PER_NODE,
            merging=merging,
            no_crossing=True,
        ),
        max_migrations=MAX_PER_ROUND,
    )
    across = [m for m in moves if m.kind is not TransitionKind.INTRANODE_MIGRATION]
    return across or moves
