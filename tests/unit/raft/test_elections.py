"""Elections: timeouts, pre-vote, check-quorum, leases, leadership transfer, determinism."""

from __future__ import annotations

import pytest

from tabletdb.raft.core import RaftNode
from tabletdb.raft.errors import NotLeaderError, ProposalDroppedError
from tabletdb.raft.log import MemoryLog
from tabletdb.raft.types import Config, ConfState, HardState, Message, MessageType, Role

from .harness import Network


def test_a_leader_emerges_from_ticks_alone_and_commits_a_noop() -> None:
    net = Network([1, 2, 3])
    net.converge()
    lead = net.leader()
    assert lead is not None
    assert all(net.node(n).leader == lead for n in (1, 2, 3))
    assert all(net.node(n).commit_index == 2 for n in (1, 2, 3))  # bootstrap snapshot + NOOP
    assert not net.violations


def test_single_node_elects_itself_and_commits_alone() -> None:
    net = Network([1])
    net.elect(1)
    net.propose(1, b"a")
    assert net.data(1) == [b"a"]


def test_election_timeout_is_randomised_within_bounds_and_seeded() -> None:
    timeouts = set()
    for seed in range(20):
        node = RaftNode(
            Config(id=1, seed=seed, election_tick=10), MemoryLog(ConfState(voters=frozenset([1, 2])))
        )
        assert 10 <= node.randomized_election_timeout < 20
        timeouts.add(node.randomized_election_timeout)
        again = RaftNode(
            Config(id=1, seed=seed, election_tick=10), MemoryLog(ConfState(voters=frozenset([1, 2])))
        )
        assert again.randomized_election_timeout == node.randomized_election_timeout
    assert len(timeouts) > 1


def test_same_seeds_same_history() -> None:
    def trace() -> list[Message]:
        net = Network([1, 2, 3, 4, 5])
        seen: list[Message] = []

        def record(m: Message) -> Message:
            seen.append(m)
            return m

        net.filter = record
        net.converge()
        lead = net.leader()
        assert lead is not None
        net.propose(lead, b"x")
        net.partition([lead], [n for n in range(1, 6) if n != lead])
        net.tick(30)
        return seen

    assert trace() == trace()


def test_partitioned_leader_steps_down_via_check_quorum() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.partition([1], [2, 3])
    net.tick(2 * net.node(1).config.election_tick)
    assert net.node(1).role == Role.FOLLOWER
    assert net.node(1).leader is None
    new = net.leader()
    assert new in (2, 3)
    with pytest.raises(NotLeaderError):
        net.node(1).propose(b"lost")
    net.heal()
    net.converge()
    assert net.leader() == new
    net.propose(new, b"after")
    assert all(net.data(n) == [b"after"] for n in (1, 2, 3))


def test_without_check_quorum_a_partitioned_leader_keeps_its_role() -> None:
    net = Network([1, 2, 3], check_quorum=False)
    net.elect(1)
    net.partition([1], [2, 3])
    net.tick(30)
    assert net.node(1).role == Role.LEADER  # the contrast the check-quorum test relies on


def test_pre_vote_keeps_a_rejoining_node_from_disrupting_the_leader() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    term = net.node(1).term
    net.partition([1, 2], [3])
    net.tick(50)
    assert net.node(3).term == term, "pre-vote rounds must not raise the isolated node's term"
    net.heal()
    net.tick(5)
    assert net.leader() == 1 and net.node(1).term == term
    assert net.node(3).leader == 1


def test_without_pre_vote_a_rejoining_node_disrupts_the_leader() -> None:
    net = Network([1, 2, 3], pre_vote=False, check_quorum=False)
    net.elect(1)
    term = net.node(1).term
    net.partition([1, 2], [3])
    net.tick(50)
    assert net.node(3).term > term + 1
    net.heal()
    net.tick(2 * net.node(3).config.election_tick)
    assert net.node(1).term > term  # node 3's next campaign at its higher term deposed the leader


def test_lease_ignores_vote_requests_while_a_leader_is_heard() -> None:
    net = Network([1, 2, 3], pre_vote=False)
    net.elect(1)
    term = net.node(2).term
    net.node(2).step(
        Message(MessageType.VOTE, src=3, dst=2, term=term + 5, log_term=99, index=99),
    )
    assert net.node(2).term == term and net.node(2).leader == 1
    assert not net.node(2).msgs


def test_stale_candidate_vote_rejected_by_log_check() -> None:
    net = Network([1, 2, 3], check_quorum=False)
    net.elect(1)
    net.propose(1, b"x")
    node = net.node(2)
    node.become_follower(node.term, None)
    node.step(Message(MessageType.VOTE, src=3, dst=2, term=node.term + 1, log_term=1, index=1))
    (reply,) = node.ready().messages
    assert reply.type == MessageType.VOTE_RESPONSE and reply.reject


def test_vote_is_remembered_across_restart() -> None:
    log = MemoryLog(ConfState(voters=frozenset([1, 2, 3])))
    log.set_hard_state(HardState(term=5, vote=3, commit=0))
    node = RaftNode(Config(id=1, pre_vote=False), log)
    assert node.term == 5 and node.vote == 3
    node.step(Message(MessageType.VOTE, src=2, dst=1, term=5, log_term=0, index=0))
    (reply,) = node.ready().messages
    assert reply.reject


def test_learner_and_non_member_never_campaign() -> None:
    net = Network([1, 2], learners=[3], extra=[4])
    net.partition([1, 2], [3], [4])
    net.tick(60)
    assert net.node(3).role == Role.FOLLOWER and net.node(3).term == 1  # the bootstrap term
    assert net.node(4).role == Role.FOLLOWER and net.node(4).term == 0


def test_leadership_transfer_to_caught_up_follower() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.propose(1, b"a")
    net.node(1).transfer_leadership(2)
    net.run()
    assert net.leader() == 2
    assert net.node(1).role == Role.FOLLOWER and net.node(1).leader == 2
    net.propose(2, b"b")
    assert all(net.data(n) == [b"a", b"b"] for n in (1, 2, 3))


def test_leadership_transfer_catches_up_a_lagging_target_first() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.partition([1, 2], [3])
    for i in range(5):
        net.propose(1, b"%d" % i)
    net.heal()
    net.node(1).transfer_leadership(3)
    with pytest.raises(ProposalDroppedError):
        net.node(1).propose(b"during transfer")
    net.run()
    assert net.leader() == 3
    assert net.data(3) == [b"%d" % i for i in range(5)]


def test_transfer_requested_on_a_follower_is_forwarded() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.node(3).transfer_leadership(3)
    net.run()
    assert net.leader() == 3


def test_transfer_aborts_after_an_election_timeout() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.partition([1, 2], [3])
    net.node(1).transfer_leadership(3)
    assert net.node(1).lead_transferee == 3
    net.tick(net.node(1).config.election_tick)
    assert net.node(1).lead_transferee is None
    assert net.leader() == 1
    net.propose(1, b"accepted again")
    assert net.data(2) == [b"accepted again"]
