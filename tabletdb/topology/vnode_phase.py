"""The topology coordinator's work for vnode keyspaces: the ring change of a request, and the
cleanup that follows it. Pure; ``topology.coordinator.step`` calls these and turns what they
answer into its actions (a next topology value becomes a guarded command).

A request's vnode phase comes after its tablet moves (ScyllaDB's order for a decommission):

1. ``write both read old`` (version +1, fence on the version the barrier confirmed): every node
   writes the old and the new replica set of each token once it has seen it;
2. after a barrier, the fence rises to it (version +1), so a write routed by the old ring alone
   is refused everywhere before streaming reads the sources; after another barrier each range
   is streamed to its new replicas (``vnode_ranges.sources``);
3. ``write both read new`` (version +1, fence +1): reads switch to the new owners;
4. after a last barrier the request finishes (the coordinator's ``_finish``), and every node left
   holding ranges it no longer replicates gets ``cleanup_status = needed``.

Cleanup: a node whose status is ``needed`` becomes ``running`` (one command for all live ones),
is asked to drop every range it does not replicate (``CleanupRanges``; the node first applies at
least the version named), and is recorded ``clean``. No request starts while a node other than
the request's own (or one the operator ignores) has a cleanup pending: stale copies left on a
node that gets the range back could bring deleted data back to life.

While no tablet moved for the request, a node the vnode phase needs (a target, or every source
of a range) down for ``rollback_after_ms`` rolls the request back (ring as before, the targets
marked for cleanup of their partial copies); once tablets moved the request only goes forward.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from tabletdb.dht.ring import Location
from tabletdb.dht.token import TokenRange
from tabletdb.schema.model import LOCAL, Catalog, Replication
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.state import Request, TopologyState, Transition
from tabletdb.topology.states import CleanupStatus, NodeState, RequestKind, TransitionState

RangeKey = tuple[uuid.UUID, uuid.UUID, uuid.UUID]
"""(request id, table id, target host): one table's ranges streamed to one node."""


@dataclass(frozen=True)
class VnodeTable:
    """A table of a vnode keyspace (its data follows the token ring)."""

    table_id: uuid.UUID
    replication: Replication


def vnode_tables(catalog: Catalog) -> tuple[VnodeTable, ...]:
    """Every table whose data follows the token ring: the tables, views and index tables of the
    keyspaces that use neither tablets nor LocalStrategy."""
    out: list[VnodeTable] = []
    for ks in catalog.keyspaces.values():
        d = ks.definition
        if d.uses_tablets or d.replication.strategy_class == LOCAL:
            continue
        for table in ks.tables.values():
            out.append(VnodeTable(table.id, d.replication))
            out.extend(VnodeTable(i.table_id, d.replication) for i in table.indexes if i.table_id is not None)
        out.extend(VnodeTable(v.table.id, d.replication) for v in ks.views.values())
    return tuple(sorted(out, key=lambda t: t.table_id.bytes))


@dataclass(frozen=True)
class RangeStreamTask:
    key: RangeKey
    ranges: tuple[tuple[TokenRange, tuple[uuid.UUID, ...]], ...]
    """Each range the target gains, with the replicas it reads it from (all of them)."""

    @property
    def table_id(self) -> uuid.UUID:
        return self.key[1]

    @property
    def target(self) -> uuid.UUID:
        return self.key[2]


@dataclass(frozen=True)
class StreamRanges:
    tasks: tuple[RangeStreamTask, ...]


@dataclass(frozen=True)
class RangeCleanupTask:
    host: uuid.UUID
    version: int
    """The topology version the node must have applied before it decides what it owns."""


@dataclass(frozen=True)
class CleanupRanges:
    tasks: tuple[RangeCleanupTask, ...]


@dataclass(frozen=True)
class Next:
    """The next topology value to propose, and why."""

    topology: TopologyState
    reason: str


@dataclass(frozen=True)
class VnodeView:
    """What the vnode work decides on besides the topology state (from group0)."""

    tokens: vr.Tokens
    tables: tuple[VnodeTable, ...]
    locations: Mapping[uuid.UUID, tuple[str, str]]

    def location_map(self) -> dict[uuid.UUID, Location]:
        return {h: Location(*self.locations.get(h, ("", ""))) for h in self.tokens}


def moves(t: TopologyState, request: Request, view: VnodeView) -> dict[uuid.UUID, list[vr.RangeMove]]:
    """The ranges of each vnode table that ``request`` moves (tables with no change left out)."""
    old = vr.owners(t, view.tokens)
    new = vr.target_ring(request, old, view.tokens)
    if old == new:
        return {}
    locations = view.location_map()
    by_replication: dict[Replication, list[vr.RangeMove]] = {}
    out: dict[uuid.UUID, list[vr.RangeMove]] = {}
    for table in view.tables:
        found = by_replication.get(table.replication)
        if found is None:
            found = by_replication[table.replication] = vr.range_moves(old, new, table.replication, locations)
        if found:
            out[table.table_id] = found
    return out


def enter(t: TopologyState, tr: Transition, view: VnodeView) -> Next | None:
    """Begin the vnode phase once the request's tablets are done; None if its ring does not change."""
    old = vr.owners(t, view.tokens)
    if vr.target_ring(tr.request, old, view.tokens) == old:
        return None
    after = replace(
        t,
        transition=replace(tr, state=TransitionState.WRITE_BOTH_READ_OLD, since_version=t.version + 1),
        version=t.version + 1,
        fence_version=t.version,
    )
    return Next(after, f"{tr.request.kind.value} of {tr.request.host_id}: vnode ranges write both, read old")


def stream_tasks(
    t: TopologyState, tr: Transition, view: VnodeView, alive: frozenset[uuid.UUID]
) -> list[RangeStreamTask]:
    """Every table's gained ranges, grouped by target, with their sources."""
    tasks: list[RangeStreamTask] = []
    for table_id, found in sorted(moves(t, tr.request, view).items(), key=lambda kv: kv[0].bytes):
        per_target: dict[uuid.UUID, list[tuple[TokenRange, tuple[uuid.UUID, ...]]]] = {}
        for m in found:
            src = vr.sources(m, tr.request, alive)
            for target in vr.receivers(m):
                others = tuple(x for x in src if x != target)
                if others:
                    per_target.setdefault(target, []).append((m.token_range, others))
        for target in sorted(per_target):
            tasks.append(
                RangeStreamTask((tr.request.request_id, table_id, target), tuple(per_target[target]))
            )
    return tasks


def advance(
    t: TopologyState,
    tr: Transition,
    view: VnodeView,
    alive: frozenset[uuid.UUID],
    streamed: frozenset[RangeKey],
) -> Next | StreamRanges | None:
    """The next step of a vnode phase whose current version every live node has seen; None once
    reads switched (the request can finish)."""
    if tr.state is not TransitionState.WRITE_BOTH_READ_OLD:
        return None
    request = tr.request
    if t.fence_version < tr.since_version:
        after = replace(t, version=t.version + 1, fence_version=t.version)
        return Next(after, f"{request.kind.value} of {request.host_id}: fence writes routed by the old ring")
    todo = [task for task in stream_tasks(t, tr, view, alive) if task.key not in streamed]
    if todo:
        return StreamRanges(tuple(todo))
    after = replace(
        t,
        transition=replace(tr, state=TransitionState.WRITE_BOTH_READ_NEW, since_version=t.version + 1),
        version=t.version + 1,
        fence_version=t.version,
    )
    return Next(after, f"{request.kind.value} of {request.host_id}: vnode ranges write both, read new")


def needed_down(
    t: TopologyState,
    tr: Transition,
    view: VnodeView,
    alive: frozenset[uuid.UUID],
    down_since: Mapping[uuid.UUID, int],
    now_ms: int,
    rollback_after_ms: int,
) -> str:
    """Why the vnode phase must be rolled back, or "" (see the module docstring)."""
    if tr.state is not TransitionState.WRITE_BOTH_READ_OLD or tr.tablets_moved:
        return ""
    for task in stream_tasks(t, tr, view, alive):
        for host in (task.target, *(h for _, src in task.ranges for h in src)):
            since = down_since.get(host)
            if host not in alive and since is not None and now_ms - since >= rollback_after_ms:
                return (
                    f"{tr.request.kind.value} of {tr.request.host_id} rolled back: node {host} has been "
                    f"down for {now_ms - since} ms and vnode ranges of table {task.table_id} need it "
                    "to stream"
                )
    return ""


def _with_cleanup(t: TopologyState, hosts: Iterable[uuid.UUID], status: CleanupStatus) -> TopologyState:
    for h in sorted(hosts):
        node = t.nodes.get(h)
        if node is not None and node.state is not NodeState.LEFT:
            t = t.with_node(replace(node, cleanup=status))
    return t


def mark_finished(
    before: TopologyState, after: TopologyState, request: Request, view: VnodeView
) -> TopologyState:
    """``after`` (the finished request) with cleanup needed on every node left holding ranges it no
    longer replicates; ``before`` is the state the request's ring change was computed on."""
    found = moves(before, request, view)
    return _with_cleanup(
        after, vr.losers((m for ms in found.values() for m in ms), request), CleanupStatus.NEEDED
    )


def mark_rolled_back(
    before: TopologyState, after: TopologyState, tr: Transition, view: VnodeView
) -> TopologyState:
    """``after`` (the rolled-back request) with cleanup needed on the nodes that may hold partial
    copies of ranges they never came to own (only once streaming could have begun)."""
    if tr.since_version == 0:
        return after
    found = moves(before, tr.request, view)
    gained = {h for ms in found.values() for m in ms for h in m.gained} - {tr.request.host_id}
    return _with_cleanup(after, gained, CleanupStatus.NEEDED)


def ask_cleanup(t: TopologyState, host: uuid.UUID) -> Next | None:
    """``t`` with ``host``'s cleanup needed (an operator's ``nodetool cleanup``: the coordinator
    then cleans it as after an ownership change, never beside one); None if one is pending."""
    node = t.nodes.get(host)
    if node is None or node.state is not NodeState.NORMAL:
        state = "unknown" if node is None else node.state.value
        raise ValueError(f"node {host} is {state}: only a normal node owns ranges to clean up")
    if node.cleanup is not CleanupStatus.CLEAN:
        return None
    return Next(_with_cleanup(t, [host], CleanupStatus.NEEDED), f"cleanup of vnode ranges asked on {host}")


def pending_cleanup(t: TopologyState) -> list[uuid.UUID]:
    return sorted(
        h
        for h, n in t.nodes.items()
        if n.cleanup is not CleanupStatus.CLEAN and n.state is not NodeState.LEFT
    )


RING_CHANGES = frozenset({RequestKind.JOIN, RequestKind.LEAVE, RequestKind.REMOVE, RequestKind.REPLACE})
"""Requests that change token ownership; others (a tablet move) never wait for a cleanup."""


def blocking_cleanup(t: TopologyState, request: Request) -> list[uuid.UUID]:
    """Nodes whose pending cleanup keeps ``request`` from starting (the pure rule)."""
    if request.kind not in RING_CHANGES:
        return []
    exempt = {request.host_id, request.replaced_id} | request.ignore_nodes | t.ignored
    return [h for h in pending_cleanup(t) if h not in exempt]


CleanKey = tuple[uuid.UUID, int]
"""(host, topology version): a node cleaned by the ring of that version."""


def cleanup(
    t: TopologyState, alive: frozenset[uuid.UUID], cleaned: frozenset[CleanKey]
) -> Next | CleanupRanges | None:
    """The next cleanup step while no transition runs; None when nothing can be done now."""
    needed = [h for h in pending_cleanup(t) if t.nodes[h].cleanup is CleanupStatus.NEEDED and h in alive]
    if needed:
        names = ", ".join(str(h) for h in needed)
        return Next(_with_cleanup(t, needed, CleanupStatus.RUNNING), f"cleanup of vnode ranges on {names}")
    running = [h for h in pending_cleanup(t) if t.nodes[h].cleanup is CleanupStatus.RUNNING]
    done = [h for h in running if (h, t.version) in cleaned]
    if done:
        names = ", ".join(str(h) for h in done)
        return Next(_with_cleanup(t, done, CleanupStatus.CLEAN), f"cleanup of vnode ranges done on {names}")
    todo = [RangeCleanupTask(h, t.version) for h in running if h in alive]
    return CleanupRanges(tuple(todo)) if todo else None
