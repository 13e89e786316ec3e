"""Which tablet replicas a request moves, and where: pure, deterministic plans.

- join: the new node takes replicas from the most loaded hosts of its datacenter until it holds
  its fair share of the replicas there, per table (the rest is the balancer's work, next issue);
- leave / remove: every replica on the node moves to the least loaded NORMAL node of the same
  datacenter that does not hold the tablet yet (for remove it is rebuilt from the surviving
  replicas: REBUILD);
- replace: every replica of the replaced node is rebuilt on the replacing node (same datacenter).
Replicas never change datacenter (the keyspace's per-DC replication stays true); among equals a
target whose rack the tablet's other replicas do not use yet is preferred. Ties are broken by
host id and tablet id, so every coordinator plans the same moves.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace

from tabletdb.tablets.colocation import base_of, planning_maps
from tabletdb.tablets.migration import Migration, begin_migration
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind
from tabletdb.topology.state import Request, TopologyState
from tabletdb.topology.states import RequestKind


class PlanError(Exception):
    """The request cannot be carried out with the nodes there are; the message says why."""


Moves = tuple[tuple[uuid.UUID, int, TabletInfo], ...]
"""(table id, tablet id, the tablet's entry with its migration begun)."""
Locations = Mapping[uuid.UUID, tuple[str, str]]
"""(datacenter, rack) by host id; a host missing here is in ("", "")."""


def _where(locations: Locations, host: uuid.UUID) -> tuple[str, str]:
    return locations.get(host, ("", ""))


def _rack_clash(locations: Locations, tablet: TabletInfo, source: uuid.UUID, target: uuid.UUID) -> bool:
    """Whether `target`'s rack is already used by the tablet's replicas other than `source`."""
    return _where(locations, target) in {
        _where(locations, r.host) for r in tablet.replicas if r.host != source
    }


def _load(tm: TabletMap) -> dict[uuid.UUID, int]:
    load: dict[uuid.UUID, int] = {}
    for tablet in tm.tablets:
        for r in tablet.replicas:
            load[r.host] = load.get(r.host, 0) + 1
    return load


def _shard_for(host: uuid.UUID, tm: TabletMap, shards: Mapping[uuid.UUID, int]) -> int:
    """The shard of `host` holding the fewest replicas of this table."""
    per_shard = [0] * max(1, shards.get(host, 1))
    for tablet in tm.tablets:
        for r in tablet.replicas:
            if r.host == host and r.shard < len(per_shard):
                per_shard[r.shard] += 1
    return min(range(len(per_shard)), key=lambda s: (per_shard[s], s))


def _begin(
    tm: TabletMap, tablet_id: int, source: TabletReplica, target: TabletReplica, rebuild: bool
) -> TabletInfo:
    started = begin_migration(tm, Migration(tm.table_id, tablet_id, source, target)).tablets[tablet_id]
    return replace(started, transition=TransitionKind.REBUILD) if rebuild else started


def _plan_join(
    tm: TabletMap,
    new: uuid.UUID,
    owners: tuple[uuid.UUID, ...],
    shards: Mapping[uuid.UUID, int],
    loc: Locations,
) -> Moves:
    dc = _where(loc, new)[0]
    load = {h: n for h, n in _load(tm).items() if _where(loc, h)[0] == dc}
    local_owners = [h for h in owners if _where(loc, h)[0] == dc]
    share = sum(load.values()) // (len(local_owners) + 1)
    moves: list[tuple[uuid.UUID, int, TabletInfo]] = []
    taken: set[int] = set()
    while len(moves) < share:
        candidates = [
            (_rack_clash(loc, tablet, r.host, new), -load[r.host], r.host, tid)
            for tid, tablet in enumerate(tm.tablets)
            if tid not in taken and not tablet.in_transition and new not in tablet.replica_hosts()
            for r in tablet.replicas
            if r.host in load
        ]
        if not candidates:
            break
        _, _, host, tid = min(candidates)
        source = next(r for r in tm.tablets[tid].replicas if r.host == host)
        target = TabletReplica(new, len(moves) % max(1, shards.get(new, 1)))
        moves.append((tm.table_id, tid, _begin(tm, tid, source, target, rebuild=False)))
        load[host] -= 1
        taken.add(tid)
    return tuple(moves)


def _plan_away(
    tm: TabletMap,
    leaving: uuid.UUID,
    candidates: tuple[uuid.UUID, ...],
    shards: Mapping[uuid.UUID, int],
    rebuild: bool,
    loc: Locations,
) -> Moves:
    load = _load(tm)
    dc = _where(loc, leaving)[0]
    candidates = tuple(h for h in candidates if _where(loc, h)[0] == dc)
    moves: list[tuple[uuid.UUID, int, TabletInfo]] = []
    for tid, tablet in enumerate(tm.tablets):
        source = next((r for r in tablet.replicas if r.host == leaving), None)
        if source is None or tablet.in_transition:
            continue
        eligible = [h for h in candidates if h not in tablet.replica_hosts()]
        if not eligible:
            raise PlanError(
                f"tablet {tid} of table {tm.table_id} has a replica on {leaving} and no other node to "
                f"take it (its replicas: {', '.join(str(h) for h in tablet.replica_hosts())}; "
                f"{len(candidates)} eligible node(s) in datacenter {dc!r}); add a node there first"
            )
        target_host = min(eligible, key=lambda h: (_rack_clash(loc, tablet, leaving, h), load.get(h, 0), h))
        load[target_host] = load.get(target_host, 0) + 1
        target = TabletReplica(target_host, _shard_for(target_host, tm, shards))
        moves.append((tm.table_id, tid, _begin(tm, tid, source, target, rebuild)))
    return tuple(moves)


def _plan_replace(tm: TabletMap, old: uuid.UUID, new: uuid.UUID, shards: Mapping[uuid.UUID, int]) -> Moves:
    moves: list[tuple[uuid.UUID, int, TabletInfo]] = []
    for tid, tablet in enumerate(tm.tablets):
        source = next((r for r in tablet.replicas if r.host == old), None)
        if source is None or tablet.in_transition:
            continue
        target = TabletReplica(new, source.shard % max(1, shards.get(new, 1)))
        moves.append((tm.table_id, tid, _begin(tm, tid, source, target, rebuild=True)))
    return tuple(moves)


def _plan_move(
    request: Request,
    tablets: Mapping[uuid.UUID, TabletMap],
    shards: Mapping[uuid.UUID, int],
    locations: Locations,
) -> Moves:
    """The one migration a MOVE request names, begun (``tablets.migration.begin_migration``)."""
    move = request.move
    assert move is not None  # admission refuses a MOVE without one
    move = replace(move, table_id=base_of(tablets, move.table_id))  # a co-located tablet moves with its base
    tm = tablets.get(move.table_id)
    if tm is None:
        raise PlanError(f"table {move.table_id} has no tablets (dropped, or not a tablets table)")
    if not 0 <= move.target.shard < shards.get(move.target.host, 0):
        raise PlanError(
            f"node {move.target.host} has {shards.get(move.target.host, 0)} shard(s); "
            f"there is no shard {move.target.shard}"
        )
    source_dc, target_dc = _where(locations, move.source.host)[0], _where(locations, move.target.host)[0]
    if source_dc != target_dc:
        raise PlanError(
            f"a replica may only move within its datacenter: {move.source.host} is in {source_dc!r}, "
            f"{move.target.host} in {target_dc!r}"
        )
    tablet_id = tm.tablet_id_of(move.token)
    try:
        begun = begin_migration(tm, Migration(move.table_id, tablet_id, move.source, move.target))
    except ValueError as e:
        raise PlanError(str(e)) from None
    return ((move.table_id, tablet_id, begun.tablets[tablet_id]),)


def plan_moves(
    request: Request,
    topology: TopologyState,
    tablets: Mapping[uuid.UUID, TabletMap],
    shards: Mapping[uuid.UUID, int],
    locations: Locations,
) -> Moves:
    """Every tablet move `request` needs, with each tablet's migration begun; PlanError if some
    replica has nowhere to go."""
    if request.kind is RequestKind.MOVE:
        return _plan_move(request, tablets, shards, locations)
    tablets = planning_maps(tablets)  # co-located tables move with their base (coordinator._command)
    ignored = topology.ignored | request.ignore_nodes  # dead nodes take no replica
    normal = tuple(h for h in topology.normal_nodes() if h not in ignored)
    if request.kind is RequestKind.REPLACE and request.replaced_id is not None:
        old_dc, new_dc = _where(locations, request.replaced_id)[0], _where(locations, request.host_id)[0]
        if old_dc != new_dc:
            raise PlanError(
                f"the replacing node is in datacenter {new_dc!r} but {request.replaced_id} was in "
                f"{old_dc!r}; start the replacing node in the same datacenter"
            )
    out: list[tuple[uuid.UUID, int, TabletInfo]] = []
    for table_id in sorted(tablets, key=lambda t: t.bytes):
        tm = tablets[table_id]
        if request.kind is RequestKind.JOIN:
            out.extend(_plan_join(tm, request.host_id, normal, shards, locations))
        elif request.kind is RequestKind.REPLACE:
            assert request.replaced_id is not None
            out.extend(_plan_replace(tm, request.replaced_id, request.host_id, shards))
        else:
            others = tuple(h for h in normal if h != request.host_id)
            rebuild = request.kind is RequestKind.REMOVE
            out.extend(_plan_away(tm, request.host_id, others, shards, rebuild, locations))
    return tuple(out)
