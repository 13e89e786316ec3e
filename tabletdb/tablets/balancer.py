"""The tablet load balancer as a pure function: cluster state in, a list of migrations out.

Load is the bytes of tablet replicas per shard of a node. Each round moves replicas from the
most to the least utilised nodes of a DC (replicas on draining nodes first, wherever they fit),
then between the shards of each node. A move is only planned if it lowers the cluster's
imbalance, measured as sum(bytes^2 / shards) over nodes; that measure strictly drops with every
move, so repeated planning converges instead of shuffling tablets back and forth. Moves never put
two replicas of a tablet on one node and never reduce the number of racks a tablet spans (with a
rack-list RF a replica stays in its rack). Tablets already in transition are left alone.

Speed (100 nodes x 8 shards x 100,000 replicas must plan in well under two seconds): candidate
replicas are indexed once per plan by (node, shard, rack they may move to) and kept sorted by
size. The gain of a move is a parabola in the moved size, so the best candidate for a pair of
nodes is the one whose size is nearest the parabola's peak: a bisection, not a scan. Sources are
tried from their most loaded shard down, so moves between nodes also even out shards and few
moves inside a node remain. A source that can give nothing to any target is not retried within
the same plan (the next plan, on fresh loads, tries it again).

Tables waiting to merge (``merging``) keep their sibling tablets together: where both siblings
of a pair have a replica on the same (host, shard), those two replicas are one candidate, weighed
as both, and move together to the same target (two migrations), or not at all; a replica its
sibling does not share moves alone, as any other. So balancing never undoes the co-location a
merge waits for (``merge_colocation``), as ScyllaDB's balancer keeps co-located siblings as one
migration candidate; with no merge pending it moves each tablet on its own.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    keep_racks: bool = False
    """Every replica stays in its rack, as under a rack list (for callers that do not know which
    keyspaces list racks: moves between racks could leave a listed rack)."""
    max_per_node: int | None = None
    """At most this many moves planned into or out of one node (its streams in flight)."""
    merging: frozenset[uuid.UUID] = frozenset()
    """Tables whose co-located sibling replicas move only together (a merge waits for them)."""
    no_crossing: bool = False
    """Only moves that leave the target no more loaded (per shard) than the source: a move that
    merely lowers the imbalance measure may swap two nearly equal nodes, and with sizes measured
    from live files (which grow, shrink and are remeasured) the next plan could swap them back.
    The running balancer plans with this on, so it stops moving once nodes are within one tablet."""


Key = tuple[int, int]
"""A tablet inside the plan: (index of its table in ``_Plan.tables``, tablet id). Hosts are their
UUID's ``int``: ``uuid.UUID`` hashes and compares in Python, and the plan does that millions of times."""
Candidate = tuple[int, int, int, int]
"""(bytes of one replica, table index, tablet id, sibling): the sort order of the candidate index.
``sibling`` is -1 for a replica moving alone, else the id of the right sibling of tablet ``tablet
id`` sharing this (host, shard): the pair moves as one, weighing both."""
Unit = tuple[int, int, int]
"""What one move carries: (table index, tablet id, sibling or -1), as in ``Candidate``."""


class _Plan:
    """Loads, placements and the candidate index as the plan would leave them, updated move by move."""

    def __init__(self, inp: BalancerInput) -> None:
        self.inp = inp
        self.nodes = {n.host_id.int: n for n in inp.nodes}
        self.draining = {h.int for h in inp.draining}
        self.node_bytes = {h: 0 for h in self.nodes}
        self.shard_bytes = {h: [0] * n.shard_count for h, n in self.nodes.items()}
        self.dc_racks: dict[str, list[str]] = {}
        for n in inp.nodes:
            racks = self.dc_racks.setdefault(n.dc, [])
            if n.rack not in racks:
                racks.append(n.rack)
        self.tables = sorted(inp.maps)
        self.rack_list_dcs = [
            set(self.dc_racks)
            if inp.keep_racks
            else {dc for dc, rf in inp.replication.get(t, {}).items() if isinstance(rf, tuple)}
            for t in self.tables
        ]
        self.merging = {ti for ti, t in enumerate(self.tables) if t in inp.merging}
        self.replicas: dict[Key, list[TabletReplica]] = {}
        self.sizes: dict[Key, int] = {}
        self.busy: set[Key] = set()
        self.moves: list[Migration] = []
        self.stuck: set[int] = set()
        self.in_flight = {h: 0 for h in self.nodes}
        self.limit = inp.max_per_node
        limit = self.limit
        self.full: Callable[[int], bool] = (
            (lambda h: False) if limit is None else (lambda h: self.in_flight[h] >= limit)
        )
        self.candidates: dict[tuple[int, int, str], list[Candidate]] = {}
        sizes, default = inp.tablet_sizes, inp.default_tablet_size
        for ti, table_id in enumerate(self.tables):
            for tablet_id, tablet in enumerate(inp.maps[table_id].tablets):
                key = (ti, tablet_id)
                size = self.sizes[key] = sizes.get((table_id, tablet_id), default)
                self.replicas[key] = list(tablet.replicas)
                if tablet.new_replicas is None:
                    for replica in tablet.replicas:
                        self._add_load(replica, size)
                    if not tablet.in_transition and ti not in self.merging:
                        self._index(key, size)
                else:
                    for replica in dict.fromkeys(tablet.replicas + tablet.new_replicas):
                        self._add_load(replica, size)
                if tablet.in_transition:
                    self.busy.add(key)
        for ti in self.merging:
            self._index_siblings(ti, inp.maps[self.tables[ti]])
        for entries in self.candidates.values():
            entries.sort()

    def _targets(self, key: Key, replica: TabletReplica) -> list[str]:
        """The racks of its DC a replica of ``key`` may move to without the tablet losing a rack
        (none for a replica on a node outside the plan)."""
        nodes = self.nodes
        node = nodes.get(replica.host.int)
        if node is None:
            return []
        if node.dc in self.rack_list_dcs[key[0]]:
            return [node.rack]
        others = [
            nodes[r.host.int].rack
            for r in self.replicas[key]
            if r != replica and r.host.int in nodes and nodes[r.host.int].dc == node.dc
        ]
        keeps_own = node.rack in others  # another replica holds this rack: any rack will do
        return [t for t in self.dc_racks[node.dc] if t == node.rack or keeps_own or t not in others]

    def _index(self, key: Key, size: int) -> None:
        """File each replica under the racks of its DC it may move to without losing a rack
        (``_targets``, inlined: this runs for every tablet of every plan)."""
        nodes = self.nodes
        placed = [(r, nodes[r.host.int]) for r in self.replicas[key] if r.host.int in nodes]
        entry = (size, *key, -1)
        for replica, node in placed:
            if node.dc in self.rack_list_dcs[key[0]]:
                targets = [node.rack]
            else:
                others = [n.rack for r, n in placed if r is not replica and n.dc == node.dc]
                keeps_own = node.rack in others  # another replica holds this rack: any rack will do
                targets = [
                    t for t in self.dc_racks[node.dc] if t == node.rack or keeps_own or t not in others
                ]
            host = replica.host.int
            for rack in targets:
                self.candidates.setdefault((host, replica.shard, rack), []).append(entry)

    def _index_siblings(self, ti: int, tm: TabletMap) -> None:
        """A merging table's candidates: a (host, shard) both siblings of a pair use is one
        candidate for the pair, any other replica one for its tablet alone."""
        if tm.tablet_count % 2:
            for tablet_id in range(tm.tablet_count):
                if (ti, tablet_id) not in self.busy:
                    self._index((ti, tablet_id), self.sizes[(ti, tablet_id)])
            return
        for left in range(0, tm.tablet_count, 2):
            lk, rk = (ti, left), (ti, left + 1)
            if lk in self.busy or rk in self.busy:
                continue  # one sibling moving: the other's shared replicas wait, lone ones too
            shared = set(self.replicas[lk]) & set(self.replicas[rk])
            pair = (self.sizes[lk] + self.sizes[rk], ti, left, left + 1)
            for replica in shared:
                racks = self._targets(rk, replica)
                self._file(pair, replica, [r for r in self._targets(lk, replica) if r in racks])
            for key in (lk, rk):
                alone = (self.sizes[key], *key, -1)
                for replica in self.replicas[key]:
                    if replica not in shared:
                        self._file(alone, replica, self._targets(key, replica))

    def _file(self, entry: Candidate, replica: TabletReplica, racks: list[str]) -> None:
        for rack in racks:
            self.candidates.setdefault((replica.host.int, replica.shard, rack), []).append(entry)

    def _unindex(self, key: Key) -> None:
        """Drop the tablet's own entries (a pair's entry is skipped as busy when found)."""
        entry = (self.sizes[key], *key, -1)
        for replica in self.replicas[key]:
            node = self.nodes.get(replica.host.int)
            if node is None:
                continue
            for rack in self.dc_racks[node.dc]:
                entries = self.candidates.get((replica.host.int, replica.shard, rack))
                if entries:
                    at = bisect.bisect_left(entries, entry)
                    if at < len(entries) and entries[at] == entry:
                        del entries[at]

    def _add_load(self, replica: TabletReplica, amount: int) -> None:
        host = replica.host.int
        if host not in self.nodes:
            return
        self.node_bytes[host] += amount
        shards = self.shard_bytes[host]
        if 0 <= replica.shard < len(shards):
            shards[replica.shard] += amount

    def utilisation(self, host: int) -> float:
        return self.node_bytes[host] / self.nodes[host].shard_count

    def least_loaded_shard(self, host: int) -> int:
        shards = self.shard_bytes[host]
        return min(range(len(shards)), key=lambda s: (shards[s], s))

    def replica(self, host: int, shard: int) -> TabletReplica:
        return TabletReplica(self.nodes[host].host_id, shard)

    def move(self, unit: Unit, source: TabletReplica, target: TabletReplica) -> None:
        table, tablet, sibling = unit
        for tablet_id in (tablet,) if sibling < 0 else (tablet, sibling):
            key = (table, tablet_id)
            self._unindex(key)
            self._add_load(source, -self.sizes[key])
            self._add_load(target, self.sizes[key])
            self.replicas[key] = [target if r == source else r for r in self.replicas[key]]
            self.busy.add(key)
            self.in_flight[source.host.int] += 1
            if target.host != source.host:
                self.in_flight[target.host.int] += 1
            self.moves.append(Migration(self.tables[table], tablet_id, source, target))

    def racks_kept(self, key: Key, source: int, target: int) -> bool:
        src, dst = self.nodes[source], self.nodes[target]
        if src.dc != dst.dc:
            return False
        if src.dc in self.rack_list_dcs[key[0]]:
            return src.rack == dst.rack
        in_dc = [
            r.host.int
            for r in self.replicas[key]
            if r.host.int in self.nodes and self.nodes[r.host.int].dc == src.dc
        ]
        before = {self.nodes[h].rack for h in in_dc}
        after = {self.nodes[h].rack for h in in_dc if h != source} | {dst.rack}
        return len(after) >= len(before)

    def gain(self, size: int, source: int, target: int) -> float:
        """How much moving ``size`` bytes from source to target lowers sum(bytes^2 / shards)."""
        ls, lt = self.node_bytes[source], self.node_bytes[target]
        cs, ct = self.nodes[source].shard_count, self.nodes[target].shard_count
        return size * ((2 * ls - size) / cs - (2 * lt + size) / ct)

    def free(self, unit: Unit, source: int, target: int) -> bool:
        """No tablet of the unit moving yet, and room for its moves on both nodes."""
        table, tablet, sibling = unit
        if (table, tablet) in self.busy:
            return False
        if sibling < 0:
            return True
        if (table, sibling) in self.busy:
            return False
        limit = self.limit
        return limit is None or all(self.in_flight[h] + 2 <= limit for h in {source, target})

    def movable(self, unit: Unit, source: int, target: int) -> bool:
        table, tablet, sibling = unit
        if not self.free(unit, source, target):
            return False
        for tablet_id in (tablet,) if sibling < 0 else (tablet, sibling):
            key = (table, tablet_id)
            if any(r.host.int == target for r in self.replicas[key]):
                return False
            if not self.racks_kept(key, source, target):
                return False
        return True


def _nearest(entries: list[Candidate], peak: float) -> Iterator[Candidate]:
    """Entries in order of distance of their size from ``peak`` (nearest first)."""
    high = bisect.bisect_left(entries, peak, key=lambda e: e[0])
    low = high - 1
    while low >= 0 or high < len(entries):
        if high >= len(entries) or (low >= 0 and peak - entries[low][0] <= entries[high][0] - peak):
            yield entries[low]
            low -= 1
        else:
            yield entries[high]
            high += 1


def _best_move(plan: _Plan, source: int, target: int) -> tuple[Unit, TabletReplica] | None:
    """A replica on ``source`` worth moving to ``target``, from the source's most loaded shard that
    has one: the one lowering imbalance most (the largest when the source drains)."""
    draining = source in plan.draining
    rack = plan.nodes[target].rack
    shards = plan.shard_bytes[source]
    ls, lt = plan.node_bytes[source], plan.node_bytes[target]
    cs, ct = plan.nodes[source].shard_count, plan.nodes[target].shard_count
    peak = (ls / cs - lt / ct) / (1 / cs + 1 / ct)
    for shard in sorted(range(len(shards)), key=lambda s: (-shards[s], s)):
        entries = plan.candidates.get((source, shard, rack))
        if not entries:
            continue
        order = reversed(entries) if draining else _nearest(entries, peak)
        no_crossing = plan.inp.no_crossing and not draining
        for size, table, tablet, sibling in order:
            if not draining and plan.gain(size, source, target) <= 0:
                break  # every later entry is further from the peak: no gain either
            if no_crossing and size > peak:
                continue  # the target would end up above the source (peak: the size evening them)
            if plan.movable((table, tablet, sibling), source, target):
                return (table, tablet, sibling), plan.replica(source, shard)
    return None


def _inter_node_move(plan: _Plan, dc: str) -> bool:
    in_dc = [h for h, n in plan.nodes.items() if n.dc == dc]
    draining = plan.draining
    sources = sorted(
        (h for h in in_dc if h not in plan.stuck and not plan.full(h)),
        key=lambda h: (h not in draining, -plan.utilisation(h), h),
    )
    targets = sorted(
        (h for h in in_dc if h not in draining and not plan.full(h)), key=lambda h: (plan.utilisation(h), h)
    )
    for source in sources:
        for target in targets:
            if target == source:
                continue
            if source not in draining and plan.utilisation(target) >= plan.utilisation(source):
                break
            found = _best_move(plan, source, target)
            if found is not None:
                unit, replica = found
                plan.move(unit, replica, plan.replica(target, plan.least_loaded_shard(target)))
                return True
        plan.stuck.add(source)
    return False


def _intra_node_move(plan: _Plan, host: int) -> bool:
    if plan.full(host):
        return False
    shards = plan.shard_bytes[host]
    high = max(range(len(shards)), key=lambda s: (shards[s], -s))
    low = plan.least_loaded_shard(host)
    gap = shards[high] - shards[low]
    entries = plan.candidates.get((host, high, plan.nodes[host].rack))
    for size, table, tablet, sibling in _nearest(entries or [], gap / 2):
        if size >= gap:
            break  # nearest to gap/2 first: the rest are no smaller than gap either
        if plan.inp.no_crossing and 2 * size > gap:
            continue  # the low shard would end up above the high one
        if plan.free((table, tablet, sibling), host, host):
            plan.move((table, tablet, sibling), plan.replica(host, high), plan.replica(host, low))
            return True
    return False


def plan_migrations(inp: BalancerInput, max_migrations: int = 16) -> list[Migration]:
    """Up to ``max_migrations`` moves, each tablet at most once; empty when balanced (a pair of
    co-located siblings counts as two moves, so a plan may end one above the bound)."""
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
        for host in sorted(h for h in plan.nodes if h not in plan.draining):
            if len(plan.moves) < max_migrations and _intra_node_move(plan, host):
                progress = True
    return plan.moves
