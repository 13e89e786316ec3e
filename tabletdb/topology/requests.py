"""Admission of topology requests: refuse what cannot or must not be done, with a message that
names the node and says what to do instead, and queue the rest (one request per node).

Admission is decided on one topology state and proposed as a state-id-guarded command, so two
racing requests are both checked against the state the other produced (the loser re-decides).
Liveness (`alive`) is an observation of the node that admits: a live node may not be removed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.state import Request, TopologyState, TopoNode
from tabletdb.topology.states import NodeState, RequestKind


class RequestRefused(Exception):
    """The request is not admitted; the message is meant for the operator."""


def removing_live_node_error(host_id: uuid.UUID) -> str:
    return (
        f"removenode: Rejected removenode operation for node {host_id}; the node being removed is alive, "
        "maybe you should use decommission instead?"
    )


def rf_change_ongoing(topology: TopologyState, keyspace: str) -> str | None:
    """ScyllaDB's refusal of a second RF change of a keyspace while one is queued or running."""
    running = () if topology.transition is None else (topology.transition.request,)
    for r in (*running, *topology.queue):
        if r.rf_change is not None and r.rf_change.keyspace == keyspace:
            return f"Another RF change for this keyspace {keyspace} ongoing, please retry."
    return None


def _check(topology: TopologyState, request: Request, alive: frozenset[uuid.UUID]) -> None:
    if request.kind is RequestKind.KEYSPACE_RF_CHANGE:  # global: no node of its own
        if request.rf_change is None:
            raise RequestRefused("a keyspace RF change request must name its keyspace and replication")
        ongoing = rf_change_ongoing(topology, request.rf_change.keyspace)
        if ongoing is not None:
            raise RequestRefused(ongoing)
        return
    host = request.host_id
    busy = [r for r in topology.queue if host in (r.host_id, r.replaced_id)]
    if busy:
        raise RequestRefused(
            f"node {host} already has a pending {busy[0].kind.value} request {busy[0].request_id}"
        )
    state = topology.state_of(host)
    kind = request.kind
    if kind is RequestKind.BALANCE:
        raise RequestRefused("balance rounds are started by the topology coordinator itself, never queued")
    if kind is RequestKind.MOVE:
        _check_move(topology, request)
        return
    if kind in (RequestKind.JOIN, RequestKind.REPLACE) and state is not NodeState.NONE:
        raise RequestRefused(
            f"node {host} cannot {kind.value}: it is {state.value}; a node that left must be wiped "
            "and started with a new host id"
        )
    if kind in (RequestKind.LEAVE, RequestKind.REMOVE) and state is not NodeState.NORMAL:
        raise RequestRefused(f"node {host} cannot {kind.value}: it is {state.value}, not normal")
    if kind is RequestKind.REMOVE:
        if host in alive:
            raise RequestRefused(removing_live_node_error(host))
        if topology.normal_nodes() == (host,):
            raise RequestRefused(
                f"removenode: node {host} is the last token owner; removing it loses every replica"
            )
    if kind is RequestKind.LEAVE and topology.normal_nodes() == (host,):
        raise RequestRefused(
            f"decommission: node {host} is the last token owner; nothing could take its data"
        )
    if kind is RequestKind.REPLACE:
        old = request.replaced_id
        if old is None or topology.state_of(old) is not NodeState.NORMAL:
            raise RequestRefused(
                f"replace: node {old} is not a normal member, so there is nothing to replace"
            )
        if old in alive:
            raise RequestRefused(f"replace: node {old} is alive; stop it before replacing it")
        if any(old in (r.host_id, r.replaced_id) for r in topology.queue):
            raise RequestRefused(f"replace: node {old} already has a pending request")
    unknown = sorted(str(h) for h in request.ignore_nodes if h not in topology.nodes)
    if unknown:
        raise RequestRefused(f"ignore_nodes names nodes that are not members: {', '.join(unknown)}")


RackCheck = Callable[[Request], str | None]
"""Why a request would break a keyspace's rack rules, or None (``topology.rack_admission``)."""


def _check_move(topology: TopologyState, request: Request) -> None:
    move = request.move
    if move is None or move.target.host != request.host_id:
        raise RequestRefused("a tablet move request must name its tablet and target (the request's node)")
    for role, host in (("source", move.source.host), ("target", move.target.host)):
        if topology.state_of(host) is not NodeState.NORMAL:
            raise RequestRefused(
                f"tablet move: the {role} node {host} is {topology.state_of(host).value}, not normal"
            )


def enqueue(
    topology: TopologyState,
    request: Request,
    alive: frozenset[uuid.UUID],
    new_id: uuid.UUID,
    racks: RackCheck | None = None,
) -> TopologyCommand:
    """The command that queues `request`; RequestRefused if it may not be queued."""
    _check(topology, request, alive)
    broken = None if racks is None else racks(request)
    if broken is not None:
        raise RequestRefused(broken)
    if request.kind is RequestKind.KEYSPACE_RF_CHANGE:
        after = replace(topology, state_id=new_id, queue=(*topology.queue, request))
        return TopologyCommand(
            topology.state_id, after, reason=f"queue {request.kind.value} of {request.subject}"
        )
    after = topology
    node = topology.nodes.get(request.host_id)
    if node is None:
        node = TopoNode(request.host_id, NodeState.NONE)
    after = after.with_node(replace(node, request_id=request.request_id, replaced_id=request.replaced_id))
    after = replace(after, state_id=new_id, queue=(*topology.queue, request))
    return TopologyCommand(
        topology.state_id, after, reason=f"queue {request.kind.value} of {request.host_id}"
    )


def admit_member(
    topology: TopologyState, host_id: uuid.UUID, request_id: uuid.UUID, at_once: bool = False
) -> TopologyState:
    """The topology once group0 admitted a new member (its address and tokens recorded).

    The first node of a cluster is `normal` at once: there is nobody to take data from. Any other
    new node gets a queued `join` request (state `none` until the coordinator starts it, then
    `bootstrapping`) and becomes `normal` only when the coordinator has moved its share of tablet
    replicas onto it. Deterministic: every node applies the same admission to the same state, and
    the state id becomes `request_id`, so a coordinator step decided before it goes stale.
    `at_once`: normal at once whatever the cluster holds (a join entry written before joins were
    requests, replayed from an older node's log: that member owned its data from admission).
    """
    if host_id in topology.nodes:
        return topology
    if at_once or not topology.normal_nodes():
        return replace(topology.with_node(TopoNode(host_id, NodeState.NORMAL)), state_id=request_id)
    return enqueue(topology, Request(request_id, RequestKind.JOIN, host_id), frozenset(), request_id).topology


def join_outcome(topology: TopologyState, host_id: uuid.UUID) -> str | None:
    """How this node's join stands: None while it is queued, bootstrapping or replacing, "" once it is
    `normal`, otherwise the reason it will never be (rolled back, refused, or it left)."""
    state = topology.state_of(host_id)
    if state is NodeState.NORMAL:
        return ""
    if state is NodeState.LEFT:
        ended = [r for r in topology.results if r.request.host_id == host_id and r.error]
        why = ended[-1].error if ended else f"node {host_id} left the cluster"
        return f"{why}; wipe its data directory to start it again as a new node with a new host id"
    if state in (NodeState.NONE, NodeState.BOOTSTRAPPING, NodeState.REPLACING):
        return None  # still joining: a replacing node joins in its dead node's place
    return f"node {host_id} is {state.value}, so it cannot finish joining"
