"""Which nodes hold a token of a table: the one answer every coordinator (writes, reads, Paxos) uses.

Tablet tables take their replicas from the group0 tablet map (host and shard, in the map's
order, which is the allocator's placement order); a tablet in migration is read from the set
its stage reads and written to every set its stage writes (``tablets.migration``).
Vnode tables walk the token ring of the members that own their tokens with the keyspace's
strategy (SimpleStrategy, NetworkTopologyStrategy, EverywhereStrategy); during a topology
request's vnode phase reads use one ring and writes go to the old and the new one
(``topology.vnode_ranges.rings``). The ring walk is precomputed once per (topology,
replication) in a ``dht.ring.ReplicaTable`` so a lookup is a binary search.

A node with no topology yet (in-process tests, a founder before its own join record) is a
cluster of one: every token is local.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from tabletdb.cdc.generation import Generations
from tabletdb.cdc.tablet_streams import StreamSets
from tabletdb.cql.errors import InvalidRequest
from tabletdb.dht.ring import Location, ReplicaTable, TokenRing
from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.group0.topology import Topology, raft_id_of
from tabletdb.schema.model import LOCAL, Catalog, Replication, TableDef
from tabletdb.tablets.migration import read_replicas, write_replicas
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletMapLookup, TabletReplica
from tabletdb.topology.state import TopologyState
from tabletdb.topology.vnode_ranges import rings, strategy_table


class Replica:
    """One replica of a token: the host, its shard (tablets; None for vnode tables, where the
    shard follows from the token) and its datacenter (for LOCAL_* consistency levels).

    Immutable, and hashed once: coordinators put replicas in sets and dicts on every request,
    and hashing a UUID each time showed up in profiles.
    """

    __slots__ = ("_hash", "dc", "host_id", "shard")

    def __init__(self, host_id: uuid.UUID, shard: int | None, dc: str) -> None:
        object.__setattr__(self, "host_id", host_id)
        object.__setattr__(self, "shard", shard)
        object.__setattr__(self, "dc", dc)
        object.__setattr__(self, "_hash", hash((host_id.int, shard, dc)))

    host_id: uuid.UUID
    shard: int | None
    dc: str
    _hash: int

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Replica is immutable (tried to set {name})")

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Replica):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.host_id == other.host_id
            and self.shard == other.shard
            and self.dc == other.dc
        )

    def __repr__(self) -> str:
        return f"Replica({self.host_id}, shard={self.shard}, dc={self.dc!r})"

    @property
    def raft_id(self) -> int:
        """The host's internode RPC id."""
        return raft_id_of(self.host_id)


ReplicaSet = tuple[Replica, ...]


def replica_names(replicas: Iterable[Replica]) -> str:
    """Replicas as a trace event names them: host id, and shard where tablets give one."""
    return ", ".join(str(r.host_id) if r.shard is None else f"{r.host_id}:{r.shard}" for r in replicas)


WriteSets = tuple[ReplicaSet, ...]
"""The replica sets a write must meet its level on: one, or (old, new) during a migration."""


class ShortReplicaSet(tuple[Replica, ...]):
    """A tablet's replicas where its keyspace's RF asks for more in some datacenter than the
    tablet has (the RF was raised by ALTER and the replicas were not added yet). Consistency
    levels count the RF (``rf_by_dc``), not these replicas: CL=ALL must never be met by fewer
    copies than the keyspace claims. Built only by ``ReplicaPlacement``; filtering or slicing
    it gives a plain tuple, which is then just a list of replicas to contact."""

    rf_by_dc: Mapping[str, int]

    def __new__(cls, replicas: ReplicaSet, rf_by_dc: Mapping[str, int]) -> ShortReplicaSet:
        made = super().__new__(cls, replicas)
        made.rf_by_dc = rf_by_dc
        return made


def expected_per_dc(replicas: ReplicaSet) -> dict[str, int]:
    """How many replicas of each datacenter a consistency level counts from: the replicas there,
    or the keyspace's RF where a ``ShortReplicaSet`` has fewer."""
    per_dc: dict[str, int] = {}
    for r in replicas:
        per_dc[r.dc] = per_dc.get(r.dc, 0) + 1
    if isinstance(replicas, ShortReplicaSet):
        for dc, rf in replicas.rf_by_dc.items():
            per_dc[dc] = max(per_dc.get(dc, 0), rf)
    return per_dc


def _short_or_plain(replicas: ReplicaSet, rf_by_dc: Mapping[str, int]) -> ReplicaSet:
    per_dc: dict[str, int] = {}
    for r in replicas:
        per_dc[r.dc] = per_dc.get(r.dc, 0) + 1
    if any(per_dc.get(dc, 0) < rf for dc, rf in rf_by_dc.items()):
        return ShortReplicaSet(replicas, rf_by_dc)
    return replicas


_TabletSets = tuple[TabletInfo, Topology, ReplicaSet, WriteSets, Mapping[str, int]]
_NO_STATE = TopologyState()
"""No topology state machine (in-process tests): every member owns its tokens."""


@dataclass(frozen=True, slots=True)
class _VnodeTables:
    """A vnode keyspace's replicas by token: the ring reads use, and the rings writes go to
    (one; or old and new while a topology request's vnode phase runs)."""

    read: ReplicaTable[uuid.UUID]
    writes: tuple[ReplicaTable[uuid.UUID], ...]
    dcs: dict[uuid.UUID, str]


def union(sets: WriteSets) -> ReplicaSet:
    """Every replica of ``sets`` once, in order."""
    return tuple(dict.fromkeys(r for replicas in sets for r in replicas))


@dataclass(frozen=True, slots=True)
class ReplicatedRange:
    """A non-wrapping token range whose tokens all share one replica set."""

    token_range: TokenRange
    replicas: ReplicaSet


class ReplicaPlacement:
    """Replicas of (table, token) from the current group0 state, in placement order."""

    def __init__(
        self,
        local_host: uuid.UUID,
        local_dc: str,
        topology: Callable[[], Topology],
        catalog: Callable[[], Catalog],
        tablet_maps: Callable[[], Mapping[uuid.UUID, TabletMap]],
        topology_version: Callable[[], int] = lambda: 0,
        cdc_generations: Callable[[], Generations] = tuple,
        topology_state: Callable[[], TopologyState] = lambda: _NO_STATE,
        cdc_stream_sets: Callable[[], StreamSets] = tuple,
    ) -> None:
        """``topology_version``: group0's topology version as this node applied it, stamped on
        writes so replicas can refuse those routed by a fenced-off version (``replica.fencing``).
        ``topology_state``: group0's topology state machine, which says who owns vnode tokens."""
        self._topology_state = topology_state
        self.topology_version = topology_version
        self.cdc_generations = cdc_generations
        """The committed CDC generations of vnode keyspaces (group0), for the replica's CDC log."""
        self.cdc_stream_sets = cdc_stream_sets
        """The stream sets of CDC tablet tables (group0), for the write-time check."""
        self.local_host = local_host
        self.local_dc = local_dc
        self._topology = topology
        self._catalog = catalog
        self._tablet_maps = tablet_maps
        self._vnode_cache: dict[Replication, tuple[Topology, TopologyState, _VnodeTables]] = {}
        self._ranges_cache: dict[uuid.UUID, tuple[object, list[ReplicatedRange]]] = {}
        self._local = (Replica(local_host, None, local_dc),)
        self._dcs_of: tuple[Topology, dict[uuid.UUID, str]] | None = None
        self._tablet_sets: dict[int, _TabletSets] = {}
        """id(tablet info) -> (that info, the topology used, read replicas, write sets): hot-path cache."""
        self._map_of = TabletMapLookup(tablet_maps)
        self._rf_cache: tuple[Catalog | None, TopologyState | None, dict[str, Mapping[str, int]]] = (
            None,
            None,
            {},
        )
        """Per keyspace, the RF of each datacenter, for the catalog and topology state objects it was
        read from."""

    def catalog(self) -> Catalog:
        return self._catalog()

    def tablet_map(self, table_id: uuid.UUID) -> TabletMap | None:
        """The table's current tablet map (None: a vnode table)."""
        return self._map_of(table_id)

    def is_local(self, replica: Replica) -> bool:
        """``==`` on UUIDs runs ``uuid.UUID.__eq__`` (Python) on every write; the local replica
        usually carries this node's own host id object, so identity answers first."""
        host_id = replica.host_id
        return host_id is self.local_host or host_id == self.local_host

    def members(self) -> ReplicaSet:
        """Every node of the cluster (this one alone when there is no topology yet)."""
        members = self._topology().members
        if not members:
            return (Replica(self.local_host, None, self.local_dc),)
        return tuple(Replica(h, None, r.datacenter) for h, r in sorted(members.items()))

    def local_only(self, table: TableDef) -> bool:
        """True if this node is the only replica of every token of ``table`` (RF=1 here, one node)."""
        return all(self.only_local(rr.replicas) for rr in self.ranges(table))

    def only_local(self, replicas: ReplicaSet) -> bool:
        """True if ``replicas`` is this node alone: read-modify-writes may then hold a local lock."""
        return len(replicas) == 1 and not isinstance(replicas, ShortReplicaSet) and self.is_local(replicas[0])

    def replicas(self, table: TableDef, token: int) -> ReplicaSet:
        """The replicas of ``token`` of ``table``, in placement order (primary first)."""
        topology = self._topology()
        if not topology.members:
            return self._local
        tablet_map = self._map_of(table.id)
        if tablet_map is not None:
            return self._tablet_entry(tablet_map.tablet_for(token), topology, self._rf_of(table))[2]
        found = self._vnode_table(table)
        if found is None:
            return self._local
        dcs = found.dcs
        return tuple(Replica(h, None, dcs[h]) for h in found.read.for_token(token))

    def write_sets(self, table: TableDef, token: int) -> WriteSets:
        """The replica sets a write of ``token`` must meet its consistency level on, each on its own.

        One set (the same as ``replicas``) except while a tablet migrates through a stage that
        writes to both its old and new replicas, or a vnode range changes owners in a topology
        request's vnode phase: then (old, new). Counting the level over the
        union instead could acknowledge a QUORUM write held by a minority of the set that serves
        reads once they switch (``tablets.migration``; the topology simulation checks this).
        """
        topology = self._topology()
        if topology.members:
            tablet_map = self._map_of(table.id)
            if tablet_map is not None:
                return self._tablet_entry(tablet_map.tablet_for(token), topology, self._rf_of(table))[3]
            found = self._vnode_table(table)
            if found is not None:
                dcs = found.dcs
                read = tuple(Replica(h, None, dcs[h]) for h in found.read.for_token(token))
                if len(found.writes) == 1:
                    return (read,)
                sets = tuple(
                    tuple(Replica(h, None, dcs[h]) for h in t.for_token(token)) for t in found.writes
                )
                return (read,) if _same_set(sets[0], sets[1]) else sets
        return (self.replicas(table, token),)

    def _rf_of(self, table: TableDef) -> Mapping[str, int]:
        """The RF per datacenter of ``table``'s keyspace (what consistency levels count from).

        While an RF change of the keyspace runs (``topology.rf_change``) the catalog still has the
        old RF; a datacenter's RF going down counts the lower one, so a tablet whose reads moved
        to its smaller replica set is not taken for one short of replicas (CL=ALL would be
        Unavailable until the request ends)."""
        catalog = self._catalog()
        state = self._topology_state()
        cached_catalog, cached_state, by_keyspace = self._rf_cache
        if cached_catalog is not catalog or cached_state is not state:
            by_keyspace = {}
            self._rf_cache = (catalog, state, by_keyspace)
        rf = by_keyspace.get(table.keyspace)
        if rf is None:
            ks = catalog.keyspace(table.keyspace)
            replication = None if ks is None else ks.definition.replication
            rf = {} if replication is None else {dc: replication.factor(dc) for dc, _ in replication.options}
            change = None if state.transition is None else state.transition.request.rf_change
            if change is not None and change.keyspace == table.keyspace:
                target = change.after.replication
                rf = {dc: min(n, target.factor(dc)) for dc, n in rf.items()}
            by_keyspace[table.keyspace] = rf
        return rf

    def _tablet_entry(self, info: TabletInfo, topology: Topology, rf: Mapping[str, int]) -> _TabletSets:
        """(info, topology, read replicas, write sets, rf) of a tablet, cached by the info's identity."""
        cached = self._tablet_sets.get(id(info))
        if cached is not None and cached[0] is info and cached[1] is topology and cached[4] is rf:
            return cached
        dcs = self._dcs()

        def placed(replicas: tuple[TabletReplica, ...]) -> ReplicaSet:
            return tuple(Replica(r.host, r.shard, dcs.get(r.host, self.local_dc)) for r in replicas)

        reads = _short_or_plain(placed(read_replicas(info)), rf)
        writes = write_replicas(info)
        if info.new_replicas is not None and len(writes) > len(info.replicas):
            sets: WriteSets = (
                _short_or_plain(placed(info.replicas), rf),
                _short_or_plain(placed(info.new_replicas), rf),
            )
        else:
            sets = (reads if writes == read_replicas(info) else _short_or_plain(placed(writes), rf),)
        if len(self._tablet_sets) > 65536:
            self._tablet_sets.clear()
        entry = (info, topology, reads, sets, rf)
        self._tablet_sets[id(info)] = entry
        return entry

    def ranges(self, table: TableDef) -> list[ReplicatedRange]:
        """The whole ring in token order as non-wrapping ranges, each with its replicas.

        Adjacent ranges whose replica *sets* are equal are merged (RF=3 on three nodes is one
        range), so a scan asks each replica once per merged range instead of once per vnode.
        """
        tablet_map = self._tablet_maps().get(table.id)
        topology = self._topology()
        ks = self._catalog().keyspace(table.keyspace)
        version = (
            tablet_map,
            topology,
            None if ks is None else ks.definition.replication,
            self._topology_state(),
        )
        cached = self._ranges_cache.get(table.id)
        if cached is not None and _same_version(cached[0], version):
            return cached[1]
        computed = self._compute_ranges(table, tablet_map)
        if len(self._ranges_cache) > 1024:
            self._ranges_cache.clear()
        self._ranges_cache[table.id] = (version, computed)
        return computed

    def _compute_ranges(self, table: TableDef, tablet_map: TabletMap | None) -> list[ReplicatedRange]:
        if not self._topology().members:
            return [ReplicatedRange(TokenRange(MIN_TOKEN, MAX_TOKEN), self._local)]
        pieces: list[ReplicatedRange] = []
        if tablet_map is not None:
            for tablet_id in range(tablet_map.tablet_count):
                token_range = tablet_map.range_of(tablet_id)
                pieces.append(ReplicatedRange(token_range, self.replicas(table, token_range.end)))
        else:
            found = self._vnode_table(table)
            if found is None:
                local = (Replica(self.local_host, None, self.local_dc),)
                return [ReplicatedRange(TokenRange(MIN_TOKEN, MAX_TOKEN), local)]
            ring_table, dcs = found.read, found.dcs
            tokens = ring_table.ring.tokens
            for i, end in enumerate(tokens):
                start = MIN_TOKEN if i == 0 else tokens[i - 1]
                if start < end:
                    replicas = tuple(Replica(h, None, dcs[h]) for h in ring_table.replicas[i])
                    pieces.append(ReplicatedRange(TokenRange(start, end), replicas))
            if tokens[-1] < MAX_TOKEN:
                wrap = tuple(Replica(h, None, dcs[h]) for h in ring_table.replicas[0])
                pieces.append(ReplicatedRange(TokenRange(tokens[-1], MAX_TOKEN), wrap))
        return _merge_adjacent(pieces)

    def _dcs(self) -> dict[uuid.UUID, str]:
        topology = self._topology()
        if self._dcs_of is None or self._dcs_of[0] is not topology:
            self._dcs_of = (topology, {h: r.datacenter for h, r in topology.members.items()})
        return self._dcs_of[1]

    def _vnode_table(self, table: TableDef) -> _VnodeTables | None:
        topology = self._topology()
        ks = self._catalog().keyspace(table.keyspace)
        if ks is None:
            raise InvalidRequest(f"Keyspace {table.keyspace} does not exist")
        replication = ks.definition.replication
        if replication.strategy_class == LOCAL:
            return None
        state = self._topology_state()
        cached = self._vnode_cache.get(replication)
        if cached is not None and cached[0] is topology and cached[1] is state:
            return cached[2]
        found = rings(state, {h: r.tokens for h, r in topology.members.items()})
        if not found.read:
            return None
        locations = members_locations(topology)

        def table_of(ring: dict[uuid.UUID, tuple[int, ...]]) -> ReplicaTable[uuid.UUID]:
            return strategy_table(TokenRing.from_assignments(ring), replication, locations)

        read = table_of(found.read)
        writes = tuple(read if ring == found.read else table_of(ring) for ring in found.writes)
        dcs = {h: r.datacenter for h, r in topology.members.items()}
        entry = _VnodeTables(read, writes, dcs)
        if len(self._vnode_cache) > 64:
            self._vnode_cache.clear()
        self._vnode_cache[replication] = (topology, state, entry)
        return entry


def _same_version(a: object, b: tuple[object, ...]) -> bool:
    """Same tablet map, topology and topology state objects (identity: group0 replaces them on
    change), same replication."""
    assert isinstance(a, tuple)
    return a[0] is b[0] and a[1] is b[1] and a[2] == b[2] and a[3] is b[3]


def members_locations(topology: Topology) -> dict[uuid.UUID, Location]:
    return {h: Location(r.datacenter, r.rack) for h, r in topology.members.items()}


def vnode_replica_table(
    topology: Topology, replication: Replication, topology_state: TopologyState = _NO_STATE
) -> ReplicaTable[uuid.UUID] | None:
    """Every vnode range's replicas under ``replication`` in the ring reads use (None: a local
    keyspace, or no node owns tokens yet); what operators' ring views (nodetool describering,
    ownership) show, the same ring ``ReplicaPlacement`` reads."""
    if replication.strategy_class == LOCAL:
        return None
    read = rings(topology_state, {h: r.tokens for h, r in topology.members.items()}).read
    if not read:
        return None
    return strategy_table(TokenRing.from_assignments(read), replication, members_locations(topology))


def _merge_adjacent(pieces: list[ReplicatedRange]) -> list[ReplicatedRange]:
    out: list[ReplicatedRange] = []
    for piece in pieces:
        if out and _same_set(out[-1].replicas, piece.replicas):
            last = out[-1]
            out[-1] = ReplicatedRange(
                TokenRange(last.token_range.start, piece.token_range.end), last.replicas
            )
        else:
            out.append(piece)
    return out


def _same_set(a: ReplicaSet, b: ReplicaSet) -> bool:
    """Same hosts: each host answers a range from all its local stores, whatever their shards."""
    return {r.host_id for r in a} == {r.host_id for r in b}
