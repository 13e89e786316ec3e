"""Consistency levels as pure counting: how many answers from which replicas make a request succeed.

No I/O here: the coordinator feeds a ``ResponseTracker`` the acknowledgements and failures it
sees and asks whether the level is met or can no longer be met. The same counting decides
Unavailable before anything is sent (feed it the replicas the failure detector says are up) and
which replicas a read contacts (the fewest live ones that can meet the level, local first).

Requirements are per scope: ``None`` counts replicas in any datacenter, a DC name counts only
that DC's replicas. QUORUM is a majority of the token's replica set; LOCAL_* count the
coordinator's DC; EACH_QUORUM needs a majority in every DC that holds replicas. ANY is ONE:
there are no hints, so a write needs a real replica (documented in docs/architecture.md).
SERIAL/LOCAL_SERIAL as a read level mean QUORUM/LOCAL_QUORUM here; Paxos owns their real meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tabletdb.coordinator.placement import Replica, ReplicaSet, ShortReplicaSet, expected_per_dc
from tabletdb.cql.consistency import (
    ALL,
    ANY,
    EACH_QUORUM,
    LOCAL_ONE,
    LOCAL_QUORUM,
    LOCAL_SERIAL,
    ONE,
    QUORUM,
    SERIAL,
    THREE,
    TWO,
)
from tabletdb.cql.consistency import CONSISTENCY_NAMES as NAMES
from tabletdb.cql.errors import InvalidRequest, Unavailable

# The level codes and names (tabletdb.cql.consistency), re-exported so the coordinator modules read them here.
__all__ = ["ALL", "ANY", "EACH_QUORUM", "LOCAL_ONE", "LOCAL_QUORUM", "LOCAL_SERIAL", "NAMES", "ONE", "QUORUM"]
__all__ += ["SERIAL", "THREE", "TWO", "Requirement", "ResponseTracker", "check_available", "read_targets"]
__all__ += ["tracker_for", "SetsTracker", "check_available_sets", "requirement"]

Requirement = tuple[tuple[str | None, int], ...]
"""(scope, count) pairs: scope None = any DC, else only replicas in that DC count."""


def _quorum(n: int) -> int:
    return n // 2 + 1


def requirement(cl: int, replicas: ReplicaSet, local_dc: str, *, write: bool) -> Requirement:
    """What ``cl`` needs from ``replicas``. May exceed what exists (then it is unavailable)."""
    if cl in (SERIAL, LOCAL_SERIAL):
        if write:
            raise InvalidRequest("You must use conditional updates for serializable writes")
        cl = QUORUM if cl == SERIAL else LOCAL_QUORUM
    if cl == ANY and not write:
        raise InvalidRequest("ANY ConsistencyLevel is only supported for writes")
    if cl in (ANY, ONE):
        return ((None, 1),)
    if cl == TWO:
        return ((None, 2),)
    if cl == THREE:
        return ((None, 3),)
    short = isinstance(replicas, ShortReplicaSet)  # the keyspace's RF counts, not the replicas
    if cl == QUORUM:
        return ((None, _quorum(sum(expected_per_dc(replicas).values()) if short else len(replicas))),)
    if cl == ALL:
        return ((None, sum(expected_per_dc(replicas).values()) if short else len(replicas)),)
    if cl == LOCAL_ONE:
        return ((local_dc, 1),)
    if cl == LOCAL_QUORUM:
        return ((local_dc, _quorum(expected_per_dc(replicas).get(local_dc, 0))),)
    if cl == EACH_QUORUM:
        per_dc = expected_per_dc(replicas)
        return tuple((dc, _quorum(n)) for dc, n in sorted(per_dc.items()) if n)
    raise InvalidRequest(f"Unknown consistency level 0x{cl:04x}")


class ResponseTracker:
    """Counts replica answers against a consistency level; fed by the coordinator, no I/O.

    Counts are kept per requirement scope as integers, so feeding an answer and asking whether
    the level is met cost a few additions whatever the replica count.
    """

    def __init__(self, cl: int, replicas: ReplicaSet, local_dc: str, *, write: bool) -> None:
        self.cl = cl
        self.replicas = replicas
        self.need = requirement(cl, replicas, local_dc, write=write)
        self._members = set(replicas)
        self._answered: set[Replica] = set()
        self._acked = [0] * len(self.need)
        self._hopeful = [sum(1 for r in replicas if scope is None or r.dc == scope) for scope, _ in self.need]

    @property
    def block_for(self) -> int:
        return sum(n for _, n in self.need)

    @property
    def received(self) -> int:
        """Answers that count toward the level (capped per scope), for timeout errors."""
        return sum(min(n, got) for (_, n), got in zip(self.need, self._acked))

    @property
    def satisfied(self) -> bool:
        return all(got >= n for (_, n), got in zip(self.need, self._acked))

    @property
    def impossible(self) -> bool:
        """True once the replicas not yet failed cannot meet the level any more."""
        return any(left < n for (_, n), left in zip(self.need, self._hopeful))

    def ack(self, replica: Replica) -> bool:
        """Record a success; True if the level is now met."""
        if replica in self._members and replica not in self._answered:
            self._answered.add(replica)
            for i, (scope, _) in enumerate(self.need):
                if scope is None or replica.dc == scope:
                    self._acked[i] += 1
        return self.satisfied

    def fail(self, replica: Replica) -> bool:
        """Record a failure; True if the level can no longer be met."""
        if replica in self._members and replica not in self._answered:
            self._answered.add(replica)
            for i, (scope, _) in enumerate(self.need):
                if scope is None or replica.dc == scope:
                    self._hopeful[i] -= 1
        return self.impossible

    def counts(self, replica: Replica) -> bool:
        """Whether an answer from ``replica`` would move some unmet requirement forward."""
        return any(
            (scope is None or replica.dc == scope) and got < n
            for (scope, n), got in zip(self.need, self._acked)
        )


class SetsTracker(ResponseTracker):
    """One level counted on each of several replica sets (a tablet whose writes go to its old and
    new replicas): met when it is met on every set, impossible once it is on any set. Replicas
    in both sets count in both."""

    def __init__(self, cl: int, sets: Sequence[ReplicaSet], local_dc: str, *, write: bool) -> None:
        union = tuple(dict.fromkeys(r for replicas in sets for r in replicas))
        super().__init__(cl, union, local_dc, write=write)
        self.trackers = [ResponseTracker(cl, replicas, local_dc, write=write) for replicas in sets]

    @property
    def block_for(self) -> int:
        return sum(t.block_for for t in self.trackers)

    @property
    def received(self) -> int:
        return sum(t.received for t in self.trackers)

    @property
    def satisfied(self) -> bool:
        return all(t.satisfied for t in self.trackers)

    @property
    def impossible(self) -> bool:
        return any(t.impossible for t in self.trackers)

    def ack(self, replica: Replica) -> bool:
        for t in self.trackers:
            t.ack(replica)
        return self.satisfied

    def fail(self, replica: Replica) -> bool:
        for t in self.trackers:
            t.fail(replica)
        return self.impossible

    def counts(self, replica: Replica) -> bool:
        return any(t.counts(replica) for t in self.trackers)


def tracker_for(cl: int, sets: Sequence[ReplicaSet], local_dc: str, *, write: bool) -> ResponseTracker:
    """The tracker of a request over ``sets`` (usually one set: a plain ``ResponseTracker``)."""
    if len(sets) == 1:
        return ResponseTracker(cl, sets[0], local_dc, write=write)
    return SetsTracker(cl, sets, local_dc, write=write)


def check_available_sets(
    cl: int, sets: Sequence[ReplicaSet], local_dc: str, is_up: Callable[[Replica], bool], *, write: bool
) -> list[Replica]:
    """The live replicas of every set (each once); raises Unavailable if any set cannot meet ``cl``."""
    if len(sets) == 1:
        return check_available(cl, sets[0], local_dc, is_up, write=write)
    alive: dict[Replica, None] = {}
    for replicas in sets:
        alive.update(dict.fromkeys(check_available(cl, replicas, local_dc, is_up, write=write)))
    return list(alive)


def check_available(
    cl: int, replicas: ReplicaSet, local_dc: str, is_up: Callable[[Replica], bool], *, write: bool
) -> list[Replica]:
    """The live replicas; raises Unavailable (required, alive) if they cannot meet ``cl``."""
    alive = [r for r in replicas if is_up(r)]
    tracker = ResponseTracker(cl, replicas, local_dc, write=write)
    for r in alive:
        tracker.ack(r)
    if not tracker.satisfied:
        raise Unavailable(
            f"Cannot achieve consistency level {NAMES.get(cl, cl)}: "
            f"{tracker.received} of {tracker.block_for} required replicas are alive "
            f"(replicas {len(replicas)}, alive {len(alive)})",
            cl,
            tracker.block_for,
            tracker.received,
        )
    return alive


def read_targets(
    cl: int, replicas: ReplicaSet, local_dc: str, alive: Sequence[Replica], prefer: Callable[[Replica], int]
) -> list[Replica]:
    """The fewest live replicas that meet ``cl``, most preferred first (lowest ``prefer``)."""
    tracker = ResponseTracker(cl, replicas, local_dc, write=False)
    chosen: list[Replica] = []
    for r in sorted(alive, key=prefer):
        if tracker.satisfied:
            break
        if tracker.counts(r):
            chosen.append(r)
            tracker.ack(r)
    return chosen
