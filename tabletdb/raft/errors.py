"""Errors the Raft core raises to its driver for local requests it cannot accept."""

from __future__ import annotations

from tabletdb.raft.types import NodeId


class RaftError(Exception):
    """Base class for errors raised by the Raft core."""


class NotLeaderError(RaftError):
    """A request needs the leader and none is known to forward it to; retry after an election."""

    def __init__(self, node: NodeId, term: int, leader: NodeId | None = None) -> None:
        self.node = node
        self.term = term
        self.leader = leader
        where = "no leader is known" if leader is None else f"leader is {leader}"
        super().__init__(f"node {node} at term {term} cannot serve the request: {where}")


class ProposalDroppedError(RaftError):
    """The leader refused a proposal for a transient reason (e.g. a leadership transfer)."""


class ConfChangeError(RaftError):
    """A membership change is invalid for the current configuration or cannot start yet."""
