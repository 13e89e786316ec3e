"""The simulator's parts in isolation: event order, network faults, checkers, state machine, CLI."""

from __future__ import annotations

import random

from click.testing import CliRunner

from tabletdb.cli.sim_cmd import sim_group
from tabletdb.raft.core import RaftNode
from tabletdb.raft.log import MemoryLog
from tabletdb.raft.types import Config, ConfState, Entry, EntryKind, Message, MessageType
from tabletdb.sim.checkers import InvariantChecker
from tabletdb.sim.events import EventLoop
from tabletdb.sim.network import SimNetwork
from tabletdb.sim.statemachine import KVStateMachine, encode_command


def test_events_run_in_time_then_insertion_order() -> None:
    loop = EventLoop()
    seen: list[str] = []
    loop.at(5, lambda: seen.append("b"))
    loop.at(1, lambda: seen.append("a"))
    loop.at(5, lambda: seen.append("c"))
    loop.at(9, lambda: seen.append("late"))
    loop.run_until(5)
    assert seen == ["a", "b", "c"] and loop.now == 5
    loop.after(-3, lambda: seen.append("never in the past"))
    loop.run_until(5)
    assert seen[-1] == "never in the past"


def _net(seed: int = 1) -> tuple[EventLoop, SimNetwork, list[Message], list[tuple[int, bool]]]:
    loop = EventLoop()
    got: list[Message] = []
    status: list[tuple[int, bool]] = []

    def deliver(m: Message) -> bool:
        got.append(m)
        return True

    net = SimNetwork(loop, random.Random(seed), deliver, lambda m, ok: status.append((m.dst, ok)))
    return loop, net, got, status


def msg(src: int, dst: int, index: int = 0, kind: MessageType = MessageType.APPEND) -> Message:
    return Message(kind, src, dst, term=1, index=index)


def test_network_reorders_and_duplicates_but_never_invents() -> None:
    loop, net, got, _ = _net()
    net.quality.max_delay = 50
    net.quality.duplicate = 0.5
    sent = [msg(1, 2, i) for i in range(100)]
    for m in sent:
        net.send(m)
    loop.run_until(1000)
    indices = [m.index for m in got]
    assert set(indices) == set(range(100)) and len(indices) > 100
    assert indices != sorted(indices)


def test_partitions_symmetric_and_one_way() -> None:
    loop, net, got, _ = _net()
    net.partition([[1], [2, 3]])
    net.cut_one_way(2, 3)
    for src, dst in [(1, 2), (2, 1), (2, 3), (3, 2), (3, 1)]:
        net.send(msg(src, dst))
    loop.run_until(100)
    assert [(m.src, m.dst) for m in got] == [(3, 2)]
    net.heal()
    net.send(msg(1, 2))
    loop.run_until(200)
    assert (got[-1].src, got[-1].dst) == (1, 2)


def test_partition_also_stops_messages_in_flight_and_reports_lost_snapshots() -> None:
    loop, net, got, status = _net()
    net.send(msg(1, 2, kind=MessageType.SNAPSHOT))
    net.isolate(1, [1, 2, 3])
    loop.run_until(100)
    assert got == [] and status == [(2, False)]
    net.heal()
    net.send(msg(1, 2, kind=MessageType.SNAPSHOT))
    loop.run_until(200)
    assert status[-1] == (2, True)


def test_loss_drops_roughly_the_configured_share() -> None:
    loop, net, got, _ = _net()
    net.quality.loss = 0.5
    for i in range(400):
        net.send(msg(1, 2, i))
    loop.run_until(100)
    assert 100 < len(got) < 300 and net.dropped == 400 - len(got)


def e(index: int, term: int, data: bytes = b"") -> Entry:
    return Entry(term, index, EntryKind.NORMAL, data)


def test_checker_flags_two_leaders_in_one_term() -> None:
    checker = InvariantChecker()
    for node in (1, 2):
        raft = RaftNode(Config(id=node), MemoryLog(ConfState(voters=frozenset({1, 2, 3}))))
        raft.term = 4
        checker.leader_elected(node, raft)
    assert any("election safety" in v and "term 4" in v for v in checker.violations)


def test_checker_flags_different_entries_applied_at_one_index() -> None:
    checker = InvariantChecker()
    checker.entry_applied(1, e(3, 2, b"x"))
    checker.entry_applied(2, e(3, 2, b"x"))
    assert not checker.violations
    checker.entry_applied(3, e(3, 3, b"y"))
    assert "state-machine safety: at index 3" in checker.violations[0]


def test_checker_flags_leader_missing_an_applied_entry() -> None:
    checker = InvariantChecker()
    checker.entry_applied(1, e(1, 1, b"a"))
    log = MemoryLog()
    log.append([e(1, 2, b"other")])
    raft = RaftNode(Config(id=2), log)
    raft.term = 3
    checker.leader_elected(2, raft)
    assert "leader completeness" in checker.violations[0]


def test_checker_commit_rules() -> None:
    checker = InvariantChecker()
    checker.commit_advanced(1, 1, 5, None, 1)
    checker.commit_advanced(1, 1, 4, None, 1)
    assert "moved its commit index back from 5 to 4" in checker.violations[0]
    checker.commit_advanced(1, 2, 2, None, 1)  # a new incarnation may restart lower
    assert len(checker.violations) == 1
    checker.commit_advanced(1, 2, 3, 7, 7)
    assert len(checker.violations) == 1
    checker.commit_advanced(1, 2, 4, 7, 6)
    assert "leader commit rule" in checker.violations[1]
    checker.restarted(2, 2, durable_commit=9, recovered_commit=8)
    assert "durability" in checker.violations[2]


def test_checker_log_matching() -> None:
    def node(entries: list[Entry]) -> RaftNode:
        log = MemoryLog()
        log.append(entries)
        return RaftNode(Config(id=1), log)

    checker = InvariantChecker()
    same = [e(1, 1, b"a"), e(2, 1, b"b")]
    checker.check_log_matching([(1, node(same)), (2, node([*same, e(3, 2)]))])
    assert not checker.violations
    checker.check_log_matching([(1, node([e(1, 1, b"a"), e(2, 2)])), (2, node([e(1, 1, b"z"), e(2, 2)]))])
    assert "log matching" in checker.violations[0]


def test_state_machine_dedupes_and_round_trips_snapshots() -> None:
    sm = KVStateMachine()
    assert sm.apply(encode_command(1, 1, "write", "r0", 5)) == ((1, 1), True)
    assert sm.apply(encode_command(1, 1, "write", "r0", 6)) == ((1, 1), False)
    sm.apply(encode_command(1, 2, "add", "s0", 3))
    sm.apply(encode_command(2, 1, "append", "l0", 9))
    sm.apply(encode_command(2, 2, "append", "l0", 8))
    copy = KVStateMachine.restore(sm.snapshot())
    assert copy.snapshot() == sm.snapshot()
    assert copy.read("register", "r0") == 5 and copy.read("set", "s0") == frozenset({3})
    assert copy.read("log", "l0") == (9, 8) and copy.read("register", "nope") is None


def test_cli_summary_line_and_exit_status() -> None:
    runner = CliRunner()
    ok = runner.invoke(sim_group, ["raft", "--seeds", "2", "--ops", "30"])
    assert ok.exit_code == 0, ok.output
    assert ok.output.strip().splitlines()[-1].startswith("seeds: 2, ops: ")
    assert ok.output.strip().endswith("violations: 0")
    bad = runner.invoke(sim_group, ["raft", "--seeds", "6", "--start", "6", "--planted-bug"])
    assert bad.exit_code == 1
    assert "replay: tabletdb sim raft --start" in bad.output
    last = bad.output.strip().splitlines()[-1]
    assert last.startswith("seeds: 6, ops: ") and not last.endswith("violations: 0")
    wrong = runner.invoke(sim_group, ["raft", "--faults", "meteor"])
    assert wrong.exit_code == 2 and "unknown fault kinds" in wrong.output
