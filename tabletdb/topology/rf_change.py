"""RF changes of tablets keyspaces as topology requests (``keyspace_rf_change``): pure planning
and the request's steps.

An ALTER KEYSPACE that changes a tablets keyspace's replication queues a request; the catalog
keeps the old replication meanwhile. When the coordinator starts it, every tablet of every table
of the keyspace (views, index tables and CDC log tables included) whose replicas do not fit the
new replication begins one transition: a replica added is a REBUILD-like add (the new replica
takes writes from ``write_both_read_old`` on, is filled at ``streaming`` from every existing
replica, and serves reads from ``write_both_read_new``), a replica dropped stops serving reads
at ``write_both_read_new`` and its file is deleted at ``cleanup``; a rack-list change that
swaps racks is a MIGRATION from the rack left to the rack named. They go through the same
lockstep stages, barriers, streaming, cleanup and rollback as any request's moves
(``topology.coordinator``). Once no tablet of the keyspace is short or over (tables created
meanwhile were placed with the old replication: they get a batch of their own), one group0
command writes the new keyspace definition and records the request done, guarded by both the
topology state id and the catalog version the check was made on, so the schema never claims an
RF that some tablet does not have.

Where replicas go (deterministic, ties by host id): an added replica goes to a live normal node
of the datacenter that does not hold the tablet, in a listed rack for a rack list, otherwise in
the rack this tablet uses least, then the node holding the fewest tablet replicas; a dropped
replica is, in order, one on a node that is down or not normal, one in a rack the rack list does
not name (or a second one in a named rack), one in the rack holding most of the tablet's
replicas, on the most loaded node. A CDC log table's tablet that shares its base tablet's
replicas gets the same new replicas, so log partitions stay with their base's.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tabletdb.schema.model import Catalog, RackList
from tabletdb.tablets.colocation import planning_maps
from tabletdb.tablets.migration import STAGE_ORDER
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind
from tabletdb.topology.commands import TabletUpdate
from tabletdb.topology.placement import PlanError
from tabletdb.topology.rf_request import SchemaUpdate
from tabletdb.topology.state import Request, RequestResult, TopologyState, Transition
from tabletdb.topology.states import TransitionState

Locations = Mapping[uuid.UUID, tuple[str, str]]
Target = Mapping[str, str | RackList]
"""The new replication's options: datacenter -> RF (a number string) or rack list."""
Planned = list[tuple[uuid.UUID, int, TabletInfo]]


@dataclass(frozen=True)
class RfStep:
    """The next topology value, the tablet updates that go with it, and (when the request
    finishes) the keyspace definition to write with it."""

    topology: TopologyState
    updates: tuple[TabletUpdate, ...]
    reason: str
    schema: SchemaUpdate | None = None


def keyspace_tables(
    catalog: Catalog, keyspace: str, tablets: Mapping[uuid.UUID, TabletMap]
) -> list[uuid.UUID]:
    """The keyspace's tables (views and index tables included) that are planned, in id order:
    those with a tablet map that is not co-located with another's (a CDC log's tablets move with
    its base's, ``tablets.colocation``: the command repeats the base's updates for them)."""
    planned = planning_maps(tablets)
    ids = catalog.ids
    return sorted((t for t in ids if ids[t][0] == keyspace and t in planned), key=lambda t: t.bytes)


class _Loads:
    """Tablet replicas per host (all tables: where a new replica goes) and per shard of the
    table being planned (which shard of the chosen host takes it), updated as moves are planned."""

    def __init__(self, tablets: Mapping[uuid.UUID, TabletMap], shards: Mapping[uuid.UUID, int]) -> None:
        self.hosts: dict[uuid.UUID, int] = {}
        for tm in tablets.values():
            for replica, count in tm.replica_load().items():
                self.hosts[replica.host] = self.hosts.get(replica.host, 0) + count
        self.shard_counts = shards
        self.table_shards: dict[uuid.UUID, list[int]] = {}

    def for_table(self, tm: TabletMap) -> None:
        self.table_shards = {}
        for replica, count in tm.replica_load().items():
            per = self._shards(replica.host)
            if replica.shard < len(per):
                per[replica.shard] += count

    def _shards(self, host: uuid.UUID) -> list[int]:
        return self.table_shards.setdefault(host, [0] * max(1, self.shard_counts.get(host, 1)))

    def take(self, host: uuid.UUID) -> TabletReplica:
        per = self._shards(host)
        shard = min(range(len(per)), key=lambda s: (per[s], s))
        per[shard] += 1
        self.hosts[host] = self.hosts.get(host, 0) + 1
        return TabletReplica(host, shard)

    def drop(self, replica: TabletReplica) -> None:
        self.hosts[replica.host] = self.hosts.get(replica.host, 0) - 1


def _describe(replicas: Sequence[TabletReplica]) -> str:
    return ", ".join(str(r.host) for r in replicas) or "none"


def _new_replicas(
    table_id: uuid.UUID,
    tablet_id: int,
    info: TabletInfo,
    target: Target,
    where: Locations,
    eligible: frozenset[uuid.UUID],
    loads: _Loads,
) -> tuple[TabletReplica, ...] | None:
    """The tablet's replicas under ``target`` (None: it fits already)."""
    dropped: list[TabletReplica] = []
    added: list[TabletReplica] = []
    dcs = sorted(set(target) | {where.get(r.host, ("", ""))[0] for r in info.replicas})
    for dc in dcs:
        wanted = target.get(dc, "0")
        in_dc = [r for r in info.replicas if where.get(r.host, ("", ""))[0] == dc]

        def rack(host: uuid.UUID) -> str:
            return where.get(host, ("", ""))[1]

        def drop_order(r: TabletReplica, in_dc: list[TabletReplica] = in_dc) -> tuple[bool, int, int, bytes]:
            same_rack = sum(1 for o in in_dc if rack(o.host) == rack(r.host))
            return (r.host in eligible, -same_rack, -loads.hosts.get(r.host, 0), r.host.bytes)

        keep = sorted(in_dc, key=drop_order)
        missing: list[str | None]
        if isinstance(wanted, tuple):
            seen: set[str] = set()
            for r in reversed(keep):  # the replica least worth dropping keeps its rack
                if rack(r.host) in wanted and rack(r.host) not in seen:
                    seen.add(rack(r.host))
                else:
                    dropped.append(r)
            missing = [x for x in wanted if x not in seen]
        else:
            count = int(wanted)
            dropped.extend(keep[: max(0, len(keep) - count)])
            missing = [None] * max(0, count - len(keep))
        holding = {r.host for r in info.replicas} | {r.host for r in added}
        for want_rack in missing:
            now = [r for r in info.replicas if r not in dropped and where.get(r.host, ("", ""))[0] == dc] + [
                r for r in added if where.get(r.host, ("", ""))[0] == dc
            ]
            racks_used = [rack(r.host) for r in now]
            candidates = [
                h
                for h in eligible
                if where.get(h, ("", ""))[0] == dc
                and h not in holding
                and (want_rack is None or rack(h) == want_rack)
            ]
            if not candidates:
                place = f"rack {want_rack!r} of datacenter {dc!r}" if want_rack else f"datacenter {dc!r}"
                raise PlanError(
                    f"tablet {tablet_id} of table {table_id} needs another replica in {place} and no live "
                    f"normal node there is free to take it (its replicas: {_describe(info.replicas)}); "
                    "add a node there first"
                )
            host = min(candidates, key=lambda h: (racks_used.count(rack(h)), loads.hosts.get(h, 0), h.bytes))
            holding.add(host)
            added.append(loads.take(host))
    if not dropped and not added:
        return None
    if len(dropped) > 1 or len(added) > 1:  # a write quorum of the old set might miss the copies
        raise PlanError(
            f"tablet {tablet_id} of table {table_id} would change {len(dropped) + len(added)} replicas at "
            f"once (its replicas: {_describe(info.replicas)}); change the replication one rack at a time"
        )
    for r in dropped:
        loads.drop(r)
    return tuple(r for r in info.replicas if r not in dropped) + tuple(added)


def _begun(info: TabletInfo, new: tuple[TabletReplica, ...]) -> TabletInfo:
    swaps = any(r not in new for r in info.replicas) and any(r not in info.replicas for r in new)
    kind = TransitionKind.MIGRATION if swaps else TransitionKind.REBUILD
    return TabletInfo(info.last_token, info.replicas, new, STAGE_ORDER[0], kind)


def plan(
    catalog: Catalog,
    keyspace: str,
    target: Target,
    tablets: Mapping[uuid.UUID, TabletMap],
    shards: Mapping[uuid.UUID, int],
    locations: Locations,
    eligible: frozenset[uuid.UUID],
) -> Planned:
    """Every tablet of the keyspace (not already in transition) whose replicas do not fit
    ``target``, with its transition begun; PlanError if one cannot be placed."""
    loads = _Loads(tablets, shards)
    out: Planned = []
    for table_id in keyspace_tables(catalog, keyspace, tablets):
        tm = tablets[table_id]
        loads.for_table(tm)
        for tid, info in enumerate(tm.tablets):
            if info.in_transition:
                continue
            new = _new_replicas(table_id, tid, info, target, locations, eligible, loads)
            if new is not None:
                out.append((table_id, tid, _begun(info, new)))
    return out


def _eligible(topology: TopologyState, alive: frozenset[uuid.UUID]) -> frozenset[uuid.UUID]:
    return frozenset(h for h in topology.normal_nodes() if h not in topology.ignored and h in alive)


def _fail(topology: TopologyState, request: Request, error: str) -> RfStep:
    after = topology.finished(RequestResult(request, error))
    return RfStep(after, (), f"refuse {request.kind.value} of {request.subject}: {error}")


def _updates(tablets: Mapping[uuid.UUID, TabletMap], moves: Planned) -> tuple[TabletUpdate, ...]:
    return tuple(TabletUpdate(t, i, tablets[t].tablets[i], info) for t, i, info in moves)


def start(
    topology: TopologyState,
    request: Request,
    catalog: Catalog,
    tablets: Mapping[uuid.UUID, TabletMap],
    shards: Mapping[uuid.UUID, int],
    locations: Locations,
    alive: frozenset[uuid.UUID],
) -> RfStep:
    """Begin the request: every misfit tablet's transition, or the request refused."""
    change = request.rf_change
    assert change is not None  # admission refuses an RF change without one
    ks = catalog.keyspace(change.keyspace)
    if ks is None or not ks.definition.uses_tablets:
        return _fail(topology, request, f"keyspace {change.keyspace} no longer exists")
    if ks.definition.replication != change.before.replication:
        return _fail(
            topology,
            request,
            f"the replication of keyspace {change.keyspace} changed after the ALTER was decided; "
            "run the ALTER again",
        )
    try:
        moves = plan(
            catalog,
            change.keyspace,
            dict(change.after.replication.options),
            tablets,
            shards,
            locations,
            _eligible(topology, alive),
        )
    except PlanError as e:
        return _fail(topology, request, f"cannot change the replication of {change.describe()}: {e}")
    after = replace(
        topology,
        queue=tuple(r for r in topology.queue if r.request_id != request.request_id),
        transition=Transition(request, TransitionState.TABLET_MIGRATION, tablets_moved=bool(moves)),
        version=topology.version + 1,
    )
    return RfStep(
        after,
        _updates(tablets, moves),
        f"start {request.kind.value} of {change.describe()}: {len(moves)} tablet(s)",
    )


def advance(
    topology: TopologyState,
    tr: Transition,
    catalog: Catalog,
    tablets: Mapping[uuid.UUID, TabletMap],
    shards: Mapping[uuid.UUID, int],
    locations: Locations,
    alive: frozenset[uuid.UUID],
) -> RfStep:
    """With no tablet of the request in transition: a batch for the tablets still misfit (tables
    created meanwhile), or the new definition written and the request done (or failed, if such a
    table cannot be placed now: its earlier batches stay done, the schema keeps the old RF)."""
    request = tr.request
    change = request.rf_change
    assert change is not None
    ks = catalog.keyspace(change.keyspace)
    if ks is None or not ks.definition.uses_tablets:
        done = topology.finished(RequestResult(request, f"keyspace {change.keyspace} was dropped"))
        after = replace(done, version=topology.version + 1, fence_version=topology.version)
        return RfStep(after, (), f"end {request.kind.value} of dropped keyspace {change.keyspace}")
    target = dict(change.after.replication.options)
    try:
        moves = plan(catalog, change.keyspace, target, tablets, shards, locations, _eligible(topology, alive))
    except PlanError as e:  # a table created meanwhile cannot be placed: waiting would hold up
        # every other request (a removenode that could fix it among them), so the change fails
        error = f"cannot change the replication of {change.describe()}: {e}"
        done = topology.finished(RequestResult(request, error))
        after = replace(done, version=topology.version + 1, fence_version=topology.version)
        return RfStep(after, (), f"fail {request.kind.value} of {change.describe()}")
    if moves:
        after = replace(topology, version=topology.version + 1)
        why = f"{request.kind.value} of {change.describe()}: {len(moves)} more tablet(s)"
        return RfStep(after, _updates(tablets, moves), why)
    done = topology.finished(RequestResult(request))
    after = replace(done, version=topology.version + 1, fence_version=topology.version)
    schema = SchemaUpdate(catalog.version, change.merged_into(ks.definition))
    return RfStep(after, (), f"finish {request.kind.value} of {change.describe()}", schema)
