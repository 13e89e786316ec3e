"""A tiny deterministic network of RaftNodes for scenario tests.

Each node has a MemoryLog and an applied list; `Network.deliver` runs the Ready cycle exactly as
`raft.types` prescribes (persist, send, apply, advance). Messages wait in one FIFO queue that
tests drain, filter or reorder; partitions and crashes are explicit. Nothing here uses time or
randomness, so every scenario replays identically.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tabletdb.raft import codec
from tabletdb.raft.core import RaftNode
from tabletdb.raft.log import MemoryLog
from tabletdb.raft.types import (
    Config,
    ConfState,
    Entry,
    EntryKind,
    Message,
    MessageType,
    NodeId,
    ReadState,
    Role,
)


@dataclass
class Peer:
    node: RaftNode
    log: MemoryLog
    applied: list[Entry] = field(default_factory=list)
    """Entries applied since start or the last snapshot install/restart."""
    state: list[bytes] = field(default_factory=list)
    """The application: NORMAL payloads in apply order; snapshots serialise it."""
    last_applied: int = 0
    read_states: list[ReadState] = field(default_factory=list)


class Network:
    def __init__(
        self,
        voters: Iterable[NodeId],
        learners: Iterable[NodeId] = (),
        extra: Iterable[NodeId] = (),
        **config: object,
    ) -> None:
        """`voters`/`learners` form the bootstrap membership; `extra` nodes start with an empty
        log and no membership (to be added later)."""
        self.config = config
        self.peers: dict[NodeId, Peer] = {}
        self.queue: list[Message] = []
        self.cut: set[frozenset[NodeId]] = set()
        self.down: set[NodeId] = set()
        self.filter: Callable[[Message], Message | None] = lambda m: m
        """Rewrites (or drops, by returning None) each message at delivery time."""
        self.first_applied: dict[int, tuple[NodeId, Entry]] = {}
        self.violations: list[str] = []
        """State-machine safety violations: two nodes applied different entries at one index."""
        conf = ConfState(voters=frozenset(voters), learners=frozenset(learners))
        for n in sorted(conf.voters | conf.learners):
            self._start(n, MemoryLog(conf))
        for n in extra:
            self._start(n, MemoryLog())

    def _start(self, n: NodeId, log: MemoryLog) -> Peer:
        cfg = Config(id=n, seed=n, **self.config)  # type: ignore[arg-type]
        # The application (re)starts from the log's snapshot and replays committed entries.
        snapshot = log.snapshot()
        peer = Peer(node=RaftNode(cfg, log), log=log, state=_decode_state(snapshot.data))
        peer.last_applied = snapshot.meta.index
        self.peers[n] = peer
        return peer

    def node(self, n: NodeId) -> RaftNode:
        return self.peers[n].node

    # --- faults ---------------------------------------------------------------------------------

    def partition(self, *groups: Iterable[NodeId]) -> None:
        """Cut every link between nodes of different groups."""
        sets = [set(g) for g in groups]
        self.cut = set()
        for i, a in enumerate(sets):
            for b in sets[i + 1 :]:
                self.cut |= {frozenset((x, y)) for x in a for y in b}

    def heal(self) -> None:
        self.cut = set()

    def crash(self, n: NodeId) -> None:
        """Lose the node's volatile state; its MemoryLog is its disk."""
        self.down.add(n)
        for m in [m for m in self.queue if m.dst == n]:
            self.lose(m)
        self.queue = [m for m in self.queue if m.dst != n]

    def restart(self, n: NodeId) -> None:
        self.down.discard(n)
        self._start(n, self.peers[n].log)

    # --- running ----------------------------------------------------------------------------------

    def flush(self, n: NodeId) -> None:
        """Run node `n`'s Ready cycle once, queueing its messages."""
        if n in self.down:
            return
        peer = self.peers[n]
        while peer.node.has_ready():
            rd = peer.node.ready()
            if rd.snapshot is not None:
                peer.log.apply_snapshot(rd.snapshot)
                peer.applied = []
                peer.state = _decode_state(rd.snapshot.data)
                peer.last_applied = rd.snapshot.meta.index
            peer.log.append(rd.entries)
            if rd.hard_state is not None:
                peer.log.set_hard_state(rd.hard_state)
            self.queue.extend(rd.messages)
            for entry in rd.committed_entries:
                self._check_applied(n, peer, entry)
                peer.applied.append(entry)
                peer.last_applied = entry.index
                if entry.kind == EntryKind.NORMAL:
                    peer.state.append(entry.data)
            peer.read_states.extend(rd.read_states)
            peer.node.advance(rd)

    def _check_applied(self, n: NodeId, peer: Peer, entry: Entry) -> None:
        if entry.index != peer.last_applied + 1:
            self.violations.append(f"node {n} applied {entry} right after index {peer.last_applied}")
        first = self.first_applied.setdefault(entry.index, (n, entry))
        if first[1] != entry:
            self.violations.append(f"node {n} applied {entry} but node {first[0]} applied {first[1]}")

    def flush_all(self) -> None:
        for n in sorted(self.peers):
            self.flush(n)

    def deliverable(self, m: Message) -> bool:
        return m.dst not in self.down and m.src not in self.down and frozenset((m.src, m.dst)) not in self.cut

    def lose(self, m: Message) -> None:
        """Drop `m`; like a real transport, report a snapshot that could not be delivered."""
        if m.type == MessageType.SNAPSHOT and m.src not in self.down:
            self.node(m.src).report_snapshot(m.dst, ok=False)
            self.flush(m.src)

    def deliver(self, m: Message) -> None:
        if not self.deliverable(m):
            self.lose(m)
            return
        filtered = self.filter(m)
        if filtered is None:
            self.lose(m)
            return
        m = filtered
        self.node(m.dst).step(m)
        if m.type == MessageType.SNAPSHOT:
            self.node(m.src).report_snapshot(m.dst, ok=True)
            self.flush(m.src)
        self.flush(m.dst)

    def run(self, max_messages: int = 10_000) -> None:
        """Deliver queued messages (and those they cause) until the queue is empty."""
        self.flush_all()
        for _ in range(max_messages):
            if not self.queue:
                return
            self.deliver(self.queue.pop(0))
        raise AssertionError(f"network did not quiesce after {max_messages} messages")

    def tick(self, n: int = 1, nodes: Iterable[NodeId] | None = None) -> None:
        """Tick the given (default: all live) nodes `n` times, delivering messages in between."""
        for _ in range(n):
            for peer_id in sorted(self.peers if nodes is None else nodes):
                if peer_id not in self.down:
                    self.node(peer_id).tick()
            self.run()

    def elect(self, n: NodeId, attempts: int = 5) -> None:
        """Make `n` campaign until it wins (a lost round leaves it at a higher term)."""
        for _ in range(attempts):
            self.node(n).campaign()
            self.run()
            if self.node(n).role == Role.LEADER:
                return
        raise AssertionError(f"{self.node(n)} did not win an election in {attempts} attempts")

    def leader(self) -> NodeId | None:
        """The live leader with the highest term, if any."""
        leaders = [p.node for n, p in self.peers.items() if n not in self.down and p.node.role == Role.LEADER]
        return max(leaders, key=lambda r: r.term).id if leaders else None

    def propose(self, n: NodeId, data: bytes) -> None:
        self.node(n).propose(data)
        self.run()

    def data(self, n: NodeId) -> list[bytes]:
        """Node `n`'s application state: the NORMAL payloads applied, in order."""
        return list(self.peers[n].state)

    def converge(self, ticks: int = 60) -> None:
        """Tick until one live leader is known to every live node and all logs are applied."""
        for _ in range(ticks):
            self.tick()
            lead = self.leader()
            live = [p.node for n, p in self.peers.items() if n not in self.down]
            if lead is not None and all(
                r.leader == lead and r.applied == self.node(lead).commit_index
                for r in live
                if r.id in self.node(lead).progress
            ):
                return
        raise AssertionError(f"no convergence after {ticks} ticks: {[p.node for p in self.peers.values()]}")

    def snapshot(self, n: NodeId, compact: bool = True) -> None:
        """Snapshot node `n`'s applied state (the applied payloads) and compact its log."""
        peer = self.peers[n]
        meta = peer.node.snapshot_meta()
        data = b"\n".join(self.data(n))
        peer.log.create_snapshot(meta, data)
        if compact:
            peer.log.compact(meta.index)


def _decode_state(data: bytes) -> list[bytes]:
    return data.split(b"\n") if data else []


def conf_entries(peer: Peer) -> list[object]:
    return [codec.decode_conf_change(e.data) for e in peer.applied if e.kind == EntryKind.CONF_CHANGE]
