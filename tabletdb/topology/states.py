"""The words of the topology state machine, spelled as ScyllaDB stores them in `system.topology`
(spec/topology.md), so the rendered table reads the same as ScyllaDB's."""

from __future__ import annotations

from enum import StrEnum


class NodeState(StrEnum):
    """Where one node is in its life; only NORMAL nodes own data outside a transition."""

    NONE = "none"
    BOOTSTRAPPING = "bootstrapping"
    DECOMMISSIONING = "decommissioning"
    REMOVING = "removing"
    REPLACING = "replacing"
    REBUILDING = "rebuilding"
    NORMAL = "normal"
    LEFT = "left"


class RequestKind(StrEnum):
    """What was asked of the coordinator for one node (`topology_request`)."""

    JOIN = "join"
    LEAVE = "leave"
    REMOVE = "remove"
    REPLACE = "replace"
    MOVE = "move"
    """One tablet replica moved by an operator (REST ``tablets/move``); ``Request.move`` says which."""
    BALANCE = "balance"
    """A round of moves the load balancer planned (``topology.balancing``): made by the coordinator
    when idle, never queued; ``host_id`` is one of the targets, for the record only."""
    KEYSPACE_RF_CHANGE = "keyspace_rf_change"
    """ALTER KEYSPACE of a tablets keyspace's replication (``topology.rf_change``): a global
    request, ``host_id`` is the node that queued it, for the record only."""


class TransitionState(StrEnum):
    """The stage of the cluster-wide transition in progress (`transition_state`)."""

    TABLET_MIGRATION = "tablet migration"
    """Replicas move onto a joining (or replacing) node."""
    TABLET_DRAINING = "tablet draining"
    """Replicas move off a leaving (or removed) node."""
    WRITE_BOTH_READ_OLD = "write both read old"
    """Vnode ranges: writes go to the old and the new owners, reads to the old; ranges stream."""
    WRITE_BOTH_READ_NEW = "write both read new"
    """Vnode ranges: writes still go to both, reads to the new owners."""
    ROLLBACK_TO_NORMAL = "rollback to normal"
    """The request failed; migrations that had not switched reads are reverted."""


class CleanupStatus(StrEnum):
    CLEAN = "clean"
    NEEDED = "needed"
    RUNNING = "running"


# The state a node's request puts it in while its transition runs.
STATE_DURING: dict[RequestKind, NodeState] = {
    RequestKind.JOIN: NodeState.BOOTSTRAPPING,
    RequestKind.LEAVE: NodeState.DECOMMISSIONING,
    RequestKind.REMOVE: NodeState.REMOVING,
    RequestKind.REPLACE: NodeState.REPLACING,
    RequestKind.MOVE: NodeState.NORMAL,  # moving a tablet replica leaves both nodes normal
    RequestKind.BALANCE: NodeState.NORMAL,
    RequestKind.KEYSPACE_RF_CHANGE: NodeState.NORMAL,
}
