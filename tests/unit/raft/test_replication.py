"""Log replication: batching, flow control, conflict repair, forwarding, Ready handling."""

from __future__ import annotations

import pytest

from tabletdb.raft.core import RaftNode
from tabletdb.raft.errors import NotLeaderError
from tabletdb.raft.log import MemoryLog
from tabletdb.raft.progress import ProgressState
from tabletdb.raft.types import Config, ConfState, Entry, Message, MessageType, Role

from .harness import Network


def test_proposals_forwarded_from_follower_and_applied_everywhere_in_order() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    for i in range(6):
        net.node(1 + i % 3).propose(b"%d" % i)
    net.run()
    for n in (1, 2, 3):
        assert sorted(net.data(n)) == [b"%d" % i for i in range(6)]
        assert net.data(n) == net.data(1)
    assert not net.violations


def test_propose_without_leader_raises() -> None:
    net = Network([1, 2, 3])
    with pytest.raises(NotLeaderError) as info:
        net.node(1).propose(b"x")
    assert info.value.node == 1 and info.value.leader is None


def test_appends_are_batched_and_inflight_is_bounded() -> None:
    net = Network([1, 2, 3], max_entries_per_append=3, max_inflight_appends=2)
    net.elect(1)
    net.propose(1, b"warm-up")  # node 3 is now in REPLICATE
    assert net.node(1).progress[3].state == ProgressState.REPLICATE
    held: list[Message] = []
    net.filter = lambda m: held.append(m) if m.dst == 3 else m
    for i in range(20):
        net.node(1).propose(b"%d" % i)
    net.run()
    appends = [m for m in held if m.type == MessageType.APPEND and m.entries]
    assert len(appends) == 2, "at most max_inflight_appends unacknowledged APPENDs"
    assert all(len(m.entries) <= 3 for m in appends)
    assert net.node(1).progress[3].is_paused()
    # Releasing them lets the stream continue until node 3 has everything.
    net.filter = lambda m: m
    net.queue.extend(held)
    net.run()
    assert net.data(3) == [b"warm-up", *(b"%d" % i for i in range(20))]


def test_lost_append_recovers_via_heartbeat() -> None:
    net = Network([1, 2, 3], max_inflight_appends=1)
    net.elect(1)
    net.propose(1, b"a")
    dropped: list[Message] = []
    net.filter = lambda m: dropped.append(m) if m.dst == 3 and m.type == MessageType.APPEND else m
    net.propose(1, b"b")
    assert dropped
    net.filter = lambda m: m
    net.propose(1, b"c")
    assert net.data(3) == [b"a"]
    net.tick(2)
    assert net.data(3) == [b"a", b"b", b"c"]


def test_divergent_follower_log_is_repaired() -> None:
    net = Network([1, 2, 3], check_quorum=False, pre_vote=False)
    net.elect(1)
    net.partition([1], [2, 3])
    for i in range(5):
        net.node(1).propose(b"lost%d" % i)  # only on node 1, never committed
    net.run()
    net.elect(2)
    net.propose(2, b"kept")
    net.heal()
    net.tick(3)
    assert net.node(1).role == Role.FOLLOWER
    assert net.data(1) == [b"kept"]
    assert net.peers[1].log.last_index() == net.peers[2].log.last_index()
    assert not net.violations


def test_unreachable_report_moves_replicating_follower_to_probe() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.propose(1, b"a")
    assert net.node(1).progress[2].state == ProgressState.REPLICATE
    net.node(1).report_unreachable(2)
    assert net.node(1).progress[2].state == ProgressState.PROBE


def test_ready_cycle_persists_before_acknowledging() -> None:
    log = MemoryLog(ConfState(voters=frozenset([1, 2])))
    node = RaftNode(Config(id=2), log)
    node.step(Message(MessageType.APPEND, 1, 2, 2, log_term=1, index=1, commit=1, entries=()))
    rd = node.ready()
    assert rd.soft_state is not None and rd.soft_state.leader == 1
    assert rd.hard_state is not None and rd.hard_state.term == 2
    node.advance(rd)
    assert not node.has_ready()
    e = Entry(term=2, index=2, data=b"x")
    node.step(Message(MessageType.APPEND, 1, 2, 2, log_term=1, index=1, commit=2, entries=(e,)))
    rd = node.ready()
    assert rd.entries == [e] and rd.committed_entries == [e]
    assert rd.hard_state is not None and rd.hard_state.commit == 2
    (ack,) = rd.messages
    assert ack.type == MessageType.APPEND_RESPONSE and ack.index == 2 and not ack.reject
    log.append(rd.entries)
    node.advance(rd)
    assert node.applied == 2 and not node.log.unstable and not node.has_ready()


def test_message_for_another_node_is_refused() -> None:
    node = RaftNode(Config(id=1), MemoryLog(ConfState(voters=frozenset([1]))))
    with pytest.raises(ValueError, match="message for 2"):
        node.step(Message(MessageType.HEARTBEAT, 3, 2, 1))


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="election_tick"):
        RaftNode(Config(id=1, election_tick=1, heartbeat_tick=1), MemoryLog())
