"""Membership changes through the core: simple changes, joint consensus (with crashes at each
step), learners, removing the leader."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tabletdb.raft.core import RaftNode
from tabletdb.raft.errors import ConfChangeError
from tabletdb.raft.log import MemoryLog, bootstrap_state
from tabletdb.raft.types import (
    ConfChange,
    ConfChangeSingle,
    ConfChangeType,
    Config,
    ConfState,
    EntryKind,
    Message,
    MessageType,
    Role,
    Snapshot,
    SnapshotMeta,
)

from .harness import Network

ADD, LEARNER, REMOVE = ConfChangeType.ADD_VOTER, ConfChangeType.ADD_LEARNER, ConfChangeType.REMOVE


def change(*items: tuple[ConfChangeType, int]) -> ConfChange:
    return ConfChange(changes=tuple(ConfChangeSingle(t, n) for t, n in items))


def test_add_voter_then_it_counts_toward_quorum() -> None:
    net = Network([1, 2, 3], extra=[4])
    net.elect(1)
    net.node(1).propose_conf_change(change((ADD, 4)))
    net.run()
    net.converge()
    assert all(net.node(n).conf_state == ConfState(voters=frozenset([1, 2, 3, 4])) for n in (1, 2, 3, 4))
    # With 4 voters a quorum is 3: two crashed nodes block commits.
    net.crash(3)
    net.crash(4)
    net.propose(1, b"blocked")
    assert net.data(1) == []
    net.restart(4)
    net.converge()
    assert net.data(1) == [b"blocked"] and net.data(4) == [b"blocked"]


def test_one_change_at_a_time() -> None:
    net = Network([1, 2, 3], extra=[4, 5])
    net.elect(1)
    net.partition([1], [2, 3, 4, 5])  # the first change cannot commit
    net.node(1).propose_conf_change(change((ADD, 4)))
    with pytest.raises(ConfChangeError, match="not applied yet"):
        net.node(1).propose_conf_change(change((ADD, 5)))


def test_invalid_changes_are_refused_on_the_leader() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    with pytest.raises(ConfChangeError):
        net.node(1).propose_conf_change(ConfChange(leave_joint=True))
    with pytest.raises(ConfChangeError):
        net.node(1).propose_conf_change(change((REMOVE, 1), (REMOVE, 2), (REMOVE, 3)))


def test_invalid_forwarded_change_becomes_a_noop() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.node(2).propose_conf_change(ConfChange(leave_joint=True))
    net.run()
    last = net.peers[1].applied[-1]
    assert last.kind == EntryKind.NOOP and last.term == net.node(1).term and last.index == 3


def test_learner_replicates_but_does_not_vote_or_count() -> None:
    net = Network([1, 2, 3], extra=[4])
    net.elect(1)
    net.node(1).propose_conf_change(change((LEARNER, 4)))
    net.run()
    net.propose(1, b"a")
    assert net.data(4) == [b"a"]
    assert net.node(1).conf_state.learners == frozenset([4])
    # Learner alone with the leader is not a quorum.
    net.partition([1, 4], [2, 3])
    net.propose(1, b"b")
    assert net.data(1) == [b"a"]
    # The learner never campaigns, the voters elect among themselves.
    net.tick(40)
    assert net.node(4).role == Role.FOLLOWER
    assert net.leader() in (1, 2, 3)


def test_promote_learner_to_voter() -> None:
    net = Network([1, 2, 3], learners=[4])
    net.elect(1)
    net.node(1).propose_conf_change(change((ADD, 4)))
    net.run()
    net.converge()
    assert net.node(4).conf_state.voters == frozenset([1, 2, 3, 4])
    assert not net.node(4).conf_state.learners


def test_removed_leader_steps_down_after_committing_its_removal() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.node(1).propose_conf_change(change((REMOVE, 1)))
    net.run()
    assert net.node(1).role == Role.FOLLOWER
    new = net.leader()
    assert new in (2, 3), "the removed leader hands over with TIMEOUT_NOW"
    net.propose(new, b"after")
    assert net.data(2) == [b"after"] and net.data(3) == [b"after"]
    net.tick(60, nodes=[1])
    assert net.node(1).role == Role.FOLLOWER, "a node outside the configuration never campaigns"


def _enter_joint_and_stop(net: Network, cc: ConfChange) -> None:
    _enter_joint_and_stop_on(net, 1, cc)


def _enter_joint_and_stop_on(net: Network, leader: int, cc: ConfChange) -> None:
    """Propose `cc` on `leader` and deliver until it has applied the joint configuration."""
    net.node(leader).propose_conf_change(cc)
    net.flush_all()
    while net.queue and not net.node(leader).conf_state.joint:
        net.deliver(net.queue.pop(0))
    assert net.node(leader).conf_state.joint


def _assert_converged_conf(net: Network, nodes: list[int], voters: set[int]) -> None:
    net.converge()
    for n in nodes:
        assert net.node(n).conf_state == ConfState(voters=frozenset(voters)), (n, net.node(n).conf_state)
    lead = net.leader()
    assert lead in voters
    net.propose(lead, b"after")
    for n in nodes:
        assert net.data(n)[-1:] == [b"after"], n
    assert not net.violations


def test_joint_consensus_replace_two_voters() -> None:
    net = Network([1, 2, 3], extra=[4, 5])
    net.elect(1)
    net.propose(1, b"before")
    net.node(1).propose_conf_change(change((ADD, 4), (ADD, 5), (REMOVE, 2), (REMOVE, 3)))
    net.run()
    kinds = [e for e in net.peers[1].applied if e.kind == EntryKind.CONF_CHANGE]
    assert len(kinds) == 2, "entering joint then the automatic leave"
    _assert_converged_conf(net, [1, 4, 5], {1, 4, 5})
    assert net.data(4) == [b"before", b"after"]


def test_joint_needs_both_majorities() -> None:
    net = Network([1, 2, 3], extra=[4, 5, 6])
    net.elect(1)
    _enter_joint_and_stop(net, change((ADD, 4), (ADD, 5), (ADD, 6), (REMOVE, 2), (REMOVE, 3)))
    # Incoming {1,4,5,6} is reachable but the outgoing {1,2,3} has only the leader: stuck.
    net.partition([1, 4, 5, 6], [2, 3])
    net.run()
    assert net.node(1).conf_state.joint
    net.propose(1, b"x")
    assert b"x" not in net.data(1)
    net.heal()
    _assert_converged_conf(net, [1, 4, 5, 6], {1, 4, 5, 6})


def test_joint_leader_crashes_before_leaving_and_new_leader_leaves() -> None:
    net = Network([1, 2, 3], extra=[4, 5])
    net.elect(1)
    _enter_joint_and_stop(net, change((ADD, 4), (ADD, 5), (REMOVE, 1)))
    net.crash(1)  # its leave-joint entry never left the node
    _assert_converged_conf(net, [2, 3, 4, 5], {2, 3, 4, 5})
    lead, term = net.leader(), net.node(2).term
    net.restart(1)
    # It restarts believing it is still in the (joint) configuration and may pre-vote, but
    # pre-vote and the leader lease keep it from disrupting the new configuration.
    net.tick(40)
    assert net.node(1).role != Role.LEADER
    assert net.leader() == lead and net.node(2).term == term


def test_joint_follower_crash_and_restart_replays_membership() -> None:
    net = Network([1, 2, 3], extra=[4, 5])
    net.elect(1)
    _enter_joint_and_stop(net, change((ADD, 4), (ADD, 5), (REMOVE, 3)))
    net.crash(4)
    net.run()
    net.restart(4)  # its MemoryLog starts with no membership; replay must rebuild it
    _assert_converged_conf(net, [1, 2, 4, 5], {1, 2, 4, 5})


def test_joint_crash_before_joint_entry_commits() -> None:
    net = Network([1, 2, 3], extra=[4, 5])
    net.elect(1)
    net.filter = lambda m: None if m.type == MessageType.APPEND_RESPONSE else m
    net.node(1).propose_conf_change(change((ADD, 4), (ADD, 5), (REMOVE, 2)))
    net.run()
    net.crash(1)
    net.filter = lambda m: m
    net.restart(1)
    net.converge()
    lead = net.leader()
    assert lead is not None
    final = net.node(lead).conf_state
    assert not final.joint
    assert final.voters in (frozenset([1, 2, 3]), frozenset([1, 3, 4, 5]))
    assert not net.violations


def test_demote_voter_to_learner_in_joint_change() -> None:
    net = Network([1, 2, 3], extra=[4])
    net.elect(1)
    net.node(1).propose_conf_change(change((ADD, 4), (LEARNER, 3)))
    net.run()
    net.converge()
    assert net.node(1).conf_state == ConfState(voters=frozenset([1, 2, 4]), learners=frozenset([3]))
    net.propose(1, b"x")
    assert net.data(3) == [b"x"]


def test_removed_leader_with_longer_log_unwedges_remaining_voter() -> None:
    """Voters {1, 2}, leader 2 removes itself (joint: incoming {1}, outgoing {1, 2}). Its removal
    commits but node 1 never hears so, and 2 has appended entries 1 lacks; then 2 crashes.
    Node 1 still needs 2's vote and 2 must refuse it (longer log): only 2 leading briefly as a
    non-member and handing over can make progress."""
    net = Network([1, 2], extra=[3])
    net.elect(2)
    _enter_joint_and_stop_on(net, 2, change((REMOVE, 2), (LEARNER, 3)))
    leave = net.peers[2].log.last_index()
    net.node(2).propose(b"tail")  # accepted: the removal is not applied yet
    net.flush(2)

    def hide_progress(m: Message) -> Message | None:
        if m.src == 2 and m.type in (MessageType.APPEND, MessageType.HEARTBEAT):
            return replace(
                m, entries=tuple(e for e in m.entries if e.index <= leave), commit=min(m.commit, leave - 1)
            )
        return m

    net.filter = hide_progress
    net.run()
    assert net.node(2).commit_index >= leave and not net.node(2).conf_state.joint
    assert net.node(1).conf_state.joint and net.node(1).commit_index < leave
    net.crash(2)
    net.filter = lambda m: m
    net.restart(2)
    net.flush(2)  # replays the committed removal
    assert not net.node(2).promotable()
    net.converge()
    assert net.leader() == 1
    assert net.node(1).conf_state == ConfState(voters=frozenset([1]), learners=frozenset([3]))
    assert net.data(1) == [b"tail"]
    assert not net.violations


class FoundingAtZero(MemoryLog):
    """A log bootstrapped the other way: membership at the base (index 0), no snapshot yet."""

    def __init__(self, conf: ConfState) -> None:
        super().__init__()
        self._snapshot = Snapshot(meta=SnapshotMeta(index=0, term=0, conf=conf))


def test_founding_membership_at_index_zero_is_rebased_onto_a_snapshot() -> None:
    conf = ConfState(voters=frozenset([1, 2, 3]))
    node = RaftNode(Config(id=1), FoundingAtZero(conf))
    rd = node.ready()
    assert rd.snapshot == bootstrap_state(conf)[0]
    assert rd.hard_state == bootstrap_state(conf)[1]
    node.advance(rd)
    assert node.applied == 1 and node.conf_state == conf


def test_joiner_learns_founding_membership_when_founders_bootstrapped_at_zero() -> None:
    net = Network([], extra=[4])
    conf = ConfState(voters=frozenset([1, 2, 3]))
    for n in (1, 2, 3):
        net._start(n, FoundingAtZero(conf))
    net.flush_all()
    net.elect(1)
    net.node(1).propose_conf_change(change((ADD, 4)))
    net.run()
    net.converge()
    assert net.node(4).conf_state == ConfState(voters=frozenset([1, 2, 3, 4]))
    net.partition([1, 2, 3], [4])
    net.tick(60)
    assert net.node(4).role != Role.LEADER, "a joiner must never think it is a majority alone"
    assert not net.violations
