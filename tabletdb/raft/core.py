"""RaftNode: the deterministic Raft state machine (model: etcd's raft library).

Inputs are `tick()`, `step(message)`, local requests (`propose`, `read_index`, ...) and
`advance(ready)`; outputs are collected by `ready()` (see `raft.types` for the driver contract).
The node has no clock, I/O or randomness of its own: the election timeout is drawn from
`random.Random(config.seed)` in [election_tick, 2 * election_tick).

This module holds roles, elections, message dispatch and the Ready/advance cycle; the leader's
replication, commit and read-barrier logic lives in `raft.leader`, the follower's handling of
APPEND/HEARTBEAT/SNAPSHOT in `raft.follower`.
"""

from __future__ import annotations

import random

from tabletdb.raft import codec
from tabletdb.raft.confchange import apply_conf_change, is_voter, members
from tabletdb.raft.errors import ConfChangeError, NotLeaderError
from tabletdb.raft.follower import Follower
from tabletdb.raft.leader import Leader
from tabletdb.raft.log import LogView, bootstrap_state
from tabletdb.raft.progress import Progress
from tabletdb.raft.quorum import VoteResult, joint_vote_result
from tabletdb.raft.raftlog import RaftLog
from tabletdb.raft.readonly import ReadOnly
from tabletdb.raft.types import (
    ConfChange,
    Config,
    ConfState,
    Entry,
    EntryKind,
    HardState,
    Message,
    MessageType,
    NodeId,
    ReadState,
    Ready,
    Role,
    SnapshotMeta,
    SoftState,
)

TRANSFER_CONTEXT = b"transfer"
"""Context of VOTE messages sent because of TIMEOUT_NOW: voters skip the leader-lease check."""

_TERMLESS = (MessageType.PROPOSE, MessageType.READ_INDEX, MessageType.TRANSFER_LEADER)
"""Forwarded requests: they carry term 0 and are never rejected for their term."""


class RaftNode(Leader, Follower):
    unsafe_commit_previous_term_by_count: bool = False
    """TEST-ONLY planted bug (Raft paper, figure 8): when True the leader commits entries of
    earlier terms as soon as a majority stores them. Checkers must catch this; never set it
    outside tests."""

    def __init__(self, config: Config, storage: LogView) -> None:
        if config.election_tick <= config.heartbeat_tick or config.heartbeat_tick < 1:
            raise ValueError(f"need election_tick > heartbeat_tick >= 1, got {config}")
        if config.max_inflight_appends < 1 or config.max_entries_per_append < 1:
            raise ValueError(f"flow-control limits must be positive, got {config}")
        persisted, conf = storage.initial_state()
        self.id: NodeId = config.id
        self.config = config
        self.log = RaftLog(storage, persisted.commit)
        hs = self._found_cluster(storage, persisted, conf)
        self.term = hs.term
        self.vote: NodeId | None = hs.vote
        self.leader: NodeId | None = None
        self.role = Role.FOLLOWER
        self.conf_state: ConfState = conf
        self.progress: dict[NodeId, Progress] = {}
        self.votes: dict[NodeId, bool] = {}
        self.msgs: list[Message] = []
        self.read_states: list[ReadState] = []
        self.read_only = ReadOnly()
        self.pending_reads: list[tuple[bytes, NodeId]] = []
        self.lead_transferee: NodeId | None = None
        self.pending_conf_index = 0
        self.election_elapsed = 0
        self.heartbeat_elapsed = 0
        self._rng = random.Random(config.seed)
        self.randomized_election_timeout = config.election_tick
        self._prev_soft = SoftState(leader=None, role=Role.FOLLOWER)
        self._prev_hard = persisted
        self._reset(self.term)

    def _found_cluster(self, storage: LogView, hs: HardState, conf: ConfState) -> HardState:
        """Move a founding member's membership from the log base (index 0) to a snapshot at 1.

        A log bootstrapped with its membership at index 0 (nothing written yet, but voters
        known) would let the leader stream entry 1 onwards to a node added later, which would
        then replay membership changes on top of an empty membership and could believe itself
        a majority. Re-basing on `bootstrap_state` (persisted through the first Ready, like any
        received snapshot) makes such joiners receive the founding membership as a snapshot.
        """
        fresh = storage.first_index() == 1 and storage.last_index() == 0 and hs == HardState()
        if not (fresh and conf.voters):
            return hs
        snapshot, founded = bootstrap_state(conf)
        self.log.restore(snapshot)
        return founded

    def __repr__(self) -> str:
        return (
            f"RaftNode(id={self.id}, role={self.role.name}, term={self.term}, "
            f"leader={self.leader}, {self.log!r})"
        )

    # --- observers ------------------------------------------------------------------------------

    @property
    def commit_index(self) -> int:
        return self.log.committed

    @property
    def applied(self) -> int:
        return self.log.applied

    @property
    def hard_state(self) -> HardState:
        return HardState(term=self.term, vote=self.vote, commit=self.log.committed)

    def snapshot_meta(self) -> SnapshotMeta:
        """Where a snapshot of the applied state sits: hand this to the log with the app's data."""
        term = self.log.term(self.log.applied)
        assert term is not None, f"term of applied index unknown in {self.log!r}"
        return SnapshotMeta(index=self.log.applied, term=term, conf=self.conf_state)

    def promotable(self) -> bool:
        """Only voters campaign; learners and removed nodes wait to hear from a leader."""
        return is_voter(self.conf_state, self.id)

    # --- local inputs -----------------------------------------------------------------------------

    def tick(self) -> None:
        if self.role == Role.LEADER:
            self._tick_leader()
            return
        self.election_elapsed += 1
        if self.promotable() and self.election_elapsed >= self.randomized_election_timeout:
            self.election_elapsed = 0
            self.campaign()

    def propose(self, data: bytes) -> None:
        """Replicate `data` (on the leader, or forwarded to it); NotLeaderError if no leader is known."""
        self._propose(Entry(term=0, index=0, kind=EntryKind.NORMAL, data=data))

    def propose_conf_change(self, cc: ConfChange) -> None:
        """Propose a membership change; on the leader it is validated now (ConfChangeError)."""
        if self.role == Role.LEADER:
            self.check_conf_change_allowed(cc)
        self._propose(Entry(term=0, index=0, kind=EntryKind.CONF_CHANGE, data=codec.encode_conf_change(cc)))

    def _propose(self, entry: Entry) -> None:
        if self.role == Role.LEADER:
            self.leader_propose([entry], local=True)
        elif self.leader is None:
            raise NotLeaderError(self.id, self.term)
        else:
            self.send(Message(MessageType.PROPOSE, self.id, self.leader, 0, entries=(entry,)))

    def read_index(self, context: bytes) -> None:
        """Start a read barrier; a ReadState with `context` appears in a later Ready."""
        if self.role == Role.LEADER:
            self.leader_read_index(context, self.id)
        elif self.leader is None:
            raise NotLeaderError(self.id, self.term)
        else:
            self.send(Message(MessageType.READ_INDEX, self.id, self.leader, 0, context=context))

    def transfer_leadership(self, to: NodeId) -> None:
        if self.role == Role.LEADER:
            self.leader_transfer(to)
        elif self.leader is None:
            raise NotLeaderError(self.id, self.term)
        else:
            self.send(Message(MessageType.TRANSFER_LEADER, self.id, self.leader, 0, index=to))

    def campaign(self) -> None:
        """Start an election now (pre-vote first if configured); no-op on leaders and non-voters."""
        if self.role == Role.LEADER or not self.promotable() or self._unapplied_conf_change():
            return
        self._start_election(pre=self.config.pre_vote)

    def report_unreachable(self, node: NodeId) -> None:
        if self.role == Role.LEADER:
            self.leader_report_unreachable(node)

    def report_snapshot(self, node: NodeId, ok: bool) -> None:
        if self.role == Role.LEADER:
            self.leader_report_snapshot(node, ok)

    # --- elections ----------------------------------------------------------------------------------

    def _unapplied_conf_change(self) -> bool:
        """A committed but unapplied membership change may remove us: do not campaign yet."""
        return any(e.kind == EntryKind.CONF_CHANGE for e in self.log.next_committed())

    def _start_election(self, pre: bool, transfer: bool = False) -> None:
        if pre:
            self._become(Role.PRE_CANDIDATE, self.term)
            term, kind = self.term + 1, MessageType.PRE_VOTE
        else:
            self._reset(self.term + 1)
            self.vote = self.id
            self.role = Role.CANDIDATE
            term, kind = self.term, MessageType.VOTE
        self.votes = {self.id: True}
        if self._poll() == VoteResult.WON:
            self._election_won(pre)
            return
        context = TRANSFER_CONTEXT if transfer else b""
        for node in sorted(self.conf_state.voters | self.conf_state.voters_outgoing):
            if node != self.id:
                self.send(
                    Message(
                        kind, self.id, node, term,
                        log_term=self.log.last_term(), index=self.log.last_index(), context=context,
                    )
                )  # fmt: skip

    def _poll(self) -> VoteResult:
        return joint_vote_result(self.conf_state, self.votes)

    def _election_won(self, pre: bool) -> None:
        if pre:
            self._start_election(pre=False)
        else:
            self.become_leader()

    def _handle_vote_request(self, m: Message) -> None:
        pre = m.type == MessageType.PRE_VOTE
        can_vote = (
            self.vote == m.src or (self.vote is None and self.leader is None) or (pre and m.term > self.term)
        )
        response = MessageType.PRE_VOTE_RESPONSE if pre else MessageType.VOTE_RESPONSE
        if can_vote and self.log.is_up_to_date(m.index, m.log_term):
            self.send(Message(response, self.id, m.src, m.term))
            if not pre:
                self.election_elapsed = 0
                self.vote = m.src
        else:
            self.send(Message(response, self.id, m.src, self.term, reject=True))
            if self._should_lead_hand_over(m):
                self._start_election(pre=self.config.pre_vote)

    def _should_lead_hand_over(self, m: Message) -> bool:
        """Whether to campaign although we are not a voter, to unwedge the cluster.

        After a leader's removal commits, the remaining voters may not know it yet and still
        need our vote (their configuration is older), while our log holds entries they lack so
        we must refuse it: no one could ever win. We know our removal committed, so we may lead
        the configuration we were removed from (Raft thesis §4.2.2: a leader outside the new
        configuration is allowed), catch a voter up and hand leadership over (`hand_over`).
        This only happens when a candidate is behind our log and no leader is known.
        """
        return (
            not self.promotable()
            and self.leader is None
            and bool(self.conf_state.voters)
            and not self.log.is_up_to_date(m.index, m.log_term)
        )

    def _handle_vote_response(self, m: Message) -> None:
        expected = (
            MessageType.PRE_VOTE_RESPONSE if self.role == Role.PRE_CANDIDATE else MessageType.VOTE_RESPONSE
        )
        if m.type != expected:
            return
        self.votes.setdefault(m.src, not m.reject)
        result = self._poll()
        if result == VoteResult.WON:
            self._election_won(self.role == Role.PRE_CANDIDATE)
        elif result == VoteResult.LOST:
            self.become_follower(self.term, None)

    # --- role changes ---------------------------------------------------------------------------------

    def _reset(self, term: int) -> None:
        if term != self.term:
            self.term = term
            self.vote = None
        self.leader = None
        self.election_elapsed = 0
        self.heartbeat_elapsed = 0
        self.randomized_election_timeout = self._rng.randrange(
            self.config.election_tick, 2 * self.config.election_tick
        )
        self.lead_transferee = None
        self.votes = {}
        self.progress = {}
        self.sync_progress()
        self.pending_conf_index = 0
        self.read_only = ReadOnly()
        self.pending_reads = []

    def _become(self, role: Role, term: int) -> None:
        self._reset(term)
        self.role = role

    def become_follower(self, term: int, leader: NodeId | None) -> None:
        self._become(Role.FOLLOWER, term)
        self.leader = leader

    def become_leader(self) -> None:
        self._become(Role.LEADER, self.term)
        self.leader = self.id
        # Entries from earlier terms may hold a membership change we have not applied yet.
        self.pending_conf_index = self.log.last_index()
        self.append_entries([Entry(term=0, index=0, kind=EntryKind.NOOP)])
        self.bcast_append()
        if not self.promotable():
            self.hand_over()  # elected only to unwedge the cluster: see _should_lead_hand_over

    def sync_progress(self) -> None:
        """Track exactly the current members (new ones start probing at our last index + 1)."""
        wanted = members(self.conf_state)
        for node in list(self.progress):
            if node not in wanted:
                del self.progress[node]
        last = self.log.last_index()
        for node in sorted(wanted - self.progress.keys()):
            pr = Progress(match=0, next=last + 1, max_inflight=self.config.max_inflight_appends)
            if node == self.id:
                pr.match = last
                pr.recent_active = True
            self.progress[node] = pr

    # --- messages -------------------------------------------------------------------------------------

    def send(self, m: Message) -> None:
        self.msgs.append(m)

    def step(self, m: Message) -> None:
        """Feed one message addressed to this node."""
        if m.dst != self.id:
            raise ValueError(f"node {self.id} was handed a message for {m.dst}: {m}")
        if m.type not in _TERMLESS and not self._step_term(m):
            return
        if m.type in (MessageType.PRE_VOTE, MessageType.VOTE):
            self._handle_vote_request(m)
        elif self.role == Role.LEADER:
            self.step_leader(m)
        elif self.role == Role.FOLLOWER:
            self._step_follower(m)
        else:
            self._step_candidate(m)

    def _step_term(self, m: Message) -> bool:
        """Term rules shared by every role; False if the message must go no further."""
        if m.term > self.term:
            if m.type in (MessageType.PRE_VOTE, MessageType.VOTE):
                forced = m.context == TRANSFER_CONTEXT
                in_lease = (
                    self.config.check_quorum
                    and self.leader is not None
                    and self.election_elapsed < self.config.election_tick
                )
                if in_lease and not forced:
                    return False  # we heard from a live leader recently: ignore the disruption
            if m.type == MessageType.PRE_VOTE or (m.type == MessageType.PRE_VOTE_RESPONSE and not m.reject):
                return True  # pre-votes never change terms
            if m.type in (MessageType.APPEND, MessageType.HEARTBEAT, MessageType.SNAPSHOT):
                self.become_follower(m.term, m.src)
            else:
                self.become_follower(m.term, None)
            return True
        if m.term < self.term:
            if (self.config.check_quorum or self.config.pre_vote) and m.type in (
                MessageType.APPEND,
                MessageType.HEARTBEAT,
            ):
                # A stale leader (e.g. back from a partition): our term makes it step down.
                self.send(Message(MessageType.APPEND_RESPONSE, self.id, m.src, self.term))
            elif m.type == MessageType.PRE_VOTE:
                self.send(Message(MessageType.PRE_VOTE_RESPONSE, self.id, m.src, self.term, reject=True))
            return False
        return True

    def _step_candidate(self, m: Message) -> None:
        if m.type in (MessageType.APPEND, MessageType.HEARTBEAT, MessageType.SNAPSHOT):
            self.become_follower(m.term, m.src)
            self._step_follower(m)
        elif m.type in (MessageType.PRE_VOTE_RESPONSE, MessageType.VOTE_RESPONSE):
            self._handle_vote_response(m)
        # Proposals and read requests reaching a candidate are dropped: no leader to forward to.

    def _step_follower(self, m: Message) -> None:
        if m.type in (MessageType.APPEND, MessageType.HEARTBEAT, MessageType.SNAPSHOT):
            self.election_elapsed = 0
            self.leader = m.src
            if m.type == MessageType.APPEND:
                self.handle_append(m)
            elif m.type == MessageType.HEARTBEAT:
                self.handle_heartbeat(m)
            else:
                self.handle_snapshot(m)
        elif m.type in _TERMLESS:
            if self.leader is not None:
                self.send(
                    Message(
                        m.type, m.src, self.leader, 0, index=m.index, entries=m.entries, context=m.context
                    )
                )
        elif m.type == MessageType.READ_INDEX_RESPONSE:
            self.read_states.append(ReadState(index=m.index, context=m.context))
        elif m.type == MessageType.TIMEOUT_NOW and self.promotable():
            self._start_election(pre=False, transfer=True)

    # --- Ready / advance ---------------------------------------------------------------------------------

    def has_ready(self) -> bool:
        return bool(
            SoftState(self.leader, self.role) != self._prev_soft
            or (self.hard_state != self._prev_hard)
            or self.log.unstable
            or self.log.unstable_snapshot is not None
            or self.msgs
            or self.read_states
            or self.log.has_next_committed()
        )

    def ready(self) -> Ready:
        """Collect pending work; handle it (see `raft.types`) and call `advance` before the next one."""
        soft = SoftState(self.leader, self.role)
        hard = self.hard_state
        rd = Ready(
            soft_state=soft if soft != self._prev_soft else None,
            hard_state=hard if hard != self._prev_hard else None,
            entries=list(self.log.unstable),
            snapshot=self.log.unstable_snapshot,
            messages=self.msgs,
            committed_entries=self.log.next_committed(),
            read_states=self.read_states,
        )
        self._prev_soft, self._prev_hard = soft, hard
        self.msgs, self.read_states = [], []
        return rd

    def advance(self, rd: Ready) -> None:
        """The driver persisted, sent and applied everything in `rd`."""
        if rd.snapshot is not None:
            self.log.stable_snapshot_to(rd.snapshot.meta.index)
            self.log.applied = max(self.log.applied, rd.snapshot.meta.index)
        if rd.entries:
            self.log.stable_to(rd.entries[-1].index, rd.entries[-1].term)
        for entry in rd.committed_entries:
            if entry.index <= self.log.applied:
                continue
            if entry.kind == EntryKind.CONF_CHANGE:
                self._apply_conf_change(entry)
            self.log.applied_to(entry.index)
        if self.role == Role.LEADER:
            self.after_apply()

    def _apply_conf_change(self, entry: Entry) -> None:
        try:
            self.conf_state = apply_conf_change(self.conf_state, codec.decode_conf_change(entry.data))
        except (ConfChangeError, codec.CodecError):
            return  # every node skips the same invalid entry, so configurations stay identical
        self.sync_progress()
        if self.role == Role.LEADER:
            self.after_conf_change()
