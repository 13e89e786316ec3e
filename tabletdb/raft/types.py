"""The vocabulary of the sans-I/O Raft core: log entries, persistent state, messages, Ready.

The contract between the core (`raft.core`) and whatever drives it (the deterministic
simulator in `sim`, the asyncio shell over `net`) follows etcd's raft library:

1. The driver feeds inputs: `step(message)`, `tick()`, `propose(data)`, `read_index(ctx)`, ...
2. It asks `ready()` for a `Ready` batch and handles it **in this order**:
   a. persist `snapshot` (if any), then `entries`, then `hard_state` — durably (fsync) —
      because the messages below may promise them (a vote, an append acknowledgement);
   b. send `messages`;
   c. apply `committed_entries` to the state machine (and install `snapshot` into it);
   d. call `advance(ready)`.
3. Nothing in the core reads a clock, a socket or a random source; ticks are its only time
   and the election-timeout jitter comes from a seed given at construction.

All types are frozen dataclasses of plain values so they can be msgpack-encoded for the wire
and the durable log (see `codec` in this package).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

NodeId = int
"""Raft server ids. group0 maps host ids (UUIDs) to these small integers."""


class EntryKind(IntEnum):
    NORMAL = 0
    """Opaque state-machine command."""
    CONF_CHANGE = 1
    """Membership change; `data` is an encoded ConfChange."""
    NOOP = 2
    """Appended by a new leader to commit entries of earlier terms (Raft paper §5.4.2)."""


@dataclass(frozen=True)
class Entry:
    term: int
    index: int
    kind: EntryKind = EntryKind.NORMAL
    data: bytes = b""


@dataclass(frozen=True)
class HardState:
    """What must be on disk before any message that depends on it is sent."""

    term: int = 0
    vote: NodeId | None = None
    commit: int = 0


@dataclass(frozen=True)
class ConfState:
    """Cluster membership. During joint consensus `voters_outgoing` is the old voter set."""

    voters: frozenset[NodeId] = frozenset()
    learners: frozenset[NodeId] = frozenset()
    voters_outgoing: frozenset[NodeId] = frozenset()

    @property
    def joint(self) -> bool:
        return bool(self.voters_outgoing)


class ConfChangeType(IntEnum):
    ADD_VOTER = 0
    ADD_LEARNER = 1
    REMOVE = 2


@dataclass(frozen=True)
class ConfChangeSingle:
    type: ConfChangeType
    node: NodeId


@dataclass(frozen=True)
class ConfChange:
    """A set of changes applied atomically: one change is a simple change, several use joint
    consensus. An empty `changes` list with `leave_joint=True` leaves the joint configuration."""

    changes: tuple[ConfChangeSingle, ...] = ()
    leave_joint: bool = False


@dataclass(frozen=True)
class SnapshotMeta:
    index: int
    term: int
    conf: ConfState


@dataclass(frozen=True)
class Snapshot:
    meta: SnapshotMeta
    data: bytes = b""


class MessageType(IntEnum):
    PRE_VOTE = 0
    PRE_VOTE_RESPONSE = 1
    VOTE = 2
    VOTE_RESPONSE = 3
    APPEND = 4
    APPEND_RESPONSE = 5
    HEARTBEAT = 6
    HEARTBEAT_RESPONSE = 7
    SNAPSHOT = 8
    """InstallSnapshot: carries `snapshot`."""
    PROPOSE = 9
    """A follower forwarding client proposals (`entries` with term 0) to the leader."""
    READ_INDEX = 10
    """A follower asking the leader for a read index (`context` identifies the request)."""
    READ_INDEX_RESPONSE = 11
    TIMEOUT_NOW = 12
    """Leadership transfer: the target starts an election immediately."""
    TRANSFER_LEADER = 13
    """Forwarded leadership-transfer request: `src` asks the leader (`dst`) to hand over to the
    node whose id is in `index` (term 0, like PROPOSE and READ_INDEX)."""


@dataclass(frozen=True)
class Message:
    type: MessageType
    src: NodeId
    dst: NodeId
    term: int
    # APPEND: the entry before `entries`; VOTE/PRE_VOTE: the candidate's last log position;
    # APPEND_RESPONSE: the match index (or the rejected index with `reject`).
    log_term: int = 0
    index: int = 0
    entries: tuple[Entry, ...] = ()
    commit: int = 0
    reject: bool = False
    reject_hint: int = 0
    snapshot: Snapshot | None = None
    context: bytes = b""


@dataclass(frozen=True)
class ReadState:
    """A completed read barrier: once `index` is applied, reads for `context` are linearizable."""

    index: int
    context: bytes


class Role(IntEnum):
    FOLLOWER = 0
    PRE_CANDIDATE = 1
    CANDIDATE = 2
    LEADER = 3


@dataclass(frozen=True)
class SoftState:
    """Volatile state the driver may want to observe (leader changes, role)."""

    leader: NodeId | None
    role: Role


@dataclass
class Ready:
    """One batch of work for the driver; see the module docstring for the handling order."""

    soft_state: SoftState | None = None
    hard_state: HardState | None = None
    entries: list[Entry] = field(default_factory=list)
    snapshot: Snapshot | None = None
    messages: list[Message] = field(default_factory=list)
    committed_entries: list[Entry] = field(default_factory=list)
    read_states: list[ReadState] = field(default_factory=list)

    def empty(self) -> bool:
        return not (
            self.soft_state
            or self.hard_state
            or self.entries
            or self.snapshot
            or self.messages
            or self.committed_entries
            or self.read_states
        )


@dataclass(frozen=True)
class Config:
    id: NodeId
    election_tick: int = 10
    heartbeat_tick: int = 1
    pre_vote: bool = True
    check_quorum: bool = True
    max_entries_per_append: int = 64
    max_inflight_appends: int = 8
    seed: int = 0
    """Seeds the election-timeout jitter; the core has no other randomness."""
