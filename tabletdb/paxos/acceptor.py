"""The Paxos acceptor as a pure function of (durable state, request) -> (new state, reply, value to apply).

The shell that drives it must, in this order: persist ``new_state`` durably when it differs
from the old one (a promise or an acceptance the reply announces must survive a crash), apply
``apply`` to the base table before persisting the commit (a node whose state says "committed up
to b" must hold the data of b), and only then send the reply. The function keeps no memory of
its own, so an acceptor restarted from its durable state behaves exactly like one that never
stopped.

Rules (Lamport's, with Cassandra's commit/learn step):
- Prepare(b): promise if b is above every ballot promised so far; reply with the accepted,
  not yet committed proposal (for the proposer to repair) and the most recent commit.
- Accept(p): accept if p.ballot is at least the promised ballot (the promise is raised to it).
- Commit(p): apply p's value, and remember p as the most recent commit if it is newer (forgetting
  an accepted proposal it supersedes, and adding it to the last `HISTORY` commits). A commit
  older than the most recent one is still applied: this replica may have missed it, and values
  are last-write-wins mutations, so applying a value late or twice is harmless while skipping it
  would lose its data here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tabletdb.paxos.messages import (
    BALLOT_SIZE,
    HISTORY,
    Accept,
    Accepted,
    Ballot,
    Commit,
    Committed,
    History,
    Prepare,
    Promise,
    Proposal,
    Reply,
    Request,
    digest,
)
from tabletdb.storage.paxos_state import PaxosRecord, PaxosStateStore


@dataclass(frozen=True)
class AcceptorState:
    """What one replica must remember about one partition's Paxos instance."""

    promised: Ballot | None = None
    accepted: Proposal | None = None
    committed: Proposal | None = None
    history: History = ()


EMPTY = AcceptorState()


@dataclass(frozen=True)
class Step:
    state: AcceptorState
    reply: Reply
    apply: Proposal | None = None
    """A committed proposal whose value the shell applies to the base table."""


def _above(ballot: Ballot, bound: Ballot | None) -> bool:
    return bound is None or ballot > bound


def step(state: AcceptorState, request: Request) -> Step:
    if isinstance(request, Prepare):
        return _prepare(state, request)
    if isinstance(request, Accept):
        return _accept(state, request)
    return _commit(state, request)


def _prepare(state: AcceptorState, req: Prepare) -> Step:
    if not _above(req.ballot, state.promised):
        return Step(state, Promise(req.key, req.ballot, False, state.promised, None, None))
    new = AcceptorState(req.ballot, state.accepted, state.committed, state.history)
    promise = Promise(
        req.key, req.ballot, True, req.ballot, state.accepted, state.committed, None, state.history
    )
    return Step(new, promise)


def _accept(state: AcceptorState, req: Accept) -> Step:
    ballot = req.proposal.ballot
    if state.promised is not None and ballot < state.promised:
        return Step(state, Accepted(req.key, ballot, False, state.promised))
    new = AcceptorState(ballot, req.proposal, state.committed, state.history)
    return Step(new, Accepted(req.key, ballot, True, ballot))


def _commit(state: AcceptorState, req: Commit) -> Step:
    proposal = req.proposal
    reply = Committed(req.key, proposal.ballot)
    committed = state.committed
    if committed is not None and proposal.ballot <= committed.ballot:
        return Step(state, reply, proposal)
    accepted = state.accepted
    if accepted is not None and accepted.ballot <= proposal.ballot:
        accepted = None
    history = (*state.history, (proposal.ballot, digest(proposal.value)))[-HISTORY:]
    return Step(AcceptorState(state.promised, accepted, proposal, history), reply, proposal)


# --- durable form ----------------------------------------------------------------------------


def _proposal_of(pair: tuple[bytes, bytes] | None) -> Proposal | None:
    return None if pair is None else Proposal(Ballot.from_bytes(pair[0]), pair[1])


def _pair_of(proposal: Proposal | None) -> tuple[bytes, bytes] | None:
    return None if proposal is None else (proposal.ballot.to_bytes(), proposal.value)


def state_from_record(record: PaxosRecord | None) -> AcceptorState:
    if record is None:
        return EMPTY
    promised = None if record.promised is None else Ballot.from_bytes(record.promised)
    raw, size = record.history, BALLOT_SIZE + 16
    history = tuple(
        (Ballot.from_bytes(raw[i : i + BALLOT_SIZE]), raw[i + BALLOT_SIZE : i + size])
        for i in range(0, len(raw), size)
    )
    return AcceptorState(promised, _proposal_of(record.accepted), _proposal_of(record.committed), history)


def record_of(state: AcceptorState) -> PaxosRecord:
    promised = None if state.promised is None else state.promised.to_bytes()
    history = b"".join(b.to_bytes() + d for b, d in state.history)
    return PaxosRecord(promised, _pair_of(state.accepted), _pair_of(state.committed), history)


class DurableAcceptor:
    """The acceptor over a `PaxosStateStore`, for drivers that apply commits in between.

    ``decide`` loads a key's state and steps it; the driver applies ``Step.apply`` to its base
    table, then calls ``save`` (a no-op when nothing changed), then sends ``Step.reply``. The
    driver must not interleave two requests for one key between ``decide`` and ``save`` (the
    asyncio shell holds a per-key lock), or the second would step from a stale state.
    """

    def __init__(self, store: PaxosStateStore) -> None:
        self.store = store

    def decide(self, request: Request) -> tuple[AcceptorState, Step]:
        """The state before and the step; pass both to `save`."""
        before = state_from_record(self.store.load(request.key))
        return before, step(before, request)

    def save(self, key: bytes, before: AcceptorState, result: Step) -> None:
        record = self.changed(before, result)
        if record is not None:
            self.store.save(key, record)

    @staticmethod
    def changed(before: AcceptorState, result: Step) -> PaxosRecord | None:
        """What to persist for ``result`` (None: nothing changed), for drivers that batch saves."""
        return None if result.state == before else record_of(result.state)
