"""One simulated server: the real Raft core over the real durable log on a crashable in-memory disk.

The node drives `RaftNode` exactly as a production shell would (see `raft.types`): persist the
snapshot, entries and hard state and fsync, then send, then apply, then advance. A crash can be
armed to strike between the writes and the fsync of the next Ready, which is how torn log tails
arise; `MemFileSystem.crash` then keeps only what was synced plus maybe a torn fragment, and the
restart runs the durable log's real recovery.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Protocol

from tabletdb.raft.core import RaftNode
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.storage_fs import MemFileSystem
from tabletdb.raft.types import Config, ConfState, Entry, EntryKind, Message, NodeId, Ready, Role, Snapshot
from tabletdb.sim.statemachine import KVStateMachine, OpId


class NodeObserver(Protocol):
    """What the cluster learns from a node as it processes Ready batches."""

    def send(self, m: Message) -> None: ...

    def became_leader(self, node: SimNode) -> None: ...

    def commit_advanced(self, node: SimNode, commit: int) -> None: ...

    def entry_applied(self, node: SimNode, entry: Entry) -> None: ...

    def op_applied(self, node: SimNode, op_id: OpId) -> None: ...

    def read_done(self, node: SimNode, context: bytes) -> None: ...

    def node_crashed(self, node: SimNode) -> None: ...


class SimNode:
    def __init__(
        self,
        node_id: NodeId,
        conf: ConfState,
        raft_config: Config,
        observer: NodeObserver,
        rng: random.Random,
        planted_bug: bool = False,
    ) -> None:
        self.id = node_id
        self.fs = MemFileSystem()
        self.base_config = raft_config
        self.observer = observer
        self.rng = rng
        self.planted_bug = planted_bug
        self.incarnation = 0
        self.crash_before_sync = False
        self.synced_commit = 0
        """The commit index in the last hard state this node fsynced: a restart must not go below."""
        self.tick_period = 10
        self.snapshot_probability = 0.0
        log = DurableLog(self.fs, segment_bytes=4096)
        if conf.voters:
            log.bootstrap(conf)  # a founding member; others join later with an empty log
        self.log: DurableLog = log
        self.raft: RaftNode | None = None
        self.sm = KVStateMachine()
        self._reads: list[tuple[int, bytes]] = []
        self._start()

    @property
    def alive(self) -> bool:
        return self.raft is not None

    def _start(self) -> None:
        self.incarnation += 1
        seed = self.base_config.seed * 1_000_003 + self.id * 1009 + self.incarnation
        config = replace(self.base_config, id=self.id, seed=seed)
        raft = RaftNode(config, self.log)
        if self.planted_bug:
            raft.unsafe_commit_previous_term_by_count = True
        self.sm = KVStateMachine.restore(self.log.snapshot().data)
        self._reads = []
        self.raft = raft

    # --- lifecycle -----------------------------------------------------------------------------

    def crash(self) -> None:
        """Power loss: volatile state is gone; the disk keeps what was synced (maybe a torn tail)."""
        self.raft = None
        self._reads = []
        self.crash_before_sync = False
        self.fs.crash(self.rng)
        self.observer.node_crashed(self)

    def restart(self) -> None:
        """Recover from the disk (raises CorruptLogError if recovery finds real damage)."""
        self.log = DurableLog(self.fs, segment_bytes=4096)
        self._start()

    # --- inputs --------------------------------------------------------------------------------

    def tick(self) -> None:
        if self.raft is not None:
            self.raft.tick()
            self.process()

    def step(self, m: Message) -> None:
        if self.raft is not None:
            self.raft.step(m)
            self.process()

    def take_snapshot(self) -> bool:
        """Snapshot the state machine at the applied index and compact the log up to it."""
        raft = self.raft
        if raft is None or raft.applied <= self.log.snapshot_meta.index:
            return False
        self.log.apply_snapshot(Snapshot(raft.snapshot_meta(), self.sm.snapshot()))
        return True

    # --- the Ready loop ------------------------------------------------------------------------

    def process(self) -> None:
        while self.raft is not None and self.raft.has_ready():
            rd = self.raft.ready()
            if not self._persist(rd):
                return
            raft = self.raft
            for m in rd.messages:
                self.observer.send(m)
            if rd.snapshot is not None:
                self.sm = KVStateMachine.restore(rd.snapshot.data)
                for op_id in self.sm.applied_ops:
                    self.observer.op_applied(self, op_id)
            for entry in rd.committed_entries:
                self._apply(entry)
            self._reads += [(rs.index, rs.context) for rs in rd.read_states]
            raft.advance(rd)
            if rd.soft_state is not None and rd.soft_state.role == Role.LEADER:
                self.observer.became_leader(self)
            if rd.hard_state is not None:
                self.observer.commit_advanced(self, rd.hard_state.commit)
            self._serve_reads()
            if self.snapshot_probability and self.rng.random() < self.snapshot_probability:
                self.take_snapshot()

    def _persist(self, rd: Ready) -> bool:
        """Write and fsync; False if an armed crash struck before the fsync."""
        if rd.snapshot is not None:
            self.log.apply_snapshot(rd.snapshot)
        self.log.append(rd.entries)
        if rd.hard_state is not None:
            self.log.set_hard_state(rd.hard_state)
        if self.crash_before_sync and (rd.entries or rd.hard_state is not None):
            self.crash()
            return False
        self.log.sync()
        self.synced_commit = self.log.hard_state.commit
        return True

    def _apply(self, entry: Entry) -> None:
        self.observer.entry_applied(self, entry)
        if entry.kind == EntryKind.NORMAL and entry.data:
            op_id, _ = self.sm.apply(entry.data)
            self.observer.op_applied(self, op_id)

    def _serve_reads(self) -> None:
        if not self._reads or self.raft is None:
            return
        applied = self.raft.applied
        ready = [ctx for index, ctx in self._reads if index <= applied]
        self._reads = [(index, ctx) for index, ctx in self._reads if index > applied]
        for ctx in ready:
            self.observer.read_done(self, ctx)
