"""The world a topology simulation runs in: nodes with their own (possibly stale) view of
group0, their replica data, a group0 that applies state-id-guarded topology commands, a network
that partitions, and clients writing at QUORUM through whichever node they reach.

Group0 itself is modelled as one linearizable log (the Raft core has its own simulation, `sim
raft`): a command reaches it after a delay and only from the majority side of a partition, and
nodes learn committed states a little later, each at its own pace. A node that restarts
catches up with group0 before it serves, as the real node does before it opens its CQL port.
Data is a set of keys per (host, tablet): enough to tell on which replicas an acknowledged write
lives at every moment. Beside the tablet table there is a vnode table (SimpleStrategy, the same
RF) whose keys live where each node's view of the token ring puts them: every host draws its
tokens when it is created, and the topology state says who owns them
(`topology.vnode_ranges`).
"""

from __future__ import annotations

import functools
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from tabletdb.dht.murmur3 import token_of
from tabletdb.dht.ring import ReplicaTable, TokenRing
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.schema.model import SIMPLE, Catalog, Replication
from tabletdb.schema.mutations import PutKeyspace, apply_mutations
from tabletdb.sim.events import EventLoop
from tabletdb.tablets.migration import read_replicas, write_replicas
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.commands import TopologyCommand, apply_command
from tabletdb.topology.state import TopologyState, TopoNode
from tabletdb.topology.states import NodeState

TABLE = uuid.UUID(int=0x7AB1E)
VTABLE = uuid.UUID(int=0x7AB1F)
TOKENS_PER_HOST = 3


@functools.cache
def vnode_token(key: int) -> int:
    return token_of(b"%d" % key)


@dataclass(frozen=True)
class Snapshot:
    """One committed group0 value (topology state, tablet maps, and the catalog an RF change's
    last step writes)."""

    index: int
    topology: TopologyState
    tablets: Mapping[uuid.UUID, TabletMap]
    catalog: Catalog = field(default_factory=Catalog)


@dataclass
class SimHost:
    host_id: uuid.UUID
    name: str
    up: bool = True
    serving: bool = True
    """False after a restart until the node caught up with group0."""
    gone: bool = False
    """Stopped for good (left, or killed to be removed/replaced); never restarts."""
    view: int = 0
    """Index of the group0 snapshot this node has applied."""
    down_since: int | None = None
    data: dict[int, set[int]] = field(default_factory=dict)
    """tablet id -> keys this node holds for it."""
    vdata: set[int] = field(default_factory=set)
    """Keys of the vnode table this node holds."""


def quorum(n: int) -> int:
    return n // 2 + 1


class World:
    def __init__(self, rng: random.Random, loop: EventLoop, nodes: int, tablets: int, rf: int) -> None:
        self.rng = rng
        self.loop = loop
        self.hosts: dict[uuid.UUID, SimHost] = {}
        self.side: dict[uuid.UUID, int] = {}
        """Partition side of each host (0 or 1); side 0 is where group0's majority is."""
        self.trace: list[str] = []
        self.violations: list[str] = []
        self.accepted_prev: dict[uuid.UUID, str] = {}
        self.acked: dict[int, set[int]] = {}
        """tablet id -> keys whose QUORUM write was acknowledged."""
        self.vacked: set[int] = set()
        """Keys of the vnode table whose QUORUM write was acknowledged."""
        self.tokens: dict[uuid.UUID, tuple[int, ...]] = {}
        self.replication = Replication(SIMPLE, (("replication_factor", str(rf)),))
        self._tables: dict[frozenset[tuple[uuid.UUID, tuple[int, ...]]], ReplicaTable[uuid.UUID]] = {}
        self.writes_acked = 0
        self.writes_failed = 0
        self.unguarded = False
        """Planted bug: group0 applies topology commands without the state-id guard."""
        ids = [self.new_host(f"n{i}") for i in range(nodes)]
        replicas = [[TabletReplica(ids[(i + j) % nodes], 0) for j in range(rf)] for i in range(tablets)]
        topology = TopologyState(
            state_id=self.new_id(), nodes={h: TopoNode(h, NodeState.NORMAL) for h in ids}
        )
        self.snapshots = [Snapshot(0, topology, {TABLE: TabletMap.even(TABLE, replicas)})]

    # --- identity and logging -------------------------------------------------------------

    def new_id(self) -> uuid.UUID:
        return uuid.UUID(int=self.rng.getrandbits(128), version=4)

    def new_host(self, name: str) -> uuid.UUID:
        host = SimHost(self.new_id(), name)
        self.hosts[host.host_id] = host
        self.side[host.host_id] = 0
        taken = {t for ts in self.tokens.values() for t in ts}
        mine: set[int] = set()
        while len(mine) < TOKENS_PER_HOST:
            token = self.rng.randint(MIN_TOKEN + 1, MAX_TOKEN)
            if token not in taken:
                mine.add(token)
        self.tokens[host.host_id] = tuple(sorted(mine))
        return host.host_id

    def vnode_view(self) -> vp.VnodeView:
        return vp.VnodeView(dict(self.tokens), (vp.VnodeTable(VTABLE, self.replication),), {})

    def vnode_table(self, ring: vr.Ring) -> ReplicaTable[uuid.UUID]:
        key = frozenset(ring.items())
        table = self._tables.get(key)
        if table is None:
            if len(self._tables) > 256:
                self._tables.clear()
            table = self._tables[key] = vr.strategy_table(
                TokenRing.from_assignments(ring), self.replication, {}
            )
        return table

    def name(self, host: uuid.UUID) -> str:
        h = self.hosts.get(host)
        return h.name if h else str(host)[:8]

    def log(self, text: str) -> None:
        self.trace.append(f"{self.loop.now:>7} {text}")

    def violation(self, text: str) -> None:
        self.violations.append(f"at {self.loop.now} ms: {text}")
        self.log(f"VIOLATION {text}")

    # --- group0 ------------------------------------------------------------------------------

    @property
    def committed(self) -> Snapshot:
        return self.snapshots[-1]

    def view_of(self, host: uuid.UUID) -> Snapshot:
        return self.snapshots[self.hosts[host].view]

    def in_majority(self, host: uuid.UUID) -> bool:
        return self.side[host] == 0

    def reachable(self, a: uuid.UUID, b: uuid.UUID) -> bool:
        return self.hosts[a].up and self.hosts[b].up and self.side[a] == self.side[b]

    def apply(self, command: TopologyCommand, origin: str) -> bool:
        """Group0 applies `command` (guarded by its state id); True if it took effect."""
        last = self.committed
        schema = command.schema
        if schema is not None and schema.catalog_version != last.catalog.version:
            self.log(f"stale  {origin}: {command.reason} (the catalog moved on)")
            return False
        topology, changed, ok = apply_command(last.topology, last.tablets, command)
        if not ok and self.unguarded:
            topology, changed, ok = command.topology, dict(command_updates(last.tablets, command)), True
        if not ok:
            self.log(f"stale  {origin}: {command.reason}")
            return False
        prev = command.prev_state_id
        if prev in self.accepted_prev:
            self.violation(
                f"two coordinators acted on state id {prev}: {self.accepted_prev[prev]!r} "
                f"and {origin}: {command.reason!r}"
            )
        self.accepted_prev[prev] = f"{origin}: {command.reason}"
        catalog = last.catalog
        if ok and schema is not None:  # a finished RF change writes the keyspace's new replication
            catalog = apply_mutations(catalog, (PutKeyspace(schema.keyspace),), command.new_state_id)
        self.snapshots.append(Snapshot(len(self.snapshots), topology, {**last.tablets, **changed}, catalog))
        self.log(f"commit {origin}: {command.reason} (version {topology.version})")
        self.check_replicas("commit")
        return True

    def catch_up(self, host: uuid.UUID, full: bool) -> None:
        h = self.hosts[host]
        if not h.up or not self.in_majority(host):
            return
        if h.view == self.committed.index:
            h.serving = True
            return
        h.view = self.committed.index if full or not h.serving else min(self.committed.index, h.view + 1)
        h.serving = True
        self.check_replicas("catch-up")

    # --- data plane ----------------------------------------------------------------------------

    def coordinators(self) -> list[uuid.UUID]:
        """Nodes that serve clients: up, caught up since their last start, and token owners by
        their own view of group0 (a node serves CQL once it is NORMAL, until it has left)."""
        return [
            h
            for h in sorted(self.hosts)
            if self.hosts[h].up
            and self.hosts[h].serving
            and not self.hosts[h].gone
            and self.view_of(h).topology.state_of(h) in (NodeState.NORMAL, NodeState.DECOMMISSIONING)
        ]

    def write(self, via: uuid.UUID, key: int, drop: float) -> None:
        """A QUORUM write coordinated by `via` on its own view; acknowledged if a quorum of
        every replica set it must reach (both sets while a tablet's writes go to both) took it."""
        tablets = self.view_of(via).tablets[TABLE]
        tid = key % tablets.tablet_count
        info = tablets.tablets[tid]
        version = self.view_of(via).topology.version
        took: set[uuid.UUID] = set()
        for r in write_replicas(info):
            if self.takes_write(via, r.host, version, drop):
                self.hosts[r.host].data.setdefault(tid, set()).add(key)
                took.add(r.host)
        if acknowledged(info, took):
            self.acked.setdefault(tid, set()).add(key)
            self.writes_acked += 1
        else:
            self.writes_failed += 1

    def takes_write(self, via: uuid.UUID, host: uuid.UUID, version: int, drop: float) -> bool:
        """Whether replica ``host`` takes a write ``via`` coordinates by topology ``version``: it
        is reached and serving, the message is not lost (chance ``drop``), and the version is not
        fenced (the writer routes by a version the replica no longer accepts)."""
        if not self.reachable(via, host) or not self.hosts[host].serving or self.rng.random() < drop:
            return False
        return version >= self.view_of(host).topology.fence_version

    def vnode_write(self, via: uuid.UUID, key: int, drop: float) -> None:
        """A QUORUM write of the vnode table coordinated by `via` on its own view of the ring:
        acknowledged if a quorum of every replica set it writes (both rings in a vnode phase) took it."""
        view = self.view_of(via).topology
        rings = vr.rings(view, self.tokens)
        token = vnode_token(key)
        sets = [self.vnode_table(ring).for_token(token) for ring in rings.writes]
        took: set[uuid.UUID] = set()
        for h in {h for replicas in sets for h in replicas}:
            if self.takes_write(via, h, view.version, drop):
                self.hosts[h].vdata.add(key)
                took.add(h)
        if all(len(took & set(replicas)) >= quorum(len(replicas)) for replicas in sets):
            self.vacked.add(key)
            self.writes_acked += 1
        else:
            self.writes_failed += 1

    def vnode_keys(self, host: uuid.UUID, ranges: list[TokenRange]) -> set[int]:
        return {k for k in self.hosts[host].vdata if any(r.contains(vnode_token(k)) for r in ranges)}

    def vnode_cleanup(self, host: uuid.UUID) -> None:
        """The node drops the vnode keys it replicates in none of its view's rings."""
        h = self.hosts[host]
        kept = vr.kept_ranges(vr.rings(self.view_of(host).topology, self.tokens), host, self.replication, {})
        h.vdata = {k for k in h.vdata if any(r.contains(vnode_token(k)) for r in kept)}
        self.check_replicas("vnode cleanup")

    def stream(
        self,
        table_id: uuid.UUID,
        tid: int,
        sources: tuple[TabletReplica, ...],
        target: TabletReplica,
        copy: object,
    ) -> None:
        """The target takes `copy` (what ``snapshot_of`` read from the sources when it began)."""
        assert isinstance(copy, set)
        self.hosts[target.host].data.setdefault(tid, set()).update(copy)

    def snapshot_of(self, table_id: uuid.UUID, tid: int, sources: tuple[TabletReplica, ...]) -> object:
        """What a stream of the tablet reads from its sources (world-specific; ``stream`` takes it)."""
        out: set[int] = set()
        for r in sources:
            out |= self.hosts[r.host].data.get(tid, set())
        return out

    def cleanup(self, table_id: uuid.UUID, tid: int, replica: TabletReplica) -> None:
        self.hosts[replica.host].data.pop(tid, None)
        self.check_replicas("cleanup")

    # --- the invariant ---------------------------------------------------------------------------

    def check_replicas(self, when: str) -> None:
        """Every acknowledged write is on a quorum of the replicas any serving node (and group0's
        latest state) would read it from."""
        views = {self.committed.index} | {self.hosts[h].view for h in self.coordinators()}
        seen: set[tuple[int, tuple[TabletReplica, ...]]] = set()
        for index in sorted(views):
            tm = self.snapshots[index].tablets[TABLE]
            for tid, keys in sorted(self.acked.items()):
                readers = read_replicas(tm.tablets[tid])
                if (tid, readers) in seen:
                    continue
                seen.add((tid, readers))
                need = quorum(len(readers))
                for key in sorted(keys):
                    holders = [r.host for r in readers if key in self.hosts[r.host].data.get(tid, ())]
                    if len(holders) < need:
                        self.violation(
                            f"acknowledged write {key} (tablet {tid}) is on {len(holders)} of its "
                            f"{len(readers)} read replicas {[self.name(r.host) for r in readers]} "
                            f"(view {index}, after {when})"
                        )
                        return
        tables_seen: set[int] = set()
        for index in sorted(views):
            read = vr.rings(self.snapshots[index].topology, self.tokens).read
            if not read:
                continue
            table = self.vnode_table(read)
            if id(table) in tables_seen:
                continue
            tables_seen.add(id(table))
            held = [[self.hosts[h].vdata for h in row] for row in table.replicas]
            for key in sorted(self.vacked):
                row = table.ring.index_of(vnode_token(key))
                if sum(1 for data in held[row] if key in data) < quorum(len(held[row])):
                    vreaders = table.replicas[row]
                    vholders = [h for h in vreaders if key in self.hosts[h].vdata]
                    self.violation(
                        f"acknowledged vnode write {key} is on {len(vholders)} of its {len(vreaders)} "
                        f"read replicas {[self.name(h) for h in vreaders]} (view {index}, after {when})"
                    )
                    return


def _write_groups(info: TabletInfo) -> list[tuple[TabletReplica, ...]]:
    """The replica sets a write must reach a quorum of: both while writes go to both."""
    targets = write_replicas(info)
    if info.new_replicas is not None and len(targets) > len(info.replicas):
        return [info.replicas, info.new_replicas]
    return [targets]


def acknowledged(info: TabletInfo, took: set[uuid.UUID]) -> bool:
    """Whether a QUORUM write of the tablet that the hosts ``took`` took is acknowledged: a
    quorum of every replica set it must reach (both while its writes go to both)."""
    return all(len(took & {r.host for r in group}) >= quorum(len(group)) for group in _write_groups(info))


def command_updates(
    tablets: Mapping[uuid.UUID, TabletMap], command: TopologyCommand
) -> dict[uuid.UUID, TabletMap]:
    """The planted bug's apply: tablet entries overwritten whatever they are now."""
    out: dict[uuid.UUID, TabletMap] = {}
    for u in command.tablet_updates:
        tm = out.get(u.table_id) or tablets[u.table_id]
        out[u.table_id] = tm.with_tablet(u.tablet_id, u.after)
    return out
