"""The tablet load balancer as a pure function: cluster state in, a list of migrations out.

Load is the bytes of tablet replicas per shard of a node. Each round moves replicas from the
most to the least utilised nodes of a DC (replicas on draining nodes first, wherever they fit),
then between the shards of each node. A move is only planned if it lowers the cluster's
imbalance, measured as sum(bytes^2 / shards) over nodes; that measure strictly drops with every
move, so repeated planning converges instead of shuffling tablets back and forth. Moves never put
two replicas of a tablet on one node and never reduce the number of racks a tablet spans (with a
rack-list RF a replica stays in its rack). Tablets already in transition are left alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tabletdb.tablets.allocation import NodeCapacity
from tabletdb.tablets.count import DcReplication
from tabletdb.tablets.migration import Migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

TabletKey = tuple[uuid.UUID, int]


@dataclass(frozen=True)
class BalancerInput:
    nodes: Sequence[NodeCapacity]
    maps: Mapping[uuid.UUID, TabletMap]
    replication: Mapping[uuid.UUID, Mapping[str, DcReplication]] = field(default_factory=dict)
    """Per table; only consulted for rack lists (numeric RFs need nothing beyond the replicas)."""
    tablet_sizes: Mapping[TabletKey, int] = field(default_factory=dict)
    """Bytes of one replica of a tablet; missing tablets weigh ``default_tablet_size``."""
    draining: frozenset[uuid.UUID] = frozenset()
    """Nodes being decommissioned or removed: every replica leaves, none arrives."""
    default_tablet_size: int = 1


class _Plan:
    """Loads and placements as the plan would leave them, updated move by move."""

    def __init__(self, inp: BalancerInput) -> None:
        self.inp = inp
        self.nodes = {n.host_id: n for n in inp.nodes}
        self.node_bytes = {h: 0 for h in self.nodes}
        self.shard_bytes = {h: [0] * n.shard_count for h, n in self.nodes.items()}
        self.replicas: dict[TabletKey, list[TabletReplica]] = {}
        self.hosted: dict[uuid.UUID, set[TabletKey]] = {h: set() for h in self.nodes}
        self.busy: set[TabletKey] = set()
        self.moves: list[Migration] = []
        for table_id, tm in inp.maps.items():
            for tablet_id, tablet in enumerate(tm.tablets):
                key = (table_id, tablet_id)
                self.replicas[key] = list(tablet.replicas)
                if tablet.in_transition:
                    self.busy.add(key)
                for replica in dict.fromkeys(tablet.replicas + (tablet.new_replicas or ())):
                    self._add_load(replica, self.size(key))
                    if replica.host in self.hosted:
                        self.hosted[replica.host].add(key)

    def size(self, key: TabletKey) -> int:
        return self.inp.tablet_sizes.get(key, self.inp.default_tablet_size)

    def _add_load(self, replica: TabletReplica, amount: int) -> None:
        if replica.host not in self.nodes:
            return
        self.node_bytes[replica.host] += amount
        shards = self.shard_bytes[replica.host]
        if 0 <= replica.shard < len(shards):
            shards[replica.shard] += amount

    def utilisation(self, host: uuid.UUID) -> float:
        return self.node_bytes[host] / self.nodes[host].shard_count

    def least_loaded_shard(self, host: uuid.UUID) -> int:
        shards = self.shard_bytes[host]
        return min(range(len(shards)), key=lambda s: (shards[s], s))

    def move(self, key: TabletKey, source: TabletReplica, target: TabletReplica) -> None:
        size = self.size(key)
        self._add_load(source, -size)
        self._add_load(target, size)
        self.replicas[key] = [target if r == source else r for r in self.replicas[key]]
        if source.host != target.host:
            self.hosted[source.host].discard(key)
            self.hosted[target.host].add(key)
        self.busy.add(key)
        self.moves.append(Migration(key[0], key[1], source, target))

    def racks_kept(self, key: TabletKey, source: uuid.UUID, target: uuid.UUID) -> bool:
        src, dst = self.nodes[source], self.nodes[target]
        if src.dc != dst.dc:
            return False
        if isinstance(self.inp.replication.get(key[0], {}).get(src.dc), tuple):
            return src.rack == dst.rack
        in_dc = [
            r.host for r in self.replicas[key] if r.host in self.nodes and self.nodes[r.host].dc == src.dc
        ]
        before = {self.nodes[h].rack for h in in_dc}
        after = {self.nodes[h].rack for h in in_dc if h != source} | {dst.rack}
        return len(after) >= len(before)

    def gain(self, size: int, source: uuid.UUID, target: uuid.UUID) -> float:
        """How much moving ``size`` bytes from source to target lowers sum(bytes^2 / shards)."""
        ls, lt = self.node_bytes[source], self.node_bytes[target]
        cs, ct = self.nodes[source].shard_count, self.nodes[target].shard_count
        return size * ((2 * ls - size) / cs - (2 * lt + size) / ct)


def _replica_on(plan: _Plan, key: TabletKey, host: uuid.UUID) -> TabletReplica | None:
    return next((r for r in plan.replicas[key] if r.host == host), None)


def _best_move(plan: _Plan, source: uuid.UUID, target: uuid.UUID) -> tuple[TabletKey, TabletReplica] | None:
    """The replica on ``source`` whose move to ``target`` helps most (largest first when draining)."""
    draining = source in plan.inp.draining
    best: tuple[float, TabletKey, TabletReplica] | None = None
    for key in sorted(plan.hosted[source] - plan.busy):
        replica = _replica_on(plan, key, source)
        if replica is None or target in (r.host for r in plan.replicas[key]):
            continue
        if not plan.racks_kept(key, source, target):
            continue
        score = float(plan.size(key)) if draining else plan.gain(plan.size(key), source, target)
        if (draining or score > 0) and (best is None or score > best[0]):
            best = (score, key, replica)
    return None if best is None else (best[1], best[2])


def _inter_node_move(plan: _Plan, dc: str) -> bool:
    in_dc = [h for h, n in plan.nodes.items() if n.dc == dc]
    draining = plan.inp.draining
    sources = sorted(in_dc, key=lambda h: (h not in draining, -plan.utilisation(h), h))
    targets = sorted((h for h in in_dc if h not in draining), key=lambda h: (plan.utilisation(h), h))
    for source in sources:
        for target in targets:
            if target == source:
                continue
            if source not in draining and plan.utilisation(target) >= plan.utilisation(source):
                break
            found = _best_move(plan, source, target)
            if found is not None:
                key, replica = found
                plan.move(key, replica, TabletReplica(target, plan.least_loaded_shard(target)))
                return True
    return False


def _intra_node_move(plan: _Plan, host: uuid.UUID) -> bool:
    shards = plan.shard_bytes[host]
    high = max(range(len(shards)), key=lambda s: (shards[s], -s))
    low = plan.least_loaded_shard(host)
    gap = shards[high] - shards[low]
    best: tuple[int, TabletKey] | None = None
    for key in sorted(plan.hosted[host] - plan.busy):
        replica = _replica_on(plan, key, host)
        size = plan.size(key)
        if replica is None or replica.shard != high or size >= gap:
            continue
        score = size * (gap - size)
        if best is None or score > best[0]:
            best = (score, key)
    if best is None:
        return False
    plan.move(best[1], TabletReplica(host, high), TabletReplica(host, low))
    return True


def plan_migrations(inp: BalancerInput, max_migrations: int = 16) -> list[Migration]:
    """Up to ``max_migrations`` moves, each tablet at most once; empty when balanced."""
    plan = _Plan(inp)
    dcs = sorted({n.dc for n in inp.nodes})
    progress = True
    while progress and len(plan.moves) < max_migrations:
        progress = False
        for dc in dcs:
            if len(plan.moves) < max_migrations and _inter_node_move(plan, dc):
                progress = True
    progress = True
    while progress and len(plan.moves) < max_migrations:
        progress = False
        for host in sorted(h for h in plan.nodes if h not in inp.draining):
            if len(plan.moves) < max_migrations and _intra_node_move(plan, host):
                progress = True
    return plan.moves
