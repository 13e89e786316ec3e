"""The follower half of RaftNode: accepting the leader's APPEND, HEARTBEAT and SNAPSHOT.

Like `raft.leader.Leader`, `Follower` is a base class of `raft.core.RaftNode` that declares the
node state it uses, so the receiving side of replication can be read on its own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from tabletdb.raft.progress import Progress
from tabletdb.raft.raftlog import RaftLog
from tabletdb.raft.types import ConfState, Message, MessageType, NodeId, Snapshot


class Follower(ABC):
    id: NodeId
    log: RaftLog
    term: int
    conf_state: ConfState
    progress: dict[NodeId, Progress]

    @abstractmethod
    def send(self, m: Message) -> None: ...

    @abstractmethod
    def sync_progress(self) -> None: ...

    def handle_append(self, m: Message) -> None:
        """Accept entries that extend a matching prefix; on a mismatch, reject with a hint of
        where our log could still match, so the leader skips a whole stale term per round trip."""
        if m.index < self.log.committed:
            self.send(
                Message(MessageType.APPEND_RESPONSE, self.id, m.src, self.term, index=self.log.committed)
            )
            return
        last_new = self.log.maybe_append(m.index, m.log_term, m.commit, list(m.entries))
        if last_new is not None:
            self.send(Message(MessageType.APPEND_RESPONSE, self.id, m.src, self.term, index=last_new))
            return
        hint = min(m.index, self.log.last_index())
        while hint > self.log.committed and (self.log.term(hint) or 0) > m.log_term:
            hint -= 1  # skip our entries from terms the leader cannot have at that position
        self.send(
            Message(
                MessageType.APPEND_RESPONSE,
                self.id,
                m.src,
                self.term,
                index=m.index,
                reject=True,
                reject_hint=hint,
            )
        )

    def handle_heartbeat(self, m: Message) -> None:
        self.log.commit_to(min(m.commit, self.log.last_index()))
        self.send(Message(MessageType.HEARTBEAT_RESPONSE, self.id, m.src, self.term, context=m.context))

    def handle_snapshot(self, m: Message) -> None:
        assert m.snapshot is not None, f"SNAPSHOT message without a snapshot: {m}"
        if self.restore_snapshot(m.snapshot):
            index = self.log.last_index()
        else:
            index = self.log.committed
        self.send(Message(MessageType.APPEND_RESPONSE, self.id, m.src, self.term, index=index))

    def restore_snapshot(self, snapshot: Snapshot) -> bool:
        """Adopt a leader's snapshot unless our log already covers it; True if adopted. The
        membership takes effect at once: the snapshot's entries are committed by definition."""
        meta = snapshot.meta
        if meta.index <= self.log.committed:
            return False
        if self.log.match_term(meta.index, meta.term):
            self.log.commit_to(meta.index)  # we already hold it: just fast-forward the commit
            return False
        self.log.restore(snapshot)
        self.conf_state = meta.conf
        self.progress = {}
        self.sync_progress()
        return True
