"""The topology coordinator as a pure step function: (group0 state, observations) -> one action.

Whichever node leads group0 runs it in a loop: it executes the action it gets (a global barrier,
tablet streaming, cleanup of old replicas, or proposing a group0 command), records what it
observed, and asks again. Nothing lives outside group0 except those observations, which a new
coordinator simply gathers again; so a coordinator that crashes at any point is replaced by one
that resumes from the same state (or, if the request can no longer finish, rolls it back).

Tablet migrations of a request advance in lockstep, stage by stage (`tablets.migration`):
before each stage change every live node must have seen the current version (the barrier), so
no node still routes by the previous stage when the next begins, and the fence moves up to it.
Reads switch only after streaming has finished for every moving tablet; old replicas are
cleaned only after reads switched.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tabletdb.tablets.load_stats import TabletKey
from tabletdb.tablets.migration import STAGE_ORDER, advance_stage
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage
from tabletdb.topology.balancing import plan_round
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
    balancing: bool = False
    """``ClusterState.balancing_enabled``: when idle, start a round of balancer moves."""
    tablet_sizes: Mapping[TabletKey, int] = field(default_factory=dict)
    """Bytes per tablet from the nodes' load statistics (``tablets.load_stats``)."""


@dataclass(frozen=True)
class Observations:
    """What the running coordinator saw since it took over; lost (and re-gathered) on a crash."""

    alive: frozenset[uuid.UUID]
    now_ms: int = 0
    down_since: Mapping[uuid.UUID, int] = field(default_factory=dict)
    barrier_version: int = -1
    """The highest topology version a global barrier confirmed on every live node."""
    streamed: frozenset[MoveKey] = frozenset()
    cleaned: frozenset[MoveKey] = frozenset()


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
    version: int
    nodes: tuple[uuid.UUID, ...]
    """Nodes that must have seen `version`; a dead one is skipped (it catches up on restart)."""


@dataclass(frozen=True)
class Stream:
    tasks: tuple[StreamTask, ...]


@dataclass(frozen=True)
class Cleanup:
    tasks: tuple[CleanupTask, ...]


@dataclass(frozen=True)
class Propose:
    command: TopologyCommand


Action = Idle | Barrier | Stream | Cleanup | Propose


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

    def sources(self) -> tuple[TabletReplica, ...]:
        if self.info.transition is TransitionKind.REBUILD:
            return tuple(r for r in self.info.replicas if r in (self.info.new_replicas or ()))
        return self.leaving()


def _moving(tablets: Mapping[uuid.UUID, TabletMap]) -> list[_Moving]:
    return [
        _Moving(table_id, tid, info)
        for table_id in sorted(tablets, key=lambda t: t.bytes)
        for tid, info in enumerate(tablets[table_id].tablets)
        if info.in_transition
    ]


def _members(topology: TopologyState) -> tuple[uuid.UUID, ...]:
    return tuple(
        sorted(h for h, n in topology.nodes.items() if n.state not in (NodeState.LEFT, NodeState.NONE))
    )


def _command(
    view: View, new_id: uuid.UUID, after: TopologyState, updates: list[TabletUpdate], why: str
) -> Propose:
    return Propose(
        TopologyCommand(view.topology.state_id, replace(after, state_id=new_id), tuple(updates), why)
    )


def step(
    view: View, obs: Observations, new_id: uuid.UUID, config: CoordinatorConfig = CoordinatorConfig()
) -> Action:
    """The next thing the coordinator must do; a Propose carries a command with id `new_id`."""
    t = view.topology
    tr = t.transition
    if tr is None:
        if not t.queue:
            if view.balancing:
                started = plan_round(t, view.tablets, view.shards, view.locations, view.tablet_sizes, new_id)
                if started is not None:
                    return _command(view, new_id, *started, f"balance: {len(started[1])} tablet move(s)")
            return Idle("no topology requests")
        return _start(view, t.queue[0], new_id)
    moving = _moving(view.tablets)
    if tr.state is TransitionState.ROLLBACK_TO_NORMAL:
        return _rolling_back(view, obs, tr, new_id)
    if moving and min(m.stage_index for m in moving) <= _STREAMING:
        failure = _needed_node_down(tr.request, moving, obs, config)
        if failure:
            return _begin_rollback(view, tr, moving, failure, new_id)
    if obs.barrier_version < t.version:
        return Barrier(t.version, _members(t))
    if not moving:
        return _finish(view, tr.request, new_id)
    stage = min(m.stage_index for m in moving)
    at_stage = [m for m in moving if m.stage_index == stage]
    if STAGE_ORDER[stage] is TransitionStage.STREAMING and not config.planted_bug:
        tasks = [
            StreamTask(m.key(tr.request), m.sources(), target)
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


def _start(view: View, request: Request, new_id: uuid.UUID) -> Action:
    t = view.topology
    try:
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
        transition=Transition(request, state),
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
    return _command(view, new_id, after, [], f"finish {request.kind.value} of {request.host_id}")


def _needed_node_down(
    request: Request, moving: list[_Moving], obs: Observations, config: CoordinatorConfig
) -> str:
    needed: dict[uuid.UUID, _Moving] = {}
    for m in moving:
        for r in m.targets() + m.sources():
            needed.setdefault(r.host, m)
    for host in sorted(needed):
        since = obs.down_since.get(host)
        if host not in obs.alive and since is not None and obs.now_ms - since >= config.rollback_after_ms:
            m = needed[host]
            return (
                f"{request.kind.value} of {request.host_id} rolled back: node {host} has been down for "
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
    after = replace(
        t,
        transition=Transition(tr.request, TransitionState.ROLLBACK_TO_NORMAL, error),
        version=t.version + 1,
    )
    return _command(
        view, new_id, after, updates, f"roll back {tr.request.kind.value} of {tr.request.host_id}"
    )


def _rolling_back(view: View, obs: Observations, tr: Transition, new_id: uuid.UUID) -> Action:
    """Once every live node has seen the reverted maps, restore the node states and record why
    the request failed (a joining node is LEFT: it must be wiped before it tries again)."""
    t = view.topology
    if obs.barrier_version < t.version:
        return Barrier(t.version, _members(t))
    request = tr.request
    after = t.finished(RequestResult(request, tr.error))
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
    return _command(
        view, new_id, after, [], f"rolled back {request.kind.value} of {request.host_id}: {tr.error}"
    )
