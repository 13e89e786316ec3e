"""Quorum math against a brute-force model, plus the intersection property it exists for."""

from __future__ import annotations

from itertools import product

from hypothesis import given
from hypothesis import strategies as st

from tabletdb.raft.quorum import (
    INFINITE,
    VoteResult,
    committed_index,
    has_quorum,
    joint_committed_index,
    joint_vote_result,
    vote_result,
)
from tabletdb.raft.types import ConfState

node_sets = st.frozensets(st.integers(min_value=1, max_value=7), max_size=7)


def majority(voters: frozenset[int], agreeing: set[int]) -> bool:
    return not voters or len(voters & agreeing) * 2 > len(voters)


def brute_committed(conf: ConfState, match: dict[int, int]) -> int:
    """The largest index that a majority of each half has stored (INFINITE if unconstrained)."""
    candidates = sorted({0, *match.values()}, reverse=True)
    members = conf.voters | conf.voters_outgoing
    if not members:
        return INFINITE
    for index in candidates:
        stored = {n for n in members if match.get(n, 0) >= index}
        if majority(conf.voters, stored) and majority(conf.voters_outgoing, stored):
            return index
    return 0


def brute_vote(conf: ConfState, votes: dict[int, bool]) -> VoteResult:
    """Enumerate every way the missing voters could answer."""
    members = sorted(conf.voters | conf.voters_outgoing)
    missing = [n for n in members if n not in votes]
    outcomes = set()
    for answers in product([True, False], repeat=len(missing)):
        full = {**votes, **dict(zip(missing, answers))}
        granted = {n for n, v in full.items() if v}
        outcomes.add(majority(conf.voters, granted) and majority(conf.voters_outgoing, granted))
    if outcomes == {True}:
        return VoteResult.WON
    if outcomes == {False}:
        return VoteResult.LOST
    return VoteResult.PENDING


@st.composite
def confs_and_match(draw: st.DrawFn) -> tuple[ConfState, dict[int, int]]:
    conf = ConfState(voters=draw(node_sets), voters_outgoing=draw(node_sets))
    nodes = sorted(conf.voters | conf.voters_outgoing)
    match = {n: draw(st.integers(min_value=0, max_value=10)) for n in nodes if draw(st.booleans())}
    return conf, match


@st.composite
def confs_and_votes(draw: st.DrawFn) -> tuple[ConfState, dict[int, bool]]:
    conf = ConfState(voters=draw(node_sets), voters_outgoing=draw(node_sets))
    nodes = sorted(conf.voters | conf.voters_outgoing | {99})  # 99: a vote from a non-member
    votes = {n: draw(st.booleans()) for n in nodes if draw(st.booleans())}
    return conf, votes


@given(confs_and_match())
def test_joint_committed_index_matches_brute_force(case: tuple[ConfState, dict[int, int]]) -> None:
    conf, match = case
    assert joint_committed_index(conf, match) == brute_committed(conf, match)


@given(confs_and_votes())
def test_joint_vote_result_matches_brute_force(case: tuple[ConfState, dict[int, bool]]) -> None:
    conf, votes = case
    assert joint_vote_result(conf, votes) == brute_vote(conf, votes)


@given(node_sets, node_sets, st.sets(st.integers(1, 7)), st.sets(st.integers(1, 7)))
def test_any_two_quorums_intersect(
    incoming: frozenset[int], outgoing: frozenset[int], a: set[int], b: set[int]
) -> None:
    conf = ConfState(voters=incoming, voters_outgoing=outgoing)
    if incoming and has_quorum(conf, a) and has_quorum(conf, b):
        assert a & b & incoming
        if outgoing:
            assert a & b & outgoing


def test_examples() -> None:
    assert committed_index({1, 2, 3}, {1: 5, 2: 3, 3: 1}) == 3
    assert committed_index({1, 2, 3, 4}, {1: 5, 2: 3, 3: 1, 4: 9}) == 3
    assert committed_index(set(), {}) == INFINITE
    assert vote_result({1, 2, 3}, {1: True}) == VoteResult.PENDING
    assert vote_result({1, 2, 3}, {1: True, 2: True}) == VoteResult.WON
    assert vote_result({1, 2, 3}, {1: False, 2: False}) == VoteResult.LOST
    joint = ConfState(voters=frozenset([1, 2, 3]), voters_outgoing=frozenset([3, 4, 5]))
    assert joint_committed_index(joint, {1: 9, 2: 9, 3: 4, 4: 4, 5: 1}) == 4
    assert not has_quorum(joint, {1, 2})
    assert has_quorum(joint, {1, 3, 4})
