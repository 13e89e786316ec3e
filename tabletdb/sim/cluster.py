"""The simulated cluster: nodes, network, ticking clocks and the fault primitives the nemesis uses.

It is also every node's observer, routing what nodes report to the invariant checker and the
client workload. Each node ticks on its own period (timer drift), so elections race the way they
do on real machines whose clocks run at slightly different speeds.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tabletdb.raft.errors import RaftError
from tabletdb.raft.storage_records import CorruptLogError
from tabletdb.raft.types import (
    ConfChange,
    ConfChangeSingle,
    ConfChangeType,
    Config,
    ConfState,
    Entry,
    Message,
    NodeId,
    Role,
)
from tabletdb.sim.checkers import InvariantChecker
from tabletdb.sim.events import EventLoop
from tabletdb.sim.network import LinkQuality, SimNetwork
from tabletdb.sim.node import SimNode
from tabletdb.sim.statemachine import OpId
from tabletdb.sim.workload import Workload


class Cluster:
    def __init__(
        self,
        rng: random.Random,
        n_nodes: int,
        raft_config: Config,
        planted_bug: bool,
        spare: bool,
        check_commit_rule: bool = True,
    ) -> None:
        self.rng = rng
        self.loop = EventLoop()
        self.network = SimNetwork(self.loop, rng, self._deliver, self._snapshot_status)
        self.checker = InvariantChecker(check_commit_rule)
        self.leader_hint: NodeId | None = None
        self.workload: Workload | None = None
        self.on_new_leader: Callable[[SimNode], None] | None = None
        """Nemesis hook: called whenever a node becomes leader."""
        ids = list(range(1, n_nodes + 1))
        voters = frozenset(ids[:-1] if spare else ids)
        founding = ConfState(voters=voters)
        self.nodes: dict[NodeId, SimNode] = {
            i: SimNode(
                i,
                founding if i in voters else ConfState(),
                raft_config,
                self,
                random.Random(rng.random()),
                planted_bug,
            )
            for i in ids
        }
        self.conf_changes = 0
        self.crashes = 0
        self.snapshots = 0
        for node in self.nodes.values():
            self._schedule_tick(node)

    # --- NodeObserver --------------------------------------------------------------------------

    def send(self, m: Message) -> None:
        self.network.send(m)

    def became_leader(self, node: SimNode) -> None:
        assert node.raft is not None
        self.leader_hint = node.id
        self.checker.leader_elected(node.id, node.raft)
        if self.on_new_leader is not None:
            self.on_new_leader(node)

    def commit_advanced(self, node: SimNode, commit: int) -> None:
        raft = node.raft
        assert raft is not None
        leader_term = raft.term if raft.role == Role.LEADER else None
        self.checker.commit_advanced(node.id, node.incarnation, commit, leader_term, raft.log.term(commit))

    def entry_applied(self, node: SimNode, entry: Entry) -> None:
        self.checker.entry_applied(node.id, entry)

    def op_applied(self, node: SimNode, op_id: OpId) -> None:
        if self.workload is not None:
            self.workload.op_applied(node, op_id)

    def read_done(self, node: SimNode, context: bytes) -> None:
        if self.workload is not None:
            self.workload.read_done(node, context)

    def node_crashed(self, node: SimNode) -> None:
        self.crashes += 1
        if self.leader_hint == node.id:
            self.leader_hint = None
        if self.workload is not None:
            self.workload.node_crashed(node.id)

    # --- time ----------------------------------------------------------------------------------

    def _schedule_tick(self, node: SimNode) -> None:
        def tick() -> None:
            node.tick()
            self._schedule_tick(node)

        self.loop.after(node.tick_period, tick)

    def _deliver(self, m: Message) -> bool:
        node = self.nodes[m.dst]
        node.step(m)
        return node.alive

    def _snapshot_status(self, m: Message, ok: bool) -> None:
        sender = self.nodes[m.src]
        if sender.raft is not None:
            sender.raft.report_snapshot(m.dst, ok)
            sender.process()

    # --- observers -----------------------------------------------------------------------------

    def alive(self) -> list[SimNode]:
        return [n for n in self.nodes.values() if n.alive]

    def leader(self) -> SimNode | None:
        """The live leader with the highest term, if any."""
        leaders = [n for n in self.alive() if n.raft is not None and n.raft.role == Role.LEADER]
        return max(leaders, key=lambda n: n.raft.term if n.raft else -1, default=None)

    # --- faults --------------------------------------------------------------------------------

    def crash(self, node: SimNode, mid_write: bool) -> None:
        """Crash now, or (mid_write) at the next Ready between its writes and their fsync."""
        if not node.alive:
            return
        if mid_write:
            node.crash_before_sync = True
        else:
            node.crash()

    def restart(self, node: SimNode) -> None:
        if node.alive:
            return
        try:
            node.restart()
        except CorruptLogError as exc:
            self.checker.violations.append(f"recovery: node {node.id} cannot restart: {exc}")
            return
        assert node.raft is not None
        self.checker.restarted(node.id, node.incarnation, node.synced_commit, node.raft.commit_index)
        node.process()

    def snapshot(self, node: SimNode) -> None:
        if node.take_snapshot():
            self.snapshots += 1

    def transfer_leadership(self) -> None:
        leader = self.leader()
        if leader is None or leader.raft is None:
            return
        voters = sorted(leader.raft.conf_state.voters - {leader.id})
        if voters:
            try:
                leader.raft.transfer_leadership(self.rng.choice(voters))
            except RaftError:
                return
            leader.process()

    def reconfigure(self) -> None:
        """Propose one membership change through the leader: add a learner, promote one, remove a
        voter (keeping at least two), or swap voters in one joint-consensus step."""
        leader = self.leader()
        if leader is None or leader.raft is None:
            return
        conf = leader.raft.conf_state
        if conf.joint:
            return
        outsiders = sorted(set(self.nodes) - conf.voters - conf.learners)
        learners = sorted(conf.learners)
        removable = sorted(conf.voters - {leader.id}) if len(conf.voters) > 2 else []
        choices: list[tuple[ConfChangeSingle, ...]] = []
        if outsiders:
            choices.append((ConfChangeSingle(ConfChangeType.ADD_LEARNER, self.rng.choice(outsiders)),))
        if learners:
            choices.append((ConfChangeSingle(ConfChangeType.ADD_VOTER, self.rng.choice(learners)),))
        if removable:
            choices.append((ConfChangeSingle(ConfChangeType.REMOVE, self.rng.choice(removable)),))
        if learners and removable:
            choices.append(
                (
                    ConfChangeSingle(ConfChangeType.ADD_VOTER, self.rng.choice(learners)),
                    ConfChangeSingle(ConfChangeType.REMOVE, self.rng.choice(removable)),
                )
            )
        if not choices:
            return
        try:
            leader.raft.propose_conf_change(ConfChange(self.rng.choice(choices)))
        except RaftError:
            return
        self.conf_changes += 1
        leader.process()

    def heal(self) -> None:
        """End every fault: network whole and clean, every node up."""
        self.network.heal()
        self.network.quality = LinkQuality()
        for node in self.nodes.values():
            node.crash_before_sync = False
            self.restart(node)
