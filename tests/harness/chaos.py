"""Chaos tests' pure parts: a seeded fault schedule, the record of what clients saw, the verdicts.

No I/O here, so the schedule replays from its seed and the verdicts can be unit-tested; the
shell that applies faults to real processes is `tests.harness.nemesis`.

What the verdicts demand of a cluster once its faults have healed:
- every acknowledged write is read back, and nothing is read that was never attempted;
- the compare-and-set counter counts every acknowledged CAS, plus at most the CAS rounds whose
  outcome the client never learned (a timeout may still have been applied), and nothing else;
- every acknowledged CREATE TABLE exists on every node.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum


class FaultKind(Enum):
    PAUSE = "pause"
    """SIGSTOP one node, SIGCONT it later: a GC-pause-like freeze with its sockets open."""
    PAUSE_LEADER = "pause-leader"
    """PAUSE aimed at whichever node leads group0 when the fault starts."""
    ISOLATE = "isolate"
    """Cut one node off from all its peers (both directions); clients still reach every node."""
    SPLIT = "split"
    """Cut one pair of nodes off from each other only; each still reaches the third."""
    ONE_WAY = "one-way"
    """Drop what one node sends to another, not the reverse: an asymmetric partition."""


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    target: int
    """Index of the node the fault is aimed at (ignored by PAUSE_LEADER, which asks the cluster)."""
    other: int
    """SPLIT and ONE_WAY: the node `target` is cut from; unused by the other kinds."""
    seconds: float
    """How long the fault holds before it is healed."""
    rest: float
    """How long the cluster runs fault-free after the heal, before the next fault."""

    def describe(self) -> str:
        if self.kind in (FaultKind.SPLIT, FaultKind.ONE_WAY):
            arrow = "<->" if self.kind is FaultKind.SPLIT else "->"
            return f"{self.kind.value} node{self.target}{arrow}node{self.other} for {self.seconds:.1f}s"
        target = "leader" if self.kind is FaultKind.PAUSE_LEADER else f"node{self.target}"
        return f"{self.kind.value} {target} for {self.seconds:.1f}s"


def plan_faults(seed: int, rounds: int, nodes: int, hold: tuple[float, float] = (1.0, 4.0)) -> list[Fault]:
    """A replayable schedule: every kind appears in the first rounds (one each), then seeded draws."""
    if nodes < 3:
        raise ValueError(f"a chaos schedule needs at least 3 nodes to keep a majority, got {nodes}")
    rng = random.Random(seed)
    kinds = list(FaultKind)
    rng.shuffle(kinds)
    plan: list[Fault] = []
    for i in range(rounds):
        kind = kinds[i] if i < len(kinds) else rng.choice(list(FaultKind))
        target = rng.randrange(nodes)
        other = (target + 1 + rng.randrange(nodes - 1)) % nodes
        plan.append(Fault(kind, target, other, rng.uniform(*hold), rng.uniform(0.5, 2.0)))
    return plan


@dataclass
class History:
    """What the clients were told, recorded from several worker threads."""

    attempted_keys: set[int] = field(default_factory=set)
    acked_keys: set[int] = field(default_factory=set)
    cas_acked: int = 0
    cas_uncertain: int = 0
    """CAS rounds that ended without an answer (timeout, lost connection): applied or not."""
    cas_refused: int = 0
    """CAS rounds answered "not applied" (another round got there first)."""
    attempted_tables: set[str] = field(default_factory=set)
    acked_tables: set[str] = field(default_factory=set)
    errors: dict[str, int] = field(default_factory=dict)
    """Failed requests by exception class name, for the report."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            name = type(exc).__name__
            self.errors[name] = self.errors.get(name, 0) + 1

    def write(self, key: int, acked: bool) -> None:
        with self._lock:
            self.attempted_keys.add(key)
            if acked:
                self.acked_keys.add(key)

    def cas(self, applied: bool | None) -> None:
        """`applied` is the server's answer, or None when the client never got one."""
        with self._lock:
            if applied is None:
                self.cas_uncertain += 1
            elif applied:
                self.cas_acked += 1
            else:
                self.cas_refused += 1

    def table(self, name: str, acked: bool) -> None:
        with self._lock:
            self.attempted_tables.add(name)
            if acked:
                self.acked_tables.add(name)

    def summary(self) -> str:
        return (
            f"writes acked {len(self.acked_keys)}/{len(self.attempted_keys)}, "
            f"CAS acked {self.cas_acked} uncertain {self.cas_uncertain} refused {self.cas_refused}, "
            f"tables acked {len(self.acked_tables)}/{len(self.attempted_tables)}, errors {self.errors}"
        )


def missing_writes(history: History, read: Iterable[int]) -> list[str]:
    """Problems with one full read of the written keys: lost acknowledged keys, invented keys."""
    seen = set(read)
    problems = []
    lost = history.acked_keys - seen
    if lost:
        problems.append(f"{len(lost)} acknowledged keys missing, e.g. {sorted(lost)[:10]}")
    invented = seen - history.attempted_keys
    if invented:
        problems.append(f"{len(invented)} keys never written were read, e.g. {sorted(invented)[:10]}")
    return problems


def cas_problem(history: History, counter: int) -> str | None:
    """Each applied CAS adds exactly one, so the counter counts applied rounds."""
    low, high = history.cas_acked, history.cas_acked + history.cas_uncertain
    if low <= counter <= high:
        return None
    return f"CAS counter is {counter}; acknowledged {low}, at most {high} counting unanswered rounds"


def missing_tables(history: History, node: str, tables: Iterable[str]) -> list[str]:
    seen = set(tables)
    problems = []
    lost = history.acked_tables - seen
    if lost:
        problems.append(f"{node}: acknowledged tables missing: {sorted(lost)}")
    invented = {t for t in seen - history.attempted_tables if t.startswith("ddl_")}
    if invented:
        problems.append(f"{node}: tables never created exist: {sorted(invented)}")
    return problems
