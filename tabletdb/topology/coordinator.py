"""The topology coordinator as a pure step function: (group0 state, observations) -> one action.

Whichever node leads group0 runs it in a loop: it executes the action it gets (a global barrier,
tablet streaming, cleanup of old replicas, or proposing a group0 command), records what it
observed, and asks again. Nothing lives outside group0 except those observations, which a new
coordinator simply gathers again; so a coordinator that crashes at any point is replaced by one
that resumes from the same state (or, if the request can no longer finish, rolls it back).

Tablet migrations of a request advance in lockstep, stage by stage (`tablets.migration`):
before each stage change every member must have seen the current version (the barrier; a member
that is down holds it back until it is back or declared dead, ``barrier_members``), so no node
still routes by the previous stage when the next begins, and the fence moves up to it.
Reads switch only after streaming has finished for every moving tablet; old replicas are
cleaned only after reads switched. Vnode keyspaces follow the token ring: once a request's
tablets are done its ring change runs through the same barriers and fences (``vnode_phase``),
and the nodes it leaves holding ranges they no longer own are cleaned before the next request.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tabletdb.schema.model import Catalog
from tabletdb.tablets.colocation import mirror_updates
from tabletdb.tablets.load_stats import TabletKey
from tabletdb.tablets.migration import STAGE_ORDER, advance_stage
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage
from tabletdb.topology import cdc_switch
from tabletdb.topology import resize as rs
from tabletdb.topology import rf_change as rfc
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology.balancing import plan_round
from tabletdb.topology.cdc_switch import LatestGeneration
from tabletdb.topology.commands import TabletUpdate, TopologyCommand
from tabletdb.topology.placement import PlanError, plan_moves
from tabletdb.topology.state import Request, RequestResult, TopologyState, Transition
from tabletdb.topology.states import STATE_DURING, NodeState, RequestKind, TransitionState

MoveKey = tuple[uuid.UUID, uuid.UUID, int]
"""(request id, table id, tablet id): one tablet move of one request."""

_STREAMING = STAGE_ORDER.index(TransitionStage.STREAMING)


@dataclass(frozen=True)
class CoordinatorConfig:
    rollback_after_ms: int = 30_000
    """A node a move still needs (target or stream source) down this long fails the request,
    as long as no read has switched yet; after that the request can only go forward."""
    planted_bug: bool = False
    """Test only: switch reads without streaming (the simulation must catch it)."""


@dataclass(frozen=True)
class View:
    """What the step decides on: group0's topology state and tablet maps, and (from group0's
    membership records) each node's shard count and (datacenter, rack)."""

    topology: TopologyState
    tablets: Mapping[uuid.UUID, TabletMap]
    shards: Mapping[uuid.UUID, int] = field(default_factory=dict)
    locations: Mapping[uuid.UUID, tuple[str, str]] = field(default_factory=dict)
    vnode: vp.VnodeView = field(default_factory=lambda: vp.VnodeView({}, (), {}))
    """Ring tokens per node and the vnode tables (none: the request changes no ring)."""
    balancing: bool = False
    """``ClusterState.balancing_enabled``: when idle, start a round of balancer moves."""
    tablet_sizes: Mapping[TabletKey, int] = field(default_factory=dict)
    """Bytes per tablet from the nodes' load statistics (``tablets.load_stats``)."""
    resize: rs.ResizeInputs | None = None
    """What the resize re-evaluation needs (None: no resize is begun; one in progress goes on)."""
    catalog: Catalog = field(default_factory=Catalog)
    """group0's catalog: the keyspaces and tables a ``keyspace_rf_change`` request covers."""
    cdc_generation: LatestGeneration | None = None
    """The latest vnode CDC generation while a vnode CDC table exists: a ring change waits for
    one that fits the new ring (``topology.cdc_switch``)."""


@dataclass(frozen=True)
class Observations:
    """What the running coordinator saw since it took over; lost (and re-gathered) on a crash."""

    alive: frozenset[uuid.UUID]
    now_ms: int = 0
    down_since: Mapping[uuid.UUID, int] = field(default_factory=dict)
    barrier_version: int = -1
    """The highest topology version a global barrier confirmed on every node it waits for."""
    streamed: frozenset[MoveKey] = frozenset()
    cleaned: frozenset[MoveKey] = frozenset()
    ranges_streamed: frozenset[vp.RangeKey] = frozenset()
    ranges_cleaned: frozenset[vp.CleanKey] = frozenset()
    resized: frozenset[rs.ResizeKey] = frozenset()
    """Hosts that copied their files into the next generation, per resize attempt."""
    wall_us: int = 0
    """The wall clock (µs since the epoch), which CDC generation times are in."""


@dataclass(frozen=True)
class StreamTask:
    key: MoveKey
    sources: tuple[TabletReplica, ...]
    """Every one of them is read: a rebuild needs all surviving replicas (any quorum write
    reached at least one of them), a migration its leaving replica."""
    target: TabletReplica


@dataclass(frozen=True)
class CleanupTask:
    key: MoveKey
    replica: TabletReplica


@dataclass(frozen=True)
class Idle:
    reason: str


@dataclass(frozen=True)
class Barrier:
    """Every node of ``nodes`` must have applied ``version`` (its Raft read barrier answers it)
    before the coordinator moves on. A node the failure detector calls down is not skipped: it
    may be cut off and still serving by its old map (a crashed node catches up before it serves,
    a partitioned one does not, and the detector cannot tell them apart). The barrier waits until
    it answers or the operator declares it dead (``barrier_members``); only a rollback's barrier,
    ``skip_down``, passes without the nodes that are down (see ``_rolling_back``)."""

    version: int
    nodes: tuple[uuid.UUID, ...]
    skip_down: bool = False

    def asks(self, alive: frozenset[uuid.UUID]) -> tuple[tuple[uuid.UUID, ...], tuple[uuid.UUID, ...]]:
        """(the nodes to ask, the nodes that are down and hold the barrier back)."""
        asked = tuple(h for h in self.nodes if h in alive)
        down = () if self.skip_down else tuple(h for h in self.nodes if h not in alive)
        return asked, down


@dataclass(frozen=True)
class Stream:
    tasks: tuple[StreamTask, ...]


@dataclass(frozen=True)
class Cleanup:
    tasks: tuple[CleanupTask, ...]


@dataclass(frozen=True)
class Propose:
    command: TopologyCommand


Action = Idle | Barrier | Stream | Cleanup | Propose | vp.StreamRanges | vp.CleanupRanges | rs.ResizeFiles


@dataclass(frozen=True)
class _Moving:
    table_id: uuid.UUID
    tablet_id: int
    info: TabletInfo

    @property
    def stage_index(self) -> int:
        assert self.info.stage is not None
        return STAGE_ORDER.index(self.info.stage)

    def key(self, request: Request) -> MoveKey:
        return (request.request_id, self.table_id, self.tablet_id)

    def targets(self) -> tuple[TabletReplica, ...]:
        return tuple(r for r in self.info.new_replicas or () if r not in self.info.replicas)

    def leaving(self) -> tuple[TabletReplica, ...]:
        return tuple(r for r in self.info.replicas if r not in (self.info.new_replicas or ()))

    def sources(self, ignored: frozenset[uuid.UUID] = frozenset()) -> tuple[TabletReplica, ...]:
        """Where the target's copy comes from; a rebuild skips the dead nodes the operator said
        to ignore (`ignore_nodes`): best effort from the replicas that are left, as in ScyllaDB."""
        if self.info.transition is TransitionKind.REBUILD:
            new = self.info.new_replicas or ()
            return tuple(r for r in self.info.replicas if r in new and r.host not in ignored)
        return self.leaving()


def _moving(tablets: Mapping[uuid.UUID, TabletMap]) -> list[_Moving]:
    return [
        _Moving(table_id, tid, info)
        for table_id in sorted(tablets, key=lambda t: t.bytes)
        for tid, info in enumerate(tablets[table_id].tablets)
        if info.in_transition
    ]


def barrier_members(topology: TopologyState) -> tuple[uuid.UUID, ...]:
    """The nodes a barrier waits for: every member but those that left and those the operator
    declared dead — ignored ones, and the node a queued or running removenode removes or a
    replace replaces, with their ``ignore_nodes`` (a removenode of a live node is refused), so a
    dead node holds barriers back only until the operator removes it (as ScyllaDB's barrier
    excludes only the nodes it is told to ignore)."""
    dead = set(topology.ignored)
    requests = [*topology.queue, *([topology.transition.request] if topology.transition else [])]
    for r in requests:
        dead |= r.ignore_nodes
        if r.kind is RequestKind.REMOVE:
            dead.add(r.host_id)
        elif r.kind is RequestKind.REPLACE and r.replaced_id is not None:
            dead.add(r.replaced_id)
    return tuple(
        sorted(
            h
            for h, n in topology.nodes.items()
            if n.state not in (NodeState.LEFT, NodeState.NONE) and h not in dead
        )
    )


def _command(
    view: View, new_id: uuid.UUID, after: TopologyState, updates: list[TabletUpdate], why: str
) -> Propose:
    mirrored = mirror_updates(view.tablets, updates)  # co-located tablets move with their base's
    return Propose(TopologyCommand(view.topology.state_id, replace(after, state_id=new_id), mirrored, why))


def step(
    view: View, obs: Observations, new_id: uuid.UUID, config: CoordinatorConfig = CoordinatorConfig()
) -> Action:
    """The next thing the coordinator must do; a Propose carries a command with id `new_id`."""
    t = view.topology
    tr = t.transition
    if tr is None:
        cleaning = _cleanup(view, obs, new_id)
        if cleaning is not None:
            return cleaning
        resizing = _resize(view, obs, new_id, config)
        if resizing is not None:
            return resizing
        if not t.queue:
            if view.balancing:
                merging, replication = rs.merge_inputs(view.tablets, view.resize, view.tablet_sizes)
                started = plan_round(
                    t,
                    view.tablets,
                    view.shards,
                    view.locations,
                    view.tablet_sizes,
                    new_id,
                    obs.alive,
                    merging,
                    replication,
                )
                if started is not None:
                    return _command(view, new_id, *started)
            return Idle("no topology requests")
        blocked = vp.blocking_cleanup(t, t.queue[0])
        if blocked:
            request = t.queue[0]
            return Idle(
                f"{request.kind.value} of {request.host_id} waits for the cleanup of vnode ranges on "
                f"{', '.join(str(h) for h in blocked)}"
            )
        return _start(view, obs, t.queue[0], new_id)
    if tr.state is TransitionState.ROLLBACK_TO_NORMAL:
        return _rolling_back(view, obs, tr, new_id)
    if tr.state in (TransitionState.WRITE_BOTH_READ_OLD, TransitionState.WRITE_BOTH_READ_NEW):
        return _vnode_phase(view, obs, tr, new_id, config)
    moving = _moving(view.tablets)
    if moving and min(m.stage_index for m in moving) <= _STREAMING:
        failure = _needed_node_down(tr.request, moving, obs, config, t.ignored)
        if failure:
            return _begin_rollback(view, tr, moving, failure, new_id)
    if obs.barrier_version < t.version:
        return Barrier(t.version, barrier_members(t))
    if not moving:
        if tr.request.kind is RequestKind.KEYSPACE_RF_CHANGE:
            return _rf_step(
                view,
                rfc.advance(t, tr, view.catalog, view.tablets, view.shards, view.locations, obs.alive),
                new_id,
            )
        late = _late_moves(view, tr, new_id)
        if late is not None:
            return late
        waiting = cdc_switch.waits(t, tr, view.vnode.tokens, view.cdc_generation, obs.wall_us)
        if waiting:
            return Idle(waiting)
        entered = vp.enter(t, tr, view.vnode)
        if entered is not None:
            return _command(view, new_id, entered.topology, [], entered.reason)
        return _finish(view, tr.request, new_id)
    stage = min(m.stage_index for m in moving)
    at_stage = [m for m in moving if m.stage_index == stage]
    if STAGE_ORDER[stage] is TransitionStage.STREAMING and not config.planted_bug:
        tasks = [
            StreamTask(m.key(tr.request), m.sources(t.ignored), target)
            for m in at_stage
            if m.key(tr.request) not in obs.streamed
            for target in m.targets()
        ]
        if tasks:
            return Stream(tuple(tasks))
    if STAGE_ORDER[stage] is TransitionStage.CLEANUP:
        cleanups = [
            CleanupTask(m.key(tr.request), r)
            for m in at_stage
            if m.key(tr.request) not in obs.cleaned
            for r in m.leaving()
            if r.host in obs.alive  # a dead node drops replicas it no longer has when it restarts
        ]
        if cleanups:
            return Cleanup(tuple(cleanups))
    updates = [
        TabletUpdate(
            m.table_id,
            m.tablet_id,
            m.info,
            advance_stage(view.tablets[m.table_id], m.tablet_id).tablets[m.tablet_id],
        )
        for m in at_stage
    ]
    after = replace(t, version=t.version + 1, fence_version=t.version)
    target = STAGE_ORDER[stage + 1].value if stage + 1 < len(STAGE_ORDER) else "done"
    return _command(view, new_id, after, updates, f"advance {len(updates)} tablet(s) to {target}")


def _cleanup(view: View, obs: Observations, new_id: uuid.UUID) -> Action | None:
    """Cleanup of vnode ranges while no request runs (``vnode_phase.cleanup``), after a barrier:
    the node cleans by the ring every live node routes by."""
    t = view.topology
    if not any(h in obs.alive for h in vp.pending_cleanup(t)):
        return None  # nothing to do until one is back: no barrier either (a dead member holds it)
    if obs.barrier_version < t.version:
        return Barrier(t.version, barrier_members(t))
    found = vp.cleanup(t, obs.alive, obs.ranges_cleaned)
    if isinstance(found, vp.Next):
        return _command(view, new_id, found.topology, [], found.reason)
    return found


def _resize(view: View, obs: Observations, new_id: uuid.UUID, config: CoordinatorConfig) -> Action | None:
    """A resize (``topology.resize``) in progress goes on, or rolls back for a queued request or a
    replica down too long; with none, and nothing queued, the next one may begin."""
    t = view.topology
    group = rs.resizing(view.tablets)
    paused = "" if view.resize is None else view.resize.paused
    if not group:
        if t.queue or view.resize is None or paused:
            return None
        decision = rs.decide(view.tablets, view.resize, view.tablet_sizes, obs.alive)
        return None if decision is None else Propose(rs.begin(t, view.tablets, view.resize, decision, new_id))
    why = f"{t.queue[0].kind.value} of {t.queue[0].host_id} is queued and goes first" if t.queue else ""
    why = (
        why
        or paused
        or rs.needed_down(group, obs.alive, obs.down_since, obs.now_ms, config.rollback_after_ms)
    )
    if why:
        return Propose(rs.roll_back(t, group, why, new_id))
    if obs.barrier_version < t.version:
        return Barrier(t.version, barrier_members(t))
    tasks = rs.tasks(group, rs.base_of(group, view.resize), t.version, obs.resized)
    if tasks:
        return rs.ResizeFiles(tasks)
    return Propose(rs.cut_over(t, group, view.resize, new_id))


def _vnode_phase(
    view: View, obs: Observations, tr: Transition, new_id: uuid.UUID, config: CoordinatorConfig
) -> Action:
    t = view.topology
    failure = vp.needed_down(
        t, tr, view.vnode, obs.alive, obs.down_since, obs.now_ms, config.rollback_after_ms
    )
    if failure:
        after = replace(
            t,
            transition=replace(tr, state=TransitionState.ROLLBACK_TO_NORMAL, error=failure),
            version=t.version + 1,
        )
        why = f"roll back {tr.request.kind.value} of {tr.request.host_id}"
        return _command(view, new_id, after, [], why)
    if obs.barrier_version < t.version:
        return Barrier(t.version, barrier_members(t))
    found = vp.advance(t, tr, view.vnode, obs.alive, obs.ranges_streamed)
    if found is None:
        return _finish(view, tr.request, new_id)
    if isinstance(found, vp.Next):
        return _command(view, new_id, found.topology, [], found.reason)
    return found


def _rf_step(view: View, found: rfc.RfStep, new_id: uuid.UUID) -> Propose:
    command = TopologyCommand(
        view.topology.state_id,
        replace(found.topology, state_id=new_id),
        mirror_updates(view.tablets, found.updates),  # co-located tablets move with their base's
        found.reason,
        schema=found.schema,
    )
    return Propose(command)


def _start(view: View, obs: Observations, request: Request, new_id: uuid.UUID) -> Action:
    t = view.topology
    if request.kind is RequestKind.KEYSPACE_RF_CHANGE:
        started = rfc.start(t, request, view.catalog, view.tablets, view.shards, view.locations, obs.alive)
        return _rf_step(view, started, new_id)
    try:
        _check_still_dead(request, obs)
        moves = plan_moves(request, t, view.tablets, view.shards, view.locations)
    except PlanError as e:
        failed = t.finished(RequestResult(request, f"{request.kind.value} of {request.host_id} refused: {e}"))
        if request.kind in (RequestKind.JOIN, RequestKind.REPLACE):
            failed = failed.with_node(replace(failed.nodes[request.host_id], state=NodeState.LEFT))
        return _command(view, new_id, failed, [], f"refuse {request.kind.value} of {request.host_id}")
    after = t.with_node(replace(t.nodes[request.host_id], state=STATE_DURING[request.kind]))
    ignored = t.ignored | request.ignore_nodes
    if request.kind is RequestKind.REMOVE:
        ignored |= {request.host_id}
    if request.kind is RequestKind.REPLACE and request.replaced_id is not None:
        ignored |= {request.replaced_id}
    draining = request.kind in (RequestKind.LEAVE, RequestKind.REMOVE)
    state = TransitionState.TABLET_DRAINING if draining else TransitionState.TABLET_MIGRATION
    after = replace(
        after,
        queue=tuple(r for r in t.queue if r.request_id != request.request_id),
        transition=Transition(request, state, tablets_moved=bool(moves)),
        ignored=ignored,
        version=t.version + 1,
    )
    updates = [TabletUpdate(table, tid, view.tablets[table].tablets[tid], info) for table, tid, info in moves]
    return _command(
        view,
        new_id,
        after,
        updates,
        f"start {request.kind.value} of {request.host_id}: {len(updates)} tablet move(s)",
    )


def _late_moves(view: View, tr: Transition, new_id: uuid.UUID) -> Propose | None:
    """Replicas still on the node a leave, remove or replace takes away once its planned moves are
    done: a table whose tablets were placed by a schema command decided before the request began
    and applied after it. They move the same way before the request goes on. None: nothing is
    left (or a replica has nowhere to go: it stays, and the request goes on as it did before)."""
    if tr.request.kind not in (RequestKind.LEAVE, RequestKind.REMOVE, RequestKind.REPLACE):
        return None
    t = view.topology
    try:
        moves = plan_moves(tr.request, t, view.tablets, view.shards, view.locations)
    except PlanError:
        return None
    if not moves:
        return None
    updates = [TabletUpdate(table, tid, view.tablets[table].tablets[tid], info) for table, tid, info in moves]
    after = replace(t, transition=replace(tr, tablets_moved=True), version=t.version + 1)
    why = f"{tr.request.kind.value} of {tr.request.host_id}: {len(updates)} late tablet move(s)"
    return _command(view, new_id, after, updates, why)


def _serves(
    tablets: Mapping[uuid.UUID, TabletMap], table_id: uuid.UUID, tablet_id: int, replica: TabletReplica
) -> bool:
    """Whether `replica` is (again) one of the tablet's replicas, so its file is no leftover."""
    tm = tablets.get(table_id)
    if tm is None or not 0 <= tablet_id < tm.tablet_count:
        return False
    info = tm.tablets[tablet_id]
    return replica in info.replicas or replica in (info.new_replicas or ())


def _check_still_dead(request: Request, obs: Observations) -> None:
    """The node admitting a removenode or replace saw the node down; the coordinator checks
    again with its own eyes (ScyllaDB does both), since removing a live node's replicas while it
    still serves would lose the writes it takes."""
    dead = request.host_id if request.kind is RequestKind.REMOVE else request.replaced_id
    if request.kind in (RequestKind.REMOVE, RequestKind.REPLACE) and dead in obs.alive:
        raise PlanError(f"the topology coordinator sees node {dead} alive; stop it first")


def _finish(view: View, request: Request, new_id: uuid.UUID) -> Propose:
    t = view.topology
    if request.kind is RequestKind.BALANCE:  # not recorded: rounds would push requests' results out
        after = replace(t, transition=None, version=t.version + 1, fence_version=t.version)
        return _command(view, new_id, after, [], "finish balance round")
    after = t.finished(RequestResult(request))
    node = t.nodes[request.host_id]
    if request.kind in (RequestKind.JOIN, RequestKind.REPLACE, RequestKind.MOVE):
        after = after.with_node(replace(node, state=NodeState.NORMAL, request_id=None))
    else:
        after = after.with_node(replace(node, state=NodeState.LEFT, request_id=None))
    gone = {request.host_id} if request.kind is RequestKind.REMOVE else set()
    if request.kind is RequestKind.REPLACE and request.replaced_id is not None:
        after = after.with_node(replace(t.nodes[request.replaced_id], state=NodeState.LEFT))
        gone.add(request.replaced_id)
    after = replace(after, ignored=after.ignored - gone, version=t.version + 1, fence_version=t.version)
    after = vp.mark_finished(t, after, request, view.vnode)
    return _command(view, new_id, after, [], f"finish {request.kind.value} of {request.host_id}")


def _needed_node_down(
    request: Request,
    moving: list[_Moving],
    obs: Observations,
    config: CoordinatorConfig,
    ignored: frozenset[uuid.UUID],
) -> str:
    needed: dict[uuid.UUID, _Moving] = {}
    for m in moving:
        for r in m.targets() + (m.sources(ignored) if m.targets() else ()):  # a drop needs nobody
            needed.setdefault(r.host, m)
    for host in sorted(needed):
        since = obs.down_since.get(host)
        if host not in obs.alive and since is not None and obs.now_ms - since >= config.rollback_after_ms:
            m = needed[host]
            return (
                f"{request.kind.value} of {request.subject} rolled back: node {host} has been down for "
                f"{obs.now_ms - since} ms and tablet {m.tablet_id} of table {m.table_id} needs it to stream"
            )
    return ""


def _begin_rollback(
    view: View, tr: Transition, moving: list[_Moving], error: str, new_id: uuid.UUID
) -> Propose:
    """Revert every move (none has switched reads) and mark the transition as rolling back."""
    t = view.topology
    updates = [
        TabletUpdate(m.table_id, m.tablet_id, m.info, TabletInfo(m.info.last_token, m.info.replicas))
        for m in moving
    ]
    # An intranode move's target is its own node's other shard, whose file may be the only copy
    # (moved at streaming; the node adopts it there, ``StorageService.resident_shard``): no cleanup.
    targets = tuple(
        (m.table_id, m.tablet_id, r)
        for m in moving
        for r in m.targets()
        if m.info.transition is not TransitionKind.INTRANODE_MIGRATION
    )
    after = replace(
        t,
        transition=Transition(tr.request, TransitionState.ROLLBACK_TO_NORMAL, error, targets),
        version=t.version + 1,
    )
    return _command(
        view, new_id, after, updates, f"roll back {tr.request.kind.value} of {tr.request.subject}"
    )


def _rolling_back(view: View, obs: Observations, tr: Transition, new_id: uuid.UUID) -> Action:
    """Once every member that is up has seen the reverted maps, restore the node states and record
    why the request failed (a joining node is LEFT: it must be wiped before it tries again).

    This barrier passes without the nodes that are down (often the reason for the rollback): no
    read had switched, so a node still on an older map reads the replicas the reverted map reads
    and writes a superset of them; the fence the finish raises refuses its writes, and the next
    request's barriers wait for it again."""
    t = view.topology
    if obs.barrier_version < t.version:
        return Barrier(t.version, barrier_members(t), skip_down=True)
    request = tr.request
    leftovers = [
        CleanupTask((request.request_id, table_id, tablet_id), target)
        for table_id, tablet_id, target in tr.cleanup_targets
        if (request.request_id, table_id, tablet_id) not in obs.cleaned
        and target.host in obs.alive  # a dead target's copy stays behind: nothing reads it
        and not _serves(view.tablets, table_id, tablet_id, target)
    ]
    if leftovers:
        return Cleanup(tuple(leftovers))
    after = t.finished(RequestResult(request, tr.error))
    if request.kind is RequestKind.KEYSPACE_RF_CHANGE:  # global: no node state to restore
        after = replace(after, version=t.version + 1, fence_version=t.version)
        return _command(
            view, new_id, after, [], f"rolled back {request.kind.value} of {request.subject}: {tr.error}"
        )
    node = t.nodes[request.host_id]
    joining = request.kind in (RequestKind.JOIN, RequestKind.REPLACE)
    after = after.with_node(
        replace(node, state=NodeState.LEFT if joining else NodeState.NORMAL, request_id=None)
    )
    if request.kind is RequestKind.REPLACE and request.replaced_id is not None:
        after = replace(after, ignored=after.ignored - {request.replaced_id})
    after = replace(
        after, ignored=after.ignored - {request.host_id}, version=t.version + 1, fence_version=t.version
    )
    after = vp.mark_rolled_back(t, after, tr, view.vnode)
    return _command(
        view, new_id, after, [], f"rolled back {request.kind.value} of {request.host_id}: {tr.error}"
    )
