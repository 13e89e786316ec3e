"""The vocabulary of single-partition Paxos (lightweight transactions): ballots, proposals, messages.

One Paxos instance runs per partition key; its rounds are ordered by ballots. The proposer
(`paxos.proposer`) and acceptor (`paxos.acceptor`) are pure state machines over these frozen
values, so the asyncio shell (`node.paxos_service`) and the deterministic simulation in the
tests drive the same code. Values are opaque bytes to the core: the shell encodes the mutations
a conditional statement makes, and the replicas' reads of the partition, in its own format.

Every message names the partition ``key`` (opaque bytes: the shell puts the table id in it) so
that an acceptor keeps independent state per partition, and replies carry the ballot they answer
so a proposer can ignore replies to its earlier rounds.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from dataclasses import dataclass
from typing import Any

_BALLOT = struct.Struct(">QQI")
BALLOT_SIZE = _BALLOT.size
"""Bytes of an encoded ballot: microseconds, node id (a 63-bit raft id), attempt id."""
_GREGORIAN_OFFSET_100NS = 0x01B21DD213814000
"""100 ns intervals between 1582-10-15 (the UUID epoch) and 1970-01-01."""


@dataclass(frozen=True, order=True)
class Ballot:
    """A round number, totally ordered: time first, then the proposing node, then its attempt id.

    ``micros`` makes ballots grow with wall-clock time, as Cassandra's timeuuid ballots do, so the
    mutations of a later transaction carry a later write timestamp. ``node`` and ``seq`` make two
    ballots from different proposers differ even when their clocks read the same microsecond;
    without that, two proposers could both have a value accepted under "the same" round.
    """

    micros: int
    node: int
    seq: int

    def to_bytes(self) -> bytes:
        """Fixed width and big-endian: byte order equals ballot order (the acceptor table relies on it)."""
        return _BALLOT.pack(self.micros, self.node, self.seq)

    @classmethod
    def from_bytes(cls, data: bytes) -> Ballot:
        micros, node, seq = _BALLOT.unpack(data)
        return cls(micros, node, seq)

    def to_uuid(self) -> uuid.UUID:
        """The ballot as a version-1 timeuuid (the form Cassandra shows in system.paxos)."""
        ticks = self.micros * 10 + _GREGORIAN_OFFSET_100NS
        clock_seq = self.seq & 0x3FFF
        return uuid.UUID(
            fields=(
                ticks & 0xFFFFFFFF,
                (ticks >> 32) & 0xFFFF,
                ((ticks >> 48) & 0x0FFF) | 0x1000,
                0x80 | (clock_seq >> 8),
                clock_seq & 0xFF,
                self.node & 0xFFFFFFFFFFFF,
            )
        )


def digest(value: bytes) -> bytes:
    """A short fingerprint of a value, for the commit history acceptors keep (values are unique)."""
    return hashlib.blake2b(value, digest_size=16).digest()


HISTORY = 16
"""Commits an acceptor remembers per partition. A proposer needs them when its value may have been
chosen and then superseded before it could look; more commits than this in between is UNKNOWN."""

History = tuple[tuple[Ballot, bytes], ...]
"""An acceptor's most recent commits as (ballot, digest of the value), oldest first."""


@dataclass(frozen=True)
class Proposal:
    """A value proposed (or accepted, or committed) in the round of ``ballot``."""

    ballot: Ballot
    value: bytes


# --- proposer -> acceptor -----------------------------------------------------------------------


@dataclass(frozen=True)
class Prepare:
    key: bytes
    ballot: Ballot


@dataclass(frozen=True)
class Accept:
    """Phase 2a ("propose"): accept ``proposal`` unless a higher ballot was promised."""

    key: bytes
    proposal: Proposal


@dataclass(frozen=True)
class Commit:
    """Learn: ``proposal`` is chosen; apply its value and remember it as the most recent commit."""

    key: bytes
    proposal: Proposal


# --- acceptor -> proposer -----------------------------------------------------------------------


@dataclass(frozen=True)
class Promise:
    """The answer to `Prepare`. ``ok`` False is a refusal: ``promised`` is the higher ballot seen.

    ``accepted`` is the proposal this acceptor accepted and has not seen committed (to be repaired),
    ``committed`` its most recent commit, ``history`` its last few commits (so a proposer whose
    own value may have been chosen can find out). ``read`` is the acceptor's current data for
    the partition, attached by the shell after the promise is durable (opaque to the core).
    """

    key: bytes
    ballot: Ballot
    ok: bool
    promised: Ballot | None
    accepted: Proposal | None
    committed: Proposal | None
    read: bytes | None = None
    history: History = ()


@dataclass(frozen=True)
class Accepted:
    """The answer to `Accept`; ``ok`` False means ``promised`` (a higher ballot) got there first."""

    key: bytes
    ballot: Ballot
    ok: bool
    promised: Ballot | None


@dataclass(frozen=True)
class Committed:
    key: bytes
    ballot: Ballot


Request = Prepare | Accept | Commit
Reply = Promise | Accepted | Committed
Message = Request | Reply


# --- wire form (msgpack-friendly plain values) -------------------------------------------------


def _ballot_plain(b: Ballot | None) -> bytes | None:
    return None if b is None else b.to_bytes()


def _ballot_of(data: Any) -> Ballot | None:
    return None if data is None else Ballot.from_bytes(bytes(data))


def _proposal_plain(p: Proposal | None) -> list[bytes] | None:
    return None if p is None else [p.ballot.to_bytes(), p.value]


def _proposal_of(data: Any) -> Proposal | None:
    return None if data is None else Proposal(Ballot.from_bytes(bytes(data[0])), bytes(data[1]))


def to_plain(msg: Message) -> list[Any]:
    """A list of bytes/bools/None that msgpack carries unchanged; the first item names the kind."""
    if isinstance(msg, Prepare):
        return ["prepare", msg.key, msg.ballot.to_bytes()]
    if isinstance(msg, Accept | Commit):
        return ["accept" if isinstance(msg, Accept) else "commit", msg.key, _proposal_plain(msg.proposal)]
    if isinstance(msg, Promise):
        return [
            "promise",
            msg.key,
            msg.ballot.to_bytes(),
            msg.ok,
            _ballot_plain(msg.promised),
            _proposal_plain(msg.accepted),
            _proposal_plain(msg.committed),
            msg.read,
            [[b.to_bytes(), d] for b, d in msg.history],
        ]
    if isinstance(msg, Accepted):
        return ["accepted", msg.key, msg.ballot.to_bytes(), msg.ok, _ballot_plain(msg.promised)]
    return ["committed", msg.key, msg.ballot.to_bytes()]


def from_plain(data: Any) -> Message:
    """Inverse of `to_plain`; ValueError names what was malformed."""
    try:
        kind, key = data[0], bytes(data[1])
        if kind == "prepare":
            return Prepare(key, Ballot.from_bytes(bytes(data[2])))
        if kind in ("accept", "commit"):
            proposal = _proposal_of(data[2])
            assert proposal is not None
            return Accept(key, proposal) if kind == "accept" else Commit(key, proposal)
        ballot = Ballot.from_bytes(bytes(data[2]))
        if kind == "promise":
            read = None if data[7] is None else bytes(data[7])
            history = tuple((Ballot.from_bytes(bytes(b)), bytes(d)) for b, d in data[8])
            return Promise(
                key,
                ballot,
                bool(data[3]),
                _ballot_of(data[4]),
                _proposal_of(data[5]),
                _proposal_of(data[6]),
                read,
                history,
            )
        if kind == "accepted":
            return Accepted(key, ballot, bool(data[3]), _ballot_of(data[4]))
        if kind == "committed":
            return Committed(key, ballot)
    except (IndexError, TypeError, AssertionError, struct.error) as exc:
        raise ValueError(f"malformed Paxos message {data!r:.200}: {exc}") from exc
    raise ValueError(f"unknown Paxos message kind {data!r:.100}")
