"""The leader half of RaftNode: replication with flow control, commit, read barriers, transfer.

`Leader` is a base class of `raft.core.RaftNode`; it only declares the node state it uses and
asks the core for the few role operations it needs, so the two halves can be read separately.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from tabletdb.raft import codec
from tabletdb.raft.confchange import apply_conf_change, is_voter
from tabletdb.raft.errors import ConfChangeError, ProposalDroppedError
from tabletdb.raft.progress import Progress, ProgressState
from tabletdb.raft.quorum import has_quorum, joint_committed_index
from tabletdb.raft.raftlog import RaftLog
from tabletdb.raft.readonly import ReadOnly
from tabletdb.raft.types import (
    ConfChange,
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


class Leader(ABC):
    id: NodeId
    config: Config
    log: RaftLog
    term: int
    role: Role
    conf_state: ConfState
    progress: dict[NodeId, Progress]
    read_only: ReadOnly
    pending_reads: list[tuple[bytes, NodeId]]
    read_states: list[ReadState]
    lead_transferee: NodeId | None
    pending_conf_index: int
    election_elapsed: int
    heartbeat_elapsed: int
    unsafe_commit_previous_term_by_count: bool

    @abstractmethod
    def send(self, m: Message) -> None: ...

    @abstractmethod
    def become_follower(self, term: int, leader: NodeId | None) -> None: ...

    # --- time -----------------------------------------------------------------------------------

    def _tick_leader(self) -> None:
        self.heartbeat_elapsed += 1
        self.election_elapsed += 1
        if self.election_elapsed >= self.config.election_tick:
            self.election_elapsed = 0
            if self.config.check_quorum and not self._quorum_active():
                self.become_follower(self.term, None)  # partitioned away: stop acting as leader
                return
            self.lead_transferee = None  # a transfer that did not finish in an election timeout failed
            if not is_voter(self.conf_state, self.id):
                self.hand_over()  # still removed: try again, maybe with another voter
                if self.role != Role.LEADER:
                    return
        if self.heartbeat_elapsed >= self.config.heartbeat_tick:
            self.heartbeat_elapsed = 0
            self.bcast_heartbeat(self.read_only.last_context() or b"")

    def _quorum_active(self) -> bool:
        """Whether a quorum was heard from since the last check; starts a new check round."""
        active = {n for n, pr in self.progress.items() if pr.recent_active or n == self.id}
        for node, pr in self.progress.items():
            pr.recent_active = node == self.id
        return has_quorum(self.conf_state, active)

    # --- proposals --------------------------------------------------------------------------------

    def check_conf_change_allowed(self, cc: ConfChange) -> None:
        """Raise ConfChangeError unless `cc` may be appended now (one change in flight at a time)."""
        if self.pending_conf_index > self.log.applied:
            raise ConfChangeError(
                f"membership change at index {self.pending_conf_index} is not applied yet "
                f"(applied {self.log.applied}); retry after it is"
            )
        apply_conf_change(self.conf_state, cc)

    def leader_propose(self, entries: list[Entry], local: bool) -> None:
        """Append proposed entries; invalid forwarded conf changes become NOOPs (cannot be refused)."""
        if not is_voter(self.conf_state, self.id) or self.lead_transferee is not None:
            if local:
                why = "leadership transfer in progress" if self.lead_transferee else "leader was removed"
                raise ProposalDroppedError(f"node {self.id} dropped a proposal: {why}")
            return
        accepted: list[Entry] = []
        for entry in entries:
            if entry.kind == EntryKind.CONF_CHANGE:
                try:
                    self.check_conf_change_allowed(codec.decode_conf_change(entry.data))
                except (ConfChangeError, codec.CodecError):
                    if local:
                        raise
                    entry = Entry(term=0, index=0, kind=EntryKind.NOOP)
                else:
                    self.pending_conf_index = self.log.last_index() + len(accepted) + 1
            accepted.append(entry)
        self.append_entries(accepted)
        self.bcast_append()

    def append_entries(self, entries: list[Entry]) -> None:
        last = self.log.last_index()
        self.log.append(
            [
                Entry(term=self.term, index=last + i + 1, kind=e.kind, data=e.data)
                for i, e in enumerate(entries)
            ]
        )
        own = self.progress.get(self.id)
        if own is not None:  # absent once our own removal is applied (we are handing over)
            own.maybe_update(self.log.last_index())
        self.maybe_commit()

    # --- commit -------------------------------------------------------------------------------------

    def maybe_commit(self) -> bool:
        """Advance the commit index to what a (joint) quorum stores; True if it moved.

        Only entries of the current term are committed by counting replicas (Raft §5.4.2);
        earlier ones commit with them. `unsafe_commit_previous_term_by_count` breaks this rule
        on purpose, for tests that must see the checkers catch it.
        """
        index = joint_committed_index(self.conf_state, {n: pr.match for n, pr in self.progress.items()})
        if index <= self.log.committed or index > self.log.last_index():
            return False
        if self.log.term(index) != self.term and not self.unsafe_commit_previous_term_by_count:
            return False
        self.log.commit_to(index)
        if self.committed_in_term():
            self._release_pending_reads()
        return True

    def committed_in_term(self) -> bool:
        return self.log.term(self.log.committed) == self.term

    # --- read barriers ------------------------------------------------------------------------------

    def leader_read_index(self, context: bytes, origin: NodeId) -> None:
        if not self.committed_in_term():
            self.pending_reads.append((context, origin))  # our commit index may still be stale
            return
        index = self.log.committed
        if has_quorum(self.conf_state, {self.id}):
            self._answer_read(index, context, origin)
        elif self.read_only.add(index, context, origin):
            self.read_only.ack(self.id, context)
            self.bcast_heartbeat(context)

    def _release_pending_reads(self) -> None:
        pending, self.pending_reads = self.pending_reads, []
        for context, origin in pending:
            self.leader_read_index(context, origin)

    def _answer_read(self, index: int, context: bytes, origin: NodeId) -> None:
        if origin == self.id:
            self.read_states.append(ReadState(index=index, context=context))
        else:
            self.send(
                Message(
                    MessageType.READ_INDEX_RESPONSE, self.id, origin, self.term, index=index, context=context
                )
            )

    # --- messages -----------------------------------------------------------------------------------

    def step_leader(self, m: Message) -> None:
        if m.type == MessageType.PROPOSE:
            self.leader_propose(list(m.entries), local=False)
        elif m.type == MessageType.READ_INDEX:
            self.leader_read_index(m.context, m.src)
        elif m.type == MessageType.TRANSFER_LEADER:
            self.leader_transfer(m.index)
        elif m.type == MessageType.APPEND_RESPONSE:
            self._handle_append_response(m)
        elif m.type == MessageType.HEARTBEAT_RESPONSE:
            self._handle_heartbeat_response(m)

    def _handle_append_response(self, m: Message) -> None:
        pr = self.progress.get(m.src)
        if pr is None:
            return
        pr.recent_active = True
        if m.reject:
            if pr.maybe_decrease_to(m.index, m.reject_hint):
                if pr.state == ProgressState.REPLICATE:
                    pr.become_probe()
                self.send_append(m.src)
            return
        was_paused = pr.is_paused()
        if not pr.maybe_update(m.index):
            return
        snapshot_done = pr.state == ProgressState.SNAPSHOT and pr.match + 1 >= self.log.first_index()
        if pr.state == ProgressState.PROBE or snapshot_done:
            pr.become_replicate()
        elif pr.state == ProgressState.REPLICATE:
            pr.free_inflight_up_to(m.index)
        if self.maybe_commit():
            self.bcast_append()
        elif was_paused:
            self.send_append(m.src)
        while self.send_append(m.src, send_if_empty=False):
            pass
        if m.src == self.lead_transferee and pr.match == self.log.last_index():
            self._send_timeout_now(m.src)

    def _handle_heartbeat_response(self, m: Message) -> None:
        pr = self.progress.get(m.src)
        if pr is None:
            return
        pr.recent_active = True
        pr.probe_sent = False
        if pr.state == ProgressState.REPLICATE and pr.inflight and pr.is_paused():
            pr.inflight.popleft()  # an APPEND may have been lost: let one more through to find out
        if pr.match < self.log.last_index():
            self.send_append(m.src)
        if m.context:
            acks = self.read_only.ack(m.src, m.context)
            if acks is not None and has_quorum(self.conf_state, acks):
                for request in self.read_only.release(m.context):
                    self._answer_read(request.index, request.context, request.origin)

    # --- sending ---------------------------------------------------------------------------------------

    def send_append(self, to: NodeId, send_if_empty: bool = True) -> bool:
        """Send the next APPEND (or a snapshot) to `to` if flow control allows; True if sent."""
        pr = self.progress[to]
        if pr.is_paused():
            return False
        prev = pr.next - 1
        prev_term = self.log.term(prev)
        entries = None
        if prev_term is not None:
            entries = self.log.slice(pr.next, self.log.last_index() + 1, self.config.max_entries_per_append)
        if prev_term is None or entries is None:
            return self._send_snapshot(to, pr)
        if not entries and not send_if_empty:
            return False
        self.send(
            Message(
                MessageType.APPEND, self.id, to, self.term,
                log_term=prev_term, index=prev, entries=tuple(entries), commit=self.log.committed,
            )
        )  # fmt: skip
        pr.sent_entries(entries[-1].index if entries else prev)
        return True

    def _send_snapshot(self, to: NodeId, pr: Progress) -> bool:
        if not pr.recent_active:
            return False  # do not ship a snapshot to a node that may be down
        snapshot = self.log.storage.snapshot()
        if snapshot.meta.index < self.log.first_index() - 1 or snapshot.meta.index == 0:
            raise AssertionError(
                f"storage snapshot at {snapshot.meta.index} does not cover compacted entries "
                f"before {self.log.first_index()}"
            )
        pr.become_snapshot(snapshot.meta.index)
        self.send(Message(MessageType.SNAPSHOT, self.id, to, self.term, snapshot=snapshot))
        return True

    def bcast_append(self) -> None:
        for node in sorted(self.progress):
            if node != self.id:
                self.send_append(node)

    def bcast_heartbeat(self, context: bytes) -> None:
        for node in sorted(self.progress):
            if node != self.id:
                commit = min(self.progress[node].match, self.log.committed)
                self.send(
                    Message(MessageType.HEARTBEAT, self.id, node, self.term, commit=commit, context=context)
                )

    # --- flow-control reports --------------------------------------------------------------------------

    def leader_report_unreachable(self, node: NodeId) -> None:
        pr = self.progress.get(node)
        if pr is not None and pr.state == ProgressState.REPLICATE:
            pr.become_probe()

    def leader_report_snapshot(self, node: NodeId, ok: bool) -> None:
        pr = self.progress.get(node)
        if pr is None or pr.state != ProgressState.SNAPSHOT:
            return
        if not ok:
            pr.pending_snapshot = 0
        pr.become_probe()
        pr.probe_sent = True  # wait for a heartbeat response before probing again

    # --- leadership transfer and reconfiguration --------------------------------------------------------

    def leader_transfer(self, to: NodeId) -> None:
        if to == self.id or to not in self.progress or not is_voter(self.conf_state, to):
            return
        if self.lead_transferee == to:
            return
        self.lead_transferee = to
        self.election_elapsed = 0  # the transfer must finish within one election timeout
        if self.progress[to].match == self.log.last_index():
            self._send_timeout_now(to)
        else:
            self.send_append(to)

    def _send_timeout_now(self, to: NodeId) -> None:
        self.send(Message(MessageType.TIMEOUT_NOW, self.id, to, self.term))
        if not is_voter(self.conf_state, self.id):
            # Handing over after our removal: `to` has our whole log and can win without us,
            # and as a non-member we might never hear of its election, so step down now.
            self.become_follower(self.term, None)

    def after_conf_change(self) -> None:
        """The applied configuration changed while we lead."""
        if self.lead_transferee is not None and self.lead_transferee not in self.progress:
            self.lead_transferee = None
        self.maybe_commit()
        if not is_voter(self.conf_state, self.id):
            self.hand_over()
            return
        self.bcast_append()

    def hand_over(self) -> None:
        """We were removed (or demoted): transfer leadership to the most caught-up voter.

        Stepping down at once could wedge the cluster: the remaining voters may not know yet that
        our removal committed, and our log (with entries they lack) would then refuse them our
        vote while their configuration still needs it. So we keep leading, accepting no new
        proposals, until a voter has our whole log; then we send it TIMEOUT_NOW and step down.
        """
        voters = [n for n in self.progress if n != self.id and is_voter(self.conf_state, n)]
        if not voters:
            self.become_follower(self.term, None)
            return
        best = max(voters, key=lambda n: (self.progress[n].match, -n))
        self.leader_transfer(best)

    def after_apply(self) -> None:
        """Leave a joint configuration automatically once entering it has been applied."""
        joint = self.conf_state.joint and is_voter(self.conf_state, self.id)
        if joint and self.pending_conf_index <= self.log.applied:
            self.append_entries(
                [
                    Entry(
                        term=0,
                        index=0,
                        kind=EntryKind.CONF_CHANGE,
                        data=codec.encode_conf_change(ConfChange(leave_joint=True)),
                    )
                ]
            )
            self.pending_conf_index = self.log.last_index()
            self.bcast_append()
