"""Co-locating sibling tablets before a merge, as a pure plan: maps in, migrations out.

A merge joins tablets 2i and 2i+1 into one file on each replica, so both must sit on the same
(host, shard) replicas first (``TabletMap.merge``). A split leaves them so, but the allocator
places a new table's siblings apart and the balancer moves each tablet on its own, so when the
resize re-evaluation wants a table merged (``topology.resize.pending_merges``), the balancer
loop first runs rounds of these moves (``topology.balancing``), as ScyllaDB's balancer does
before it finalizes a merge.

Per sibling pair and datacenter, one sibling (the *mover*) takes the other's replicas there: the
right one, unless it spans more racks in that datacenter than the left one (then the left moves),
so a tablet never ends with fewer racks than it had. Every move takes one of the mover's replicas
that the stayer lacks to one of the stayer's replicas the mover lacks, so a pair needs exactly as
many moves as the two replica sets differ by: no plan can do with fewer. Among those moves the
plan prefers, in order, a replica on a host both already use (an intranode move), one that stays
in its rack, one that brings the mover into a rack it lacked, and one that leaves a rack the
mover still holds elsewhere; a move that would drop the mover's rack count is never planned
(some non-dropping move always exists, since the stayer spans at least as many racks). In a
datacenter whose replication is a rack list (or whose replication the plan is not told) a
replica only moves within its rack: both siblings have one replica in each listed rack, so
same-rack moves always suffice there.

A tablet is in one migration at a time, so a pair differing in k replicas needs k rounds; each
round respects the same per-node bound as balancing. Pairs with a tablet in transition, with
replica sets of different sizes (an RF change running), or with a replica on a node outside the
plan are left for a later round.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tabletdb.tablets.allocation import NodeCapacity
from tabletdb.tablets.count import DcReplication
from tabletdb.tablets.migration import Migration
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica


@dataclass(frozen=True)
class ColocationInput:
    nodes: Sequence[NodeCapacity]
    maps: Mapping[uuid.UUID, TabletMap]
    merging: frozenset[uuid.UUID]
    """Tables whose merge waits for their siblings (base tables: co-located ones follow them)."""
    replication: Mapping[uuid.UUID, Mapping[str, DcReplication]] = field(default_factory=dict)
    """Per table: a DC with a rack list, or a table not listed here, keeps replicas in their racks."""
    max_per_node: int | None = None
    """At most this many moves into or out of one node (an intranode move counts once)."""
    across_nodes: bool = True
    """Plan moves between nodes (True) or between the shards of a node (False): a round never
    mixes them, since an intranode move never rolls back (``topology.balancing``)."""


def pair_colocated(left: TabletInfo, right: TabletInfo) -> bool:
    return set(left.replicas) == set(right.replicas)


def siblings_colocated(tm: TabletMap) -> bool:
    """Whether every pair of sibling tablets shares its replicas, shards included (can merge)."""
    if tm.tablet_count % 2:
        return False
    return all(pair_colocated(a, b) for a, b in zip(tm.tablets[0::2], tm.tablets[1::2]))


def pairs_apart(tm: TabletMap) -> int:
    """How many replica moves co-locating every pair of ``tm`` takes (the plan's lower bound)."""
    if tm.tablet_count % 2:
        return 0
    return sum(len(set(b.replicas) - set(a.replicas)) for a, b in zip(tm.tablets[0::2], tm.tablets[1::2]))


class _Budget:
    """The nodes of the plan and the moves each is in so far."""

    def __init__(self, nodes: Sequence[NodeCapacity], limit: int | None) -> None:
        self.nodes = {n.host_id: n for n in nodes}
        self.rack_of = {n.host_id: n.rack for n in nodes}
        self.limit = limit
        self.used: dict[uuid.UUID, int] = {}

    def fits(self, source: TabletReplica, target: TabletReplica) -> bool:
        if self.limit is None:
            return True
        return all(self.used.get(h, 0) < self.limit for h in {source.host, target.host})

    def take(self, source: TabletReplica, target: TabletReplica) -> None:
        for h in {source.host, target.host}:
            self.used[h] = self.used.get(h, 0) + 1


def _racks(replicas: Sequence[TabletReplica], rack_of: Mapping[uuid.UUID, str]) -> set[str]:
    return {rack_of[r.host] for r in replicas}


def _move_in_dc(
    mover: Sequence[TabletReplica],
    stayer: Sequence[TabletReplica],
    rack_of: Mapping[uuid.UUID, str],
    budget: _Budget,
    across_nodes: bool,
    keep_racks: bool,
) -> tuple[TabletReplica, TabletReplica] | None:
    """The best (source, target) bringing one of ``mover``'s replicas onto ``stayer``'s, or None."""
    leaving = [r for r in mover if r not in stayer]
    arriving = [r for r in stayer if r not in mover]
    mover_hosts = {r.host for r in mover}
    racks_now = _racks(mover, rack_of)
    ranked: list[tuple[int, int, TabletReplica, TabletReplica]] = []
    for i, source in enumerate(leaving):
        for j, target in enumerate(arriving):
            intranode = source.host == target.host
            if intranode == across_nodes:
                continue
            if not intranode and target.host in mover_hosts:
                continue  # two replicas of the mover on one node (its intranode pair goes first)
            after = [target if r == source else r for r in mover]
            if len(_racks(after, rack_of)) < len(racks_now):
                continue
            if intranode:
                rank = 0
            elif rack_of[source.host] == rack_of[target.host]:
                rank = 1
            elif keep_racks:
                continue
            elif rack_of[target.host] not in racks_now:
                rank = 2
            else:
                rank = 3
            ranked.append((rank, i * len(arriving) + j, source, target))
    for _, _, source, target in sorted(ranked, key=lambda c: (c[0], c[1])):
        if budget.fits(source, target):
            return source, target
    return None


def _pair_moves(inp: ColocationInput, tm: TabletMap, tablet_id: int, budget: _Budget) -> list[Migration]:
    """At most one move for each sibling of the pair ``tablet_id``, ``tablet_id`` + 1 (a tablet is
    in one migration at a time)."""
    left, right = tm.tablets[tablet_id], tm.tablets[tablet_id + 1]
    replication = inp.replication.get(tm.table_id)
    nodes, rack_of = budget.nodes, budget.rack_of
    if left.in_transition or right.in_transition or pair_colocated(left, right):
        return []
    if len(left.replicas) != len(right.replicas):
        return []  # an RF change is adding or dropping replicas: wait until both have them
    if any(r.host not in nodes for r in (*left.replicas, *right.replicas)):
        return []
    moves: list[Migration] = []
    moved: set[int] = set()
    for dc in sorted({nodes[r.host].dc for r in left.replicas}):
        a = [r for r in left.replicas if nodes[r.host].dc == dc]
        b = [r for r in right.replicas if nodes[r.host].dc == dc]
        if set(a) == set(b):
            continue
        if len(_racks(b, rack_of)) > len(_racks(a, rack_of)):
            mover_id, mover, stayer = tablet_id, a, b
        else:
            mover_id, mover, stayer = tablet_id + 1, b, a
        if mover_id in moved:
            continue
        keep_racks = replication is None or isinstance(replication.get(dc), tuple)
        found = _move_in_dc(mover, stayer, rack_of, budget, inp.across_nodes, keep_racks)
        if found is None:
            continue
        source, target = found
        budget.take(source, target)
        moved.add(mover_id)
        moves.append(Migration(tm.table_id, mover_id, source, target))
    return moves


def plan_colocation(inp: ColocationInput, max_migrations: int = 64) -> list[Migration]:
    """Moves bringing sibling tablets of the merging tables onto the same replicas; empty when
    every pair that can move is co-located."""
    budget = _Budget(inp.nodes, inp.max_per_node)
    moves: list[Migration] = []
    for table_id in sorted(inp.merging, key=lambda t: t.bytes):
        tm = inp.maps.get(table_id)
        if tm is None or tm.tablet_count % 2:
            continue
        for tablet_id in range(0, tm.tablet_count, 2):
            if len(moves) >= max_migrations:
                return moves
            found = _pair_moves(inp, tm, tablet_id, budget)
            moves.extend(found[: max_migrations - len(moves)])
    return moves
