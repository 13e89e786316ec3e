"""Read barriers: the leader confirms leadership with a heartbeat round before answering."""

from __future__ import annotations

import pytest

from tabletdb.raft.errors import NotLeaderError
from tabletdb.raft.types import MessageType, ReadState

from .harness import Network


def test_leader_read_index_after_heartbeat_quorum() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.propose(1, b"a")
    commit = net.node(1).commit_index
    net.node(1).read_index(b"r1")
    msgs = net.node(1).ready()
    heartbeats = [m for m in msgs.messages if m.type == MessageType.HEARTBEAT and m.context == b"r1"]
    assert len(heartbeats) == 2 and not msgs.read_states
    net.node(1).advance(msgs)
    net.queue.extend(msgs.messages)
    net.run()
    assert net.peers[1].read_states == [ReadState(index=commit, context=b"r1")]


def test_isolated_leader_cannot_complete_a_read() -> None:
    net = Network([1, 2, 3], check_quorum=False)
    net.elect(1)
    net.partition([1], [2, 3])
    net.node(1).read_index(b"stale?")
    net.tick(5, nodes=[1])
    assert net.peers[1].read_states == []
    # The majority side elects a leader and moves on; the old leader never answered.
    net.tick(40, nodes=[2, 3])
    assert net.leader() in (2, 3)
    assert net.peers[1].read_states == []


def test_follower_read_index_is_forwarded() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.propose(1, b"a")
    net.node(3).read_index(b"f")
    net.run()
    assert net.peers[3].read_states == [ReadState(index=net.node(1).commit_index, context=b"f")]


def test_read_waits_for_a_commit_in_the_leaders_term() -> None:
    net = Network([1, 2, 3], check_quorum=False, pre_vote=False)
    net.elect(1)
    net.filter = lambda m: None if m.type == MessageType.APPEND_RESPONSE else m
    net.propose(1, b"uncommitted")
    net.crash(1)
    net.elect(2)  # its NOOP cannot commit: append responses are lost
    assert not net.node(2).committed_in_term()
    net.node(2).read_index(b"early")
    net.run()
    assert net.peers[2].read_states == []
    net.filter = lambda m: m
    net.tick(2, nodes=[2, 3])
    assert net.node(2).committed_in_term()
    (state,) = net.peers[2].read_states
    assert state.context == b"early" and state.index == net.node(2).commit_index


def test_single_voter_answers_at_once() -> None:
    net = Network([1])
    net.elect(1)
    net.node(1).read_index(b"solo")
    net.flush(1)
    assert net.peers[1].read_states == [ReadState(index=net.node(1).commit_index, context=b"solo")]


def test_read_index_without_leader_raises() -> None:
    net = Network([1, 2, 3])
    with pytest.raises(NotLeaderError, match="no leader"):
        net.node(2).read_index(b"x")


def test_later_ack_releases_earlier_requests() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.filter = lambda m: None if m.type == MessageType.HEARTBEAT and m.context == b"a" else m
    net.node(1).read_index(b"a")
    net.run()
    assert net.peers[1].read_states == []
    net.node(1).read_index(b"b")
    net.run()
    assert [s.context for s in net.peers[1].read_states] == [b"a", b"b"]
