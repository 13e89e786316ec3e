"""Snapshots: compaction, InstallSnapshot to far-behind followers, restart from a snapshot."""

from __future__ import annotations

from tabletdb.raft.progress import ProgressState
from tabletdb.raft.types import Message, MessageType

from .harness import Network


def test_snapshot_install_to_far_behind_follower() -> None:
    net = Network([1, 2, 3], max_entries_per_append=4)
    net.elect(1)
    net.crash(3)
    payloads = [b"v%d" % i for i in range(40)]
    for p in payloads:
        net.propose(1, p)
    net.snapshot(1)  # compact the leader's log past everything node 3 has
    net.snapshot(2)
    assert net.peers[1].log.first_index() > net.peers[3].log.last_index() + 1

    sent: list[Message] = []
    net.filter = lambda m: sent.append(m) or m  # type: ignore[func-returns-value]
    net.restart(3)
    net.converge()
    snapshots = [m for m in sent if m.type == MessageType.SNAPSHOT and m.dst == 3]
    assert len(snapshots) == 1
    assert net.peers[3].log.snapshot().meta.index == net.peers[1].log.snapshot().meta.index
    assert net.data(3) == payloads
    # Replication continues with plain appends after the snapshot.
    net.propose(1, b"after")
    assert net.data(3) == [*payloads, b"after"]
    assert net.node(1).progress[3].state == ProgressState.REPLICATE
    assert not net.violations


def test_follower_restarts_from_its_own_snapshot() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    for i in range(10):
        net.propose(1, b"%d" % i)
    net.snapshot(3)
    net.crash(3)
    net.restart(3)
    assert net.node(3).applied == net.peers[3].log.snapshot().meta.index
    net.propose(1, b"more")
    assert net.data(3) == [*(b"%d" % i for i in range(10)), b"more"]
    assert not net.violations


def test_snapshot_without_compaction_keeps_appends() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.crash(3)
    for i in range(5):
        net.propose(1, b"%d" % i)
    net.snapshot(1, compact=False)
    sent: list[Message] = []
    net.filter = lambda m: sent.append(m) or m  # type: ignore[func-returns-value]
    net.restart(3)
    net.converge()
    assert not [m for m in sent if m.type == MessageType.SNAPSHOT]
    assert net.data(3) == [b"%d" % i for i in range(5)]


def test_failed_snapshot_is_retried() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    net.crash(3)
    for i in range(5):
        net.propose(1, b"%d" % i)
    net.snapshot(1)
    net.restart(3)
    lost: list[Message] = []

    def lose_first_snapshot(m: Message) -> Message | None:
        if m.type == MessageType.SNAPSHOT and not lost:
            lost.append(m)
            return None
        return m

    net.filter = lose_first_snapshot
    net.tick(1)  # heartbeat response from 3 -> probe -> snapshot, which is lost and reported
    assert lost and net.node(1).progress[3].state == ProgressState.PROBE
    assert net.node(1).progress[3].probe_sent, "waits for the next heartbeat response to retry"
    net.converge()
    assert net.data(3) == [b"%d" % i for i in range(5)]


def test_stale_snapshot_is_ignored_by_follower() -> None:
    net = Network([1, 2, 3])
    net.elect(1)
    for i in range(5):
        net.propose(1, b"%d" % i)
    old = net.peers[1].log.snapshot()
    follower = net.node(2)
    follower.step(Message(MessageType.SNAPSHOT, 1, 2, net.node(1).term, snapshot=old))
    (reply,) = follower.ready().messages
    assert reply.type == MessageType.APPEND_RESPONSE and reply.index == follower.commit_index
    assert follower.log.unstable_snapshot is None
