"""Quorum arithmetic for simple and joint configurations.

Kept apart from the core so it can be checked exhaustively against a brute-force model: every
safety argument of Raft leans on "any two quorums intersect", and a joint configuration is only
safe if decisions need a majority of *both* the incoming and the outgoing voter sets.

An empty voter set is treated as agreeing to everything (its committed index is `INFINITE` and it
always wins votes); that makes the non-joint case the joint case with an empty outgoing set.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from enum import Enum

from tabletdb.raft.types import ConfState, NodeId

INFINITE = 2**63 - 1
"""Committed index of an empty voter set: the identity of `min` in joint_committed_index."""


class VoteResult(Enum):
    PENDING = 0
    WON = 1
    LOST = 2


def committed_index(voters: Collection[NodeId], match: Mapping[NodeId, int]) -> int:
    """The highest index stored by a majority of `voters` (missing nodes count as 0)."""
    if not voters:
        return INFINITE
    acked = sorted((match.get(v, 0) for v in voters), reverse=True)
    return acked[len(acked) // 2]


def joint_committed_index(conf: ConfState, match: Mapping[NodeId, int]) -> int:
    """The highest index stored by a majority of the incoming and of the outgoing voters."""
    return min(committed_index(conf.voters, match), committed_index(conf.voters_outgoing, match))


def vote_result(voters: Collection[NodeId], votes: Mapping[NodeId, bool]) -> VoteResult:
    """Whether `votes` (granted/rejected; absent = not yet answered) decide an election."""
    if not voters:
        return VoteResult.WON
    need = len(voters) // 2 + 1
    granted = sum(1 for v in voters if votes.get(v) is True)
    missing = sum(1 for v in voters if v not in votes)
    if granted >= need:
        return VoteResult.WON
    if granted + missing >= need:
        return VoteResult.PENDING
    return VoteResult.LOST


def joint_vote_result(conf: ConfState, votes: Mapping[NodeId, bool]) -> VoteResult:
    """A joint election is won only if both halves win and lost as soon as either half loses."""
    incoming = vote_result(conf.voters, votes)
    outgoing = vote_result(conf.voters_outgoing, votes)
    if incoming == outgoing:
        return incoming
    if VoteResult.LOST in (incoming, outgoing):
        return VoteResult.LOST
    return VoteResult.PENDING


def has_quorum(conf: ConfState, alive: Collection[NodeId]) -> bool:
    """Whether the nodes in `alive` form a quorum of `conf` (check-quorum, read barriers)."""
    votes = {n: True for n in alive}
    return joint_vote_result(conf, votes) == VoteResult.WON
