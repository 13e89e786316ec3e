"""The Paxos proposer for one lightweight transaction, as a sans-I/O state machine.

Inputs: `start`, `receive` (a reply from an acceptor), `provide` (the new value, or None when
the IF condition does not hold), `undelivered` (a request the shell did not send: its target is
down) and `tick` (time has passed). Every input returns the outputs
it produced: `Send` (a request to an acceptor), `NeedValue` (the promise quorum's reads; answer
with `provide`) and, once, `Done`. Time is an input (microseconds), randomness comes from the
seed given at construction, so a run replays exactly.

A transaction goes: prepare a fresh ballot on all replicas; with a quorum of promises either
(a) repair the newest accepted-but-uncommitted proposal by re-proposing its value under our
ballot and committing it, then start over; or (b) send the newest commit to promisers that
missed it, then start over; or (c) the promisers agree on the latest commit, so their reads are
current: ask for the value, propose it, and commit it on a quorum. A refusal by so many
replicas that no quorum is left is contention: back off for a random while and retry with a
ballot above every one seen. A round that does not complete within ``Timing.round_timeout`` is
retried the same way (lost messages, a crashed acceptor).

Our own proposal may be accepted somewhere without our knowing whether it was chosen (some
accepted and too many refused, or a replica did not answer). Re-evaluating the condition while
it could still be chosen would be wrong (a later round could repair our value and find the
condition false), so the next round first settles its fate (`_find_ours`): still the newest
in-progress proposal -> we finish it, applied; in the latest commit or an acceptor's commit
history -> applied; provably never chosen -> carry on as usual; otherwise ``UNKNOWN`` (the shell
answers WriteTimeout, write type CAS, as Cassandra does). So is running out of time once our
value may have been accepted. A proposal every replica refused was accepted nowhere.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from tabletdb.paxos.messages import (
    HISTORY,
    Accept,
    Accepted,
    Ballot,
    Commit,
    Committed,
    Prepare,
    Promise,
    Proposal,
    Reply,
    Request,
    digest,
)


class Outcome(Enum):
    APPLIED = "applied"
    """Our value was chosen and committed on a quorum."""
    NOT_APPLIED = "not applied"
    """The condition did not hold on the current (linearizable) read; nothing was proposed."""
    TIMEOUT = "timeout"
    """Out of time before anything of ours could have been chosen: the transaction did nothing."""
    UNKNOWN = "unknown"
    """Out of time (or partially accepted) after our value may have been chosen."""


@dataclass(frozen=True)
class Send:
    dst: int
    message: Request


@dataclass(frozen=True)
class NeedValue:
    ballot: Ballot
    reads: tuple[bytes | None, ...]


@dataclass(frozen=True)
class Done:
    outcome: Outcome
    contentions: int
    """How many rounds were lost to a competing proposer (the shell's metric)."""


Output = Send | NeedValue | Done


@dataclass(frozen=True)
class Timing:
    """All in microseconds. ``deadline`` is absolute; the others are durations."""

    deadline: int
    round_timeout: int = 1_000_000
    backoff_base: int = 2_000
    backoff_max: int = 100_000


class _Phase(Enum):
    PREPARE = 1
    AWAIT_VALUE = 2
    ACCEPT = 3
    COMMIT = 4
    BACKOFF = 5
    DONE = 6


class Proposer:
    def __init__(
        self,
        key: bytes,
        replicas: tuple[int, ...],
        quorum: int,
        node: int,
        seq: int,
        timing: Timing,
        seed: int,
        commit_enough: Callable[[frozenset[int]], bool] | None = None,
    ) -> None:
        """``commit_enough``: our own value counts as committed once a quorum acknowledged the
        commit *and* this holds for the set of replicas that did (the client's consistency level,
        when it asks for more than a quorum, e.g. ALL); None: a quorum suffices."""
        if not 0 < quorum <= len(replicas):
            raise ValueError(f"quorum {quorum} impossible with {len(replicas)} replicas")
        self.key = key
        self.replicas = replicas
        self.quorum = quorum
        self.node = node
        self.seq = seq
        self.timing = timing
        self._commit_enough = commit_enough
        self._rng = random.Random(seed)
        self._phase = _Phase.PREPARE
        self._highest_seen: Ballot | None = None
        self.ballot = Ballot(0, node, seq)
        self._round_deadline = 0
        self._wake_at = 0
        self._contentions = 0
        self._promises: dict[int, Promise] = {}
        self._refused: set[int] = set()
        self._accepted: set[int] = set()
        self._rejected: set[int] = set()
        self._proposal: Proposal | None = None
        self._own_value = False
        self._maybe_ours: list[Proposal] = []
        """Our proposals that may have been accepted somewhere without our knowing if they were chosen."""
        self._commit_waiting: set[int] = set()
        self._commit_acked: set[int] = set()
        self._commit_needed = 0
        self._commit_then_done = False
        self.outcome: Outcome | None = None

    # --- inputs ----------------------------------------------------------------------------

    def start(self, now: int) -> list[Output]:
        return self._begin_round(now)

    def receive(self, src: int, reply: Reply, now: int) -> list[Output]:
        if src not in self.replicas or reply.key != self.key:
            return []
        if isinstance(reply, Promise) and self._phase is _Phase.PREPARE and reply.ballot == self.ballot:
            return self._on_promise(src, reply, now)
        if isinstance(reply, Accepted) and self._phase is _Phase.ACCEPT and reply.ballot == self.ballot:
            return self._on_accepted(src, reply, now)
        if isinstance(reply, Committed) and self._phase is _Phase.COMMIT:
            assert self._proposal is not None
            if reply.ballot == self._proposal.ballot:
                return self._on_committed(src, now)
        return []

    def provide(self, value: bytes | None, now: int) -> list[Output]:
        """The caller's answer to `NeedValue`: the value to propose, or None (condition false)."""
        if self._phase is not _Phase.AWAIT_VALUE:
            raise RuntimeError(f"provide() in phase {self._phase.name}: no value was asked for")
        if value is None:
            # An earlier proposal of ours that is still alive could yet be chosen.
            return self._finish(Outcome.UNKNOWN if self._maybe_ours else Outcome.NOT_APPLIED)
        return self._propose(Proposal(self.ballot, value), own=True, now=now)

    def undelivered(self, dst: int, request: Request, now: int) -> list[Output]:
        """``request`` was certainly never delivered (the shell knew ``dst`` was down and did not send).

        Unlike silence, this proves ``dst`` did not accept our value, so a proposal every other
        replica refused can still be retried safely.
        """
        if dst not in self.replicas:
            return []
        if isinstance(request, Prepare) and self._phase is _Phase.PREPARE and request.ballot == self.ballot:
            self._refused.add(dst)
            return self._contended(now) if self._no_quorum_left(self._refused) else []
        ours = isinstance(request, Accept) and request.proposal == self._proposal
        if ours and self._phase is _Phase.ACCEPT:
            self._rejected.add(dst)
            return self._after_accept_reply(now)
        return []

    def tick(self, now: int) -> list[Output]:
        if self._phase is _Phase.DONE:
            return []
        if self._phase is _Phase.BACKOFF:
            return self._begin_round(now) if now >= self._wake_at else []
        if now >= self.timing.deadline:
            return self._finish(self._timeout_outcome())
        if now < self._round_deadline or self._phase is _Phase.AWAIT_VALUE:
            return []
        if self._phase is _Phase.COMMIT and self._commit_then_done:
            # Our value is chosen; commits are idempotent: resend to whoever has not answered.
            assert self._proposal is not None
            self._round_deadline = now + self.timing.round_timeout
            return [Send(r, Commit(self.key, self._proposal)) for r in sorted(self._commit_waiting)]
        if self._phase is _Phase.ACCEPT and self._own_value:
            # A replica that did not answer may have accepted our value: it may yet be chosen.
            assert self._proposal is not None
            self._maybe_ours.append(self._proposal)
        return self._begin_round(now)

    @property
    def next_wakeup(self) -> int | None:
        """When `tick` next has something to do (None once done)."""
        if self._phase is _Phase.DONE:
            return None
        if self._phase is _Phase.BACKOFF:
            return self._wake_at
        if self._phase is _Phase.AWAIT_VALUE:
            return self.timing.deadline
        return min(self.timing.deadline, self._round_deadline)

    # --- phases ----------------------------------------------------------------------------

    def _begin_round(self, now: int) -> list[Output]:
        if now >= self.timing.deadline:
            return self._finish(self._timeout_outcome())
        micros = max(now, self.ballot.micros + 1)
        if self._highest_seen is not None:
            micros = max(micros, self._highest_seen.micros + 1)
        self.ballot = Ballot(micros, self.node, self.seq)
        self._phase = _Phase.PREPARE
        self._own_value = False
        self._promises, self._refused = {}, set()
        self._round_deadline = now + self.timing.round_timeout
        return [Send(r, Prepare(self.key, self.ballot)) for r in self.replicas]

    def _on_promise(self, src: int, promise: Promise, now: int) -> list[Output]:
        if not promise.ok:
            self._refused.add(src)
            self._see(promise.promised)
            return self._contended(now) if self._no_quorum_left(self._refused) else []
        self._promises[src] = promise
        if len(self._promises) < self.quorum:
            return []
        promises = list(self._promises.values())
        latest = _newest([p.committed for p in promises])
        in_progress = _newest([p.accepted for p in promises])
        # In progress means newer than the latest commit and not a re-proposal of the very value
        # committed last (a competing proposer's repair, accepted but not yet committed): that
        # one changes nothing when applied again, and repairing it anyway let two proposers
        # repair each other's re-proposals of one value forever (seen: counters, 3 coordinators).
        if (
            in_progress is not None
            and latest is not None
            and (in_progress.ballot <= latest.ballot or in_progress.value == latest.value)
        ):
            in_progress = None
        if self._maybe_ours:
            found = self._find_ours(promises, latest, in_progress, now)
            if found is not None:
                return found
        if in_progress is not None:
            return self._propose(Proposal(self.ballot, in_progress.value), own=False, now=now)
        if latest is not None:
            behind = {
                r
                for r, p in self._promises.items()
                if p.committed is None or p.committed.ballot < latest.ballot
            }
            if behind:
                return self._commit(latest, waiting=behind, needed=len(behind), then_done=False, now=now)
        self._phase = _Phase.AWAIT_VALUE
        return [NeedValue(self.ballot, tuple(p.read for p in promises))]

    def _find_ours(
        self, promises: list[Promise], latest: Proposal | None, in_progress: Proposal | None, now: int
    ) -> list[Output] | None:
        """Settle the fate of our earlier proposals; None: none was chosen, carry on as usual.

        A chosen value of ours is either still the newest in-progress proposal of any quorum (we
        finish it) or was committed, and then every promiser of the proposer that first moved on
        from it held that commit: our quorum meets that quorum, so it is in someone's history —
        unless more than `HISTORY` commits since pushed it out, which we detect and call UNKNOWN.
        Proposals of ours older than the latest commit can never be chosen any more.
        """
        values = {p.value for p in self._maybe_ours}
        if in_progress is not None and in_progress.value in values:
            return self._propose(Proposal(self.ballot, in_progress.value), own=True, now=now)
        digests = {digest(v) for v in values}
        if (latest is not None and latest.value in values) or any(
            d in digests for p in promises for _, d in p.history
        ):
            return self._finish(Outcome.APPLIED)
        oldest = min(p.ballot for p in self._maybe_ours)
        if not all(len(p.history) < HISTORY or p.history[0][0] <= oldest for p in promises):
            return self._finish(Outcome.UNKNOWN)
        if latest is not None:
            self._maybe_ours = [p for p in self._maybe_ours if p.ballot > latest.ballot]
        return None

    def _propose(self, proposal: Proposal, own: bool, now: int) -> list[Output]:
        self._phase = _Phase.ACCEPT
        self._proposal, self._own_value = proposal, own
        self._accepted, self._rejected = set(), set()
        self._round_deadline = now + self.timing.round_timeout
        return [Send(r, Accept(self.key, proposal)) for r in self.replicas]

    def _on_accepted(self, src: int, reply: Accepted, now: int) -> list[Output]:
        if reply.ok:
            self._accepted.add(src)
        else:
            self._rejected.add(src)
            self._see(reply.promised)
        return self._after_accept_reply(now)

    def _after_accept_reply(self, now: int) -> list[Output]:
        assert self._proposal is not None
        if len(self._accepted) >= self.quorum:
            waiting = set(self.replicas)
            return self._commit(self._proposal, waiting, self.quorum, then_done=self._own_value, now=now)
        if not self._no_quorum_left(self._rejected):
            return []
        if self._own_value and len(self._rejected) < len(self.replicas):
            self._maybe_ours.append(self._proposal)
        return self._contended(now)

    def _commit(
        self, proposal: Proposal, waiting: set[int], needed: int, then_done: bool, now: int
    ) -> list[Output]:
        self._phase = _Phase.COMMIT
        self._proposal = proposal
        self._commit_waiting, self._commit_needed = set(waiting), needed
        self._commit_acked = set()
        self._commit_then_done = then_done
        self._round_deadline = now + self.timing.round_timeout
        return [Send(r, Commit(self.key, proposal)) for r in sorted(waiting)]

    def _on_committed(self, src: int, now: int) -> list[Output]:
        if src not in self._commit_waiting:
            return []
        self._commit_waiting.discard(src)
        self._commit_acked.add(src)
        self._commit_needed -= 1
        if self._commit_needed > 0:
            return []
        if self._commit_then_done:
            if self._commit_enough is not None and not self._commit_enough(frozenset(self._commit_acked)):
                return []  # chosen, but the client's level wants more acks: wait (resent on tick)
            return self._finish(Outcome.APPLIED)
        return self._begin_round(now)

    def _contended(self, now: int) -> list[Output]:
        self._contentions += 1
        t = self.timing
        limit = min(t.backoff_max, t.backoff_base << min(self._contentions, 20))
        self._wake_at = now + self._rng.randint(0, limit)
        if self._wake_at >= t.deadline:
            return self._finish(self._timeout_outcome())
        self._phase = _Phase.BACKOFF
        return []

    def _finish(self, outcome: Outcome) -> list[Output]:
        self._phase = _Phase.DONE
        self.outcome = outcome
        return [Done(outcome, self._contentions)]

    # --- helpers ---------------------------------------------------------------------------

    def _timeout_outcome(self) -> Outcome:
        maybe_chosen = bool(self._maybe_ours) or (
            self._own_value and self._phase in (_Phase.COMMIT, _Phase.ACCEPT)
        )
        return Outcome.UNKNOWN if maybe_chosen else Outcome.TIMEOUT

    def _no_quorum_left(self, refusing: set[int]) -> bool:
        return len(refusing) > len(self.replicas) - self.quorum

    def _see(self, ballot: Ballot | None) -> None:
        if ballot is not None and (self._highest_seen is None or ballot > self._highest_seen):
            self._highest_seen = ballot


def _newest(proposals: list[Proposal | None]) -> Proposal | None:
    present = [p for p in proposals if p is not None]
    return max(present, key=lambda p: p.ballot) if present else None
