"""Continuous Raft safety checks over the whole simulated cluster (Raft paper, figure 3).

* election safety: at most one leader per term;
* leader completeness: a new leader's log holds every entry any node has applied;
* state-machine safety: no two nodes apply different entries at the same index;
* monotonic commit: a node's commit index never moves back within one incarnation, and a
  restart never comes back below what that node had made durable;
* leader commit rule: a leader advances its commit index only onto an entry of its own term;
* log matching: two logs that agree on (index, term) agree on every earlier entry.

Each violation is a sentence naming nodes, terms and indices, so a failing seed is debuggable
from its report alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from tabletdb.raft.core import RaftNode
from tabletdb.raft.types import Entry, NodeId


class InvariantChecker:
    def __init__(self, check_commit_rule: bool = True) -> None:
        """`check_commit_rule=False` leaves only the checks of consequences (what a client or a
        state machine could observe), to show they catch commit-rule bugs on their own."""
        self.check_commit_rule = check_commit_rule
        self.violations: list[str] = []
        self.leaders: dict[int, NodeId] = {}
        self.applied: dict[int, Entry] = {}
        self.applied_by: dict[int, NodeId] = {}
        self.max_applied = 0
        self._commit: dict[NodeId, tuple[int, int]] = {}

    def _fail(self, text: str) -> None:
        if len(self.violations) < 20:
            self.violations.append(text)

    def leader_elected(self, node: NodeId, raft: RaftNode) -> None:
        term = raft.term
        other = self.leaders.setdefault(term, node)
        if other != node:
            self._fail(f"election safety: nodes {other} and {node} are both leader in term {term}")
        first = raft.log.first_index()
        for index in range(max(first, 1), self.max_applied + 1):
            entry = self.applied.get(index)
            if entry is None:
                continue
            have = raft.log.term(index)
            if have != entry.term:
                self._fail(
                    f"leader completeness: node {node}, leader of term {term}, has term {have} at index "
                    f"{index} where node {self.applied_by[index]} applied an entry of term {entry.term}"
                )
                return

    def entry_applied(self, node: NodeId, entry: Entry) -> None:
        seen = self.applied.get(entry.index)
        if seen is None:
            self.applied[entry.index] = entry
            self.applied_by[entry.index] = node
            self.max_applied = max(self.max_applied, entry.index)
        elif seen != entry:
            self._fail(
                f"state-machine safety: at index {entry.index} node {self.applied_by[entry.index]} applied "
                f"(term {seen.term}, {seen.kind.name}, {seen.data!r:.40}) but node {node} applied "
                f"(term {entry.term}, {entry.kind.name}, {entry.data!r:.40})"
            )

    def commit_advanced(
        self, node: NodeId, incarnation: int, commit: int, leader_term: int | None, commit_term: int | None
    ) -> None:
        """`leader_term` is the node's term if it is the leader, and `commit_term` the term of the
        entry at `commit`: a leader may only move its commit index onto an entry of its own term
        (Raft §5.4.2; earlier entries become committed with it, never by counting replicas)."""
        prev = self._commit.get(node)
        if prev is not None and prev[0] == incarnation:
            if commit < prev[1]:
                self._fail(
                    f"monotonic commit: node {node} moved its commit index back from {prev[1]} to {commit}"
                )
            elif (
                self.check_commit_rule
                and commit > prev[1]
                and leader_term is not None
                and commit_term != leader_term
            ):
                self._fail(
                    f"leader commit rule: node {node}, leader of term {leader_term}, advanced its commit "
                    f"index to {commit}, an entry of term {commit_term}"
                )
        self._commit[node] = (incarnation, commit)

    def restarted(self, node: NodeId, incarnation: int, durable_commit: int, recovered_commit: int) -> None:
        if recovered_commit < durable_commit:
            self._fail(
                f"durability: node {node} restarted with commit {recovered_commit} below the "
                f"{durable_commit} it had synced before crashing"
            )
        self._commit[node] = (incarnation, recovered_commit)

    def check_log_matching(self, nodes: Iterable[tuple[NodeId, RaftNode]]) -> None:
        live = list(nodes)
        for i, (a_id, a) in enumerate(live):
            for b_id, b in live[i + 1 :]:
                self._match_pair(a_id, a, b_id, b)

    def _match_pair(self, a_id: NodeId, a: RaftNode, b_id: NodeId, b: RaftNode) -> None:
        lo = max(a.log.first_index(), b.log.first_index())
        hi = min(a.log.last_index(), b.log.last_index())
        top = next((i for i in range(hi, lo - 1, -1) if a.log.term(i) == b.log.term(i)), None)
        if top is None or top < lo:
            return
        ea = a.log.slice(lo, top + 1) or []
        eb = b.log.slice(lo, top + 1) or []
        for x, y in zip(ea, eb):
            if x != y:
                self._fail(
                    f"log matching: nodes {a_id} and {b_id} agree on term {a.log.term(top)} at index {top} "
                    f"but differ at index {x.index} (terms {x.term} and {y.term})"
                )
                return
