"""ConfChange application rules (simple vs joint, leave, validation)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.raft.confchange import apply_conf_change, is_voter, members
from tabletdb.raft.errors import ConfChangeError
from tabletdb.raft.types import ConfChange, ConfChangeSingle, ConfChangeType, ConfState

ADD, LEARNER, REMOVE = ConfChangeType.ADD_VOTER, ConfChangeType.ADD_LEARNER, ConfChangeType.REMOVE
BASE = ConfState(voters=frozenset([1, 2, 3]), learners=frozenset([4]))


def cc(*items: tuple[ConfChangeType, int]) -> ConfChange:
    return ConfChange(changes=tuple(ConfChangeSingle(t, n) for t, n in items))


def test_simple_add_and_remove() -> None:
    assert apply_conf_change(BASE, cc((ADD, 5))).voters == {1, 2, 3, 5}
    assert apply_conf_change(BASE, cc((REMOVE, 2))) == ConfState(
        voters=frozenset([1, 3]), learners=frozenset([4])
    )
    promoted = apply_conf_change(BASE, cc((ADD, 4)))
    assert promoted == ConfState(voters=frozenset([1, 2, 3, 4]))


def test_multi_change_enters_joint_and_leave_exits() -> None:
    joint = apply_conf_change(BASE, cc((ADD, 5), (REMOVE, 1)))
    assert joint.joint and joint.voters == {2, 3, 5} and joint.voters_outgoing == {1, 2, 3}
    assert is_voter(joint, 1) and is_voter(joint, 5)
    final = apply_conf_change(joint, ConfChange(leave_joint=True))
    assert final == ConfState(voters=frozenset([2, 3, 5]), learners=frozenset([4]))


def test_demotion_in_joint_keeps_outgoing_vote_until_leave() -> None:
    joint = apply_conf_change(BASE, cc((LEARNER, 3), (ADD, 5)))
    assert 3 in joint.learners and 3 in joint.voters_outgoing and 3 not in joint.voters
    assert is_voter(joint, 3)
    final = apply_conf_change(joint, ConfChange(leave_joint=True))
    assert not is_voter(final, 3) and 3 in members(final)


@pytest.mark.parametrize(
    ("conf", "change", "message"),
    [
        (BASE, ConfChange(leave_joint=True), "not joint"),
        (BASE, ConfChange(), "empty"),
        (BASE, cc((REMOVE, 1), (REMOVE, 2), (REMOVE, 3)), "every voter"),
        (apply_conf_change(BASE, cc((ADD, 5), (ADD, 6))), cc((ADD, 7)), "leave it"),
        (BASE, ConfChange(changes=(ConfChangeSingle(ADD, 5),), leave_joint=True), "no changes"),
        (BASE, cc((ADD, 0)), "positive"),
    ],
)
def test_invalid_changes(conf: ConfState, change: ConfChange, message: str) -> None:
    with pytest.raises(ConfChangeError, match=message):
        apply_conf_change(conf, change)


@given(st.lists(st.tuples(st.sampled_from(ConfChangeType), st.integers(1, 6)), min_size=1, max_size=4))
def test_invariants_hold_after_any_valid_change(items: list[tuple[ConfChangeType, int]]) -> None:
    try:
        after = apply_conf_change(BASE, cc(*items))
    except ConfChangeError:
        return
    assert after.voters, "a configuration always keeps a voter"
    assert not after.voters & after.learners
    if len(items) == 1:
        assert not after.joint and len(after.voters ^ BASE.voters) <= 1
    else:
        assert after.voters_outgoing == BASE.voters
