"""The Raft paper's figure 8: a leader must not commit an entry of an earlier term by counting
replicas. The same script runs with the core's planted bug switched on, and the safety checker
in the harness must catch it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tabletdb.raft.types import EntryKind, Message, MessageType, Role

from .harness import Network


def _crashing_leader(src: int, last_entry: int, commit: int) -> Callable[[Message], Message | None]:
    """A filter for a leader that crashes before its entries past `last_entry` and its commit
    index past `commit` reach anyone (so only the messages shaped by the figure get out)."""

    def keep(m: Message) -> Message | None:
        if m.src == src and m.type == MessageType.APPEND:
            entries = tuple(e for e in m.entries if e.index <= last_entry)
            return replace(m, entries=entries, commit=min(m.commit, commit))
        if m.src == src and m.type == MessageType.HEARTBEAT:
            return replace(m, commit=min(m.commit, commit))
        return m

    return keep


X = 3
"""Index of X: after the bootstrap snapshot (1) and S1's first-term NOOP (2)."""


def _figure8(unsafe: bool, replicate_new_term_entry: bool) -> Network:
    net = Network(range(1, 6), pre_vote=False, check_quorum=False, max_entries_per_append=1)
    net.elect(1)  # term t: NOOP at index X - 1 everywhere
    net.run()
    t = net.node(1).term
    assert net.node(1).commit_index == X - 1
    net.node(1).unsafe_commit_previous_term_by_count = unsafe

    # (a) S1 (term t) replicates X at index X to S2 only.
    net.filter = lambda m: None if m.src == 1 and m.type == MessageType.APPEND and m.dst > 2 else m
    net.propose(1, b"X")
    assert net.node(1).commit_index == X - 1

    # (b) S1 crashes; S5 wins term t+1 with S3 and S4, appends its own entry at index X, unsent.
    net.crash(1)
    net.filter = lambda m: None if m.src == 5 and m.type == MessageType.APPEND else m
    net.elect(5)
    assert net.node(5).term == t + 1 and net.peers[5].log.term(X) == t + 1

    # (c) S5 crashes; S1 restarts, wins a later term and copies X (term t) to S3: a majority
    # (S1, S2, S3) now stores it. Its own new-term entry at X + 1 reaches nobody unless asked.
    net.crash(5)
    net.restart(1)
    net.node(1).unsafe_commit_previous_term_by_count = unsafe
    net.filter = _crashing_leader(1, last_entry=X + 1 if replicate_new_term_entry else X, commit=X - 1)
    net.elect(1)
    net.run()
    assert net.peers[3].log.term(X) == t

    # (d) S1 crashes; S5 restarts and tries to win with S2, S3, S4 (its last term t+1 beats t).
    net.crash(1)
    net.restart(5)
    net.filter = lambda m: m
    for _ in range(4):
        net.node(5).campaign()
        net.run()
    return net


def test_entry_of_earlier_term_is_not_committed_by_counting_replicas() -> None:
    net = _figure8(unsafe=False, replicate_new_term_entry=False)
    assert not net.violations
    leader = net.node(5)
    assert leader.role == Role.LEADER
    net.propose(5, b"after")
    # S5's entry at index X replaced X everywhere and is what every node applied.
    assert all(b"X" not in net.data(n) for n in (2, 3, 4, 5))
    assert net.data(5) == [b"after"]
    assert not net.violations


def test_planted_figure8_bug_is_caught_by_the_safety_checker() -> None:
    net = _figure8(unsafe=True, replicate_new_term_entry=False)
    assert net.node(5).role == Role.LEADER
    assert net.violations, "S1 applied X at index X, S5 later overwrote it: the checker must notice"
    assert any(f"index={X}" in v for v in net.violations)


def test_entry_of_earlier_term_commits_with_one_of_the_current_term() -> None:
    """Figure 8 (e): once S1's new-term entry is on a majority, X is committed with it and S5
    can no longer win, so X survives."""
    net = _figure8(unsafe=False, replicate_new_term_entry=True)
    assert net.node(5).role != Role.LEADER
    net.restart(1)
    net.converge()
    for n in range(1, 6):
        at_x = [e for e in net.peers[n].applied if e.index == X]
        assert at_x and at_x[0].data == b"X" and at_x[0].kind == EntryKind.NORMAL, n
    assert not net.violations
