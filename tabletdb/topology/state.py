"""The topology coordinator's state as group0 holds it: node states, the request queue, the
transition in progress, the topology version and fence, and how requests ended.

It is one immutable value with its own state id (a timeuuid). Every change is a whole new value
carried by a `topology.commands.TopologyCommand` that names the id it was decided on, so a
coordinator that lost leadership (or crashed and came back) can never apply a step decided on
a state that has since moved on; a new coordinator simply reads this value and resumes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tabletdb.tablets.tablet_map import TabletReplica
from tabletdb.topology.rf_request import KeyspaceRfChange, rf_change_from_plain, rf_change_to_plain
from tabletdb.topology.states import CleanupStatus, NodeState, RequestKind, TransitionState

ZERO_ID = uuid.UUID(int=0)
MAX_RESULTS = 64
"""How many finished requests `system.topology_requests` keeps (the oldest are dropped)."""


@dataclass(frozen=True)
class TabletMove:
    """A MOVE request's tablet: the one owning ``token`` of ``table_id``, from ``source`` to
    ``target`` (host and shard each). The token, not a tablet id, names it, as ScyllaDB's API does."""

    table_id: uuid.UUID
    token: int
    source: TabletReplica
    target: TabletReplica


@dataclass(frozen=True)
class Request:
    """One operator (or node) request; at most one per node is queued at a time."""

    request_id: uuid.UUID
    kind: RequestKind
    host_id: uuid.UUID
    """The node joining, leaving or removed; for REPLACE the new node."""
    replaced_id: uuid.UUID | None = None
    ignore_nodes: frozenset[uuid.UUID] = frozenset()
    move: TabletMove | None = None
    """For MOVE only: which tablet replica goes where (``host_id`` is the target host)."""
    rf_change: KeyspaceRfChange | None = None
    """For KEYSPACE_RF_CHANGE only: the keyspace and its definition before and after."""

    @property
    def subject(self) -> str:
        """What the request is about, for messages: the node, or the keyspace of an RF change."""
        return f"keyspace {self.rf_change.keyspace}" if self.rf_change is not None else str(self.host_id)


@dataclass(frozen=True)
class RequestResult:
    """How a request ended: done, or failed with an error an operator can act on."""

    request: Request
    error: str = ""


@dataclass(frozen=True)
class TopoNode:
    """One node's row of `system.topology` as far as the state machine is concerned (addresses,
    tokens and features stay in group0's membership record)."""

    host_id: uuid.UUID
    state: NodeState
    request_id: uuid.UUID | None = None
    replaced_id: uuid.UUID | None = None
    cleanup: CleanupStatus = CleanupStatus.CLEAN


@dataclass(frozen=True)
class Transition:
    """The request being carried out and the stage it is in."""

    request: Request
    state: TransitionState
    error: str = ""
    """Set when rolling back: why the request failed."""
    cleanup_targets: tuple[tuple[uuid.UUID, int, TabletReplica], ...] = ()
    """Set when rolling back: (table id, tablet id, target) of every reverted move. The target
    may hold a partial copy of the tablet; it is no replica, so nothing reads it, and the
    rollback deletes it (ScyllaDB's `cleanup_target`) before the request is recorded as failed."""
    since_version: int = field(default=0, kw_only=True)
    """The topology version that entered a vnode phase state (0: not in one yet)."""
    tablets_moved: bool = field(default=True, kw_only=True)
    """Whether the request moved tablets (then its vnode phase can no longer be rolled back)."""


@dataclass(frozen=True)
class TopologyState:
    state_id: uuid.UUID = ZERO_ID
    nodes: Mapping[uuid.UUID, TopoNode] = field(default_factory=dict)
    queue: tuple[Request, ...] = ()
    transition: Transition | None = None
    version: int = 0
    """Rises with every change of who receives writes or serves reads."""
    fence_version: int = 0
    """Replicas refuse data-plane requests carrying an older version than this."""
    ignored: frozenset[uuid.UUID] = frozenset()
    """Dead nodes the operator said to ignore (removed or being replaced)."""
    results: tuple[RequestResult, ...] = ()

    def with_node(self, node: TopoNode) -> TopologyState:
        nodes = dict(self.nodes)
        nodes[node.host_id] = node
        return replace(self, nodes=nodes)

    def state_of(self, host_id: uuid.UUID) -> NodeState:
        node = self.nodes.get(host_id)
        return NodeState.NONE if node is None else node.state

    def normal_nodes(self) -> tuple[uuid.UUID, ...]:
        return tuple(sorted(h for h, n in self.nodes.items() if n.state is NodeState.NORMAL))

    def finished(self, result: RequestResult) -> TopologyState:
        """This state with `result` recorded and the request gone from queue and transition."""
        rid = result.request.request_id
        queue = tuple(r for r in self.queue if r.request_id != rid)
        results = (*self.results, result)[-MAX_RESULTS:]
        transition = self.transition
        if transition is not None and transition.request.request_id == rid:
            transition = None
        return replace(self, queue=queue, results=results, transition=transition)


# --- plain (msgpack-ready) encoding -----------------------------------------------------------


def _opt_id(value: uuid.UUID | None) -> bytes | None:
    return None if value is None else value.bytes


def _id(value: Any) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(bytes=bytes(value))


def _req_id(value: Any) -> uuid.UUID:
    return uuid.UUID(bytes=bytes(value))


def request_to_plain(r: Request) -> list[Any]:
    plain: list[Any] = [
        r.request_id.bytes,
        r.kind.value,
        r.host_id.bytes,
        _opt_id(r.replaced_id),
        sorted(h.bytes for h in r.ignore_nodes),
    ]
    if r.move is not None:  # only MOVE requests carry a sixth element
        m = r.move
        plain.append(
            [
                m.table_id.bytes,
                m.token,
                m.source.host.bytes,
                m.source.shard,
                m.target.host.bytes,
                m.target.shard,
            ]
        )
    if r.rf_change is not None:  # and only RF changes a seventh (the sixth is then None)
        plain.extend([None] * (6 - len(plain)))
        plain.append(rf_change_to_plain(r.rf_change))
    return plain


def request_from_plain(d: list[Any]) -> Request:
    rid, kind, host, replaced, ignore = d[:5]
    move = None
    if len(d) > 5 and d[5] is not None:
        table, token, src, src_shard, dst, dst_shard = d[5]
        move = TabletMove(
            _req_id(table),
            int(token),
            TabletReplica(_req_id(src), int(src_shard)),
            TabletReplica(_req_id(dst), int(dst_shard)),
        )
    return Request(
        _req_id(rid),
        RequestKind(kind),
        _req_id(host),
        _id(replaced),
        frozenset(_req_id(h) for h in ignore),
        move,
        rf_change_from_plain(d[6]) if len(d) > 6 else None,
    )


def _transition_to_plain(t: Transition) -> list[Any]:
    plain = [request_to_plain(t.request), t.state.value, t.error]
    if t.cleanup_targets:
        plain.append([[table.bytes, tablet, r.host.bytes, r.shard] for table, tablet, r in t.cleanup_targets])
    return plain


def _transition_from_plain(d: list[Any]) -> Transition:
    """A transition; the fourth element (cleanup targets) is absent when there are none, which is
    also how entries written before it existed read."""
    targets = tuple(
        (_req_id(table), int(tablet), TabletReplica(_req_id(host), int(shard)))
        for table, tablet, host, shard in (d[3] if len(d) > 3 else ())
    )
    return Transition(request_from_plain(d[0]), TransitionState(d[1]), d[2], targets)


def state_to_plain(s: TopologyState) -> dict[str, Any]:
    return {
        "id": s.state_id.bytes,
        "nodes": [
            [n.host_id.bytes, n.state.value, _opt_id(n.request_id), _opt_id(n.replaced_id), n.cleanup.value]
            for _, n in sorted(s.nodes.items())
        ],
        "queue": [request_to_plain(r) for r in s.queue],
        "tr": None if s.transition is None else _transition_to_plain(s.transition),
        "tr_vnode": None
        if s.transition is None
        else [s.transition.since_version, s.transition.tablets_moved],
        "version": s.version,
        "fence": s.fence_version,
        "ignored": sorted(h.bytes for h in s.ignored),
        "results": [[request_to_plain(r.request), r.error] for r in s.results],
    }


def _with_vnode(transition: Transition, plain: list[Any] | None) -> Transition:
    """The transition with its vnode-phase fields (absent in states from before them)."""
    if plain is None:
        return transition
    since, moved = plain
    return replace(transition, since_version=int(since), tablets_moved=bool(moved))


def state_from_plain(d: dict[str, Any]) -> TopologyState:
    nodes = {}
    for host, state, rid, replaced, cleanup in d["nodes"]:
        node = TopoNode(_req_id(host), NodeState(state), _id(rid), _id(replaced), CleanupStatus(cleanup))
        nodes[node.host_id] = node
    tr = d["tr"]
    return TopologyState(
        state_id=_req_id(d["id"]),
        nodes=nodes,
        queue=tuple(request_from_plain(r) for r in d["queue"]),
        transition=None if tr is None else _with_vnode(_transition_from_plain(tr), d.get("tr_vnode")),
        version=int(d["version"]),
        fence_version=int(d["fence"]),
        ignored=frozenset(_req_id(h) for h in d["ignored"]),
        results=tuple(RequestResult(request_from_plain(r), e) for r, e in d["results"]),
    )
