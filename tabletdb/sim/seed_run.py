"""What the topology and resize simulations (``topo_seed``, ``resize_seed``) share: a seed's
periodic activities, its nemesis (crashes, the coordinator's too right after a command commits,
and partitions), the healing at the end, and the result's common fields.

Each simulation keeps its own world, operator, clients and checks; what is here is the same
code they each had, so both replay every seed exactly as before (the order in which the seed's
generator is drawn from is part of that: change nothing here without checking trace hashes).
"""

from __future__ import annotations

import hashlib
import random
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Generic, TypeVar

from tabletdb.sim.events import EventLoop
from tabletdb.sim.topo_coordinator import Coordinator
from tabletdb.sim.topo_world import World
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.states import NodeState

TICK = 5
"""Virtual milliseconds between the coordinator's steps (and between group0 deliveries)."""

VNODE_STEPS = {
    "vnode ranges write both, read old": "vnode_read_old",
    "fence writes routed by the old ring": "vnode_fence",
    "vnode ranges write both, read new": "vnode_read_new",
    "cleanup of vnode ranges on": "vnode_cleanup_running",
    "cleanup of vnode ranges done": "vnode_cleanup_done",
}
"""Phrases of the vnode phase's command reasons (`topology.vnode_phase`) and their labels."""


def stage_label(reason: str) -> str:
    """The step a command's reason names: `start`, a tablet stage (`streaming`, ...), a vnode
    step (`VNODE_STEPS`), `done`, `finish`, `roll back`, `rolled back`, `refuse`."""
    if reason.startswith("advance "):
        return reason.rsplit(" to ", 1)[1]
    for phrase, label in VNODE_STEPS.items():
        if phrase in reason:
            return label
    for label in ("rolled back", "roll back", "start", "finish", "refuse"):
        if reason.startswith(label):
            return label
    return reason.split(" ", 1)[0]


@dataclass
class SeedOutcome:
    """The fields every simulated seed's result has (set by ``simulate``)."""

    seed: int
    _: KW_ONLY
    violations: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    writes_acked: int = 0
    coordinator_crashes: int = 0
    crashed_after: set[str] = field(default_factory=set)
    """Which steps (`stage_label`) the coordinator crashed right after."""
    virtual_ms: int = 0
    wall_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def trace_hash(self) -> str:
        return hashlib.sha256("\n".join(self.trace).encode()).hexdigest()[:16]

    def replay_command(self) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        """One line for the seed (``_describe`` adds its violations and replay)."""
        raise NotImplementedError

    def _describe(self, head: str) -> str:
        """``head``, the first violations, and how to replay a failing seed."""
        lines = [head, *(f"  violation: {v}" for v in self.violations[:5])]
        if not self.ok:
            lines.append(f"  replay: {self.replay_command()}")
        return "\n".join(lines)


ResultT = TypeVar("ResultT", bound=SeedOutcome)


class SimRun(Generic[ResultT]):
    """One seed's run: subclasses set ``rng``, ``loop``, ``world`` and ``coordinator``, add
    their clients and operator, and ``run`` the seed into its result (``ResultT``); ``NEMESIS_KINDS``
    and ``COORDINATOR_CRASH_CHANCE`` are theirs (drawn from the seed's generator, so they are
    part of what a seed replays)."""

    NEMESIS_KINDS: Sequence[str] = ("crash_coordinator", "crash", "partition", "none")
    COORDINATOR_CRASH_CHANCE = 0.15
    """Chance that the coordinator crashes right after each command of its commits."""

    rng: random.Random
    loop: EventLoop
    world: World
    coordinator: Coordinator

    def __init__(self) -> None:
        self.faults = True
        self.coordinator_crashes = 0
        self.crashed_after: set[str] = set()

    def run(self, result: ResultT) -> None:
        raise NotImplementedError

    def every(self, period: int, action: Callable[[], None]) -> None:
        def run() -> None:
            action()
            self.loop.after(period, run)

        self.loop.after(period, run)

    def deliver(self) -> None:
        w = self.world
        for host in sorted(w.hosts):
            if self.rng.random() < 0.5:
                w.catch_up(host, full=False)
        for h in w.hosts.values():  # a node that left (or whose join was rolled back) shuts down
            if not h.gone and w.committed.topology.state_of(h.host_id) is NodeState.LEFT:
                h.gone, h.up = True, False
                w.log(f"{h.name} left and stops")

    # --- the nemesis ----------------------------------------------------------------------------

    def _crash(self, host: uuid.UUID, why: str) -> None:
        h = self.world.hosts[host]
        if not h.up or h.gone:
            return
        h.up, h.serving, h.down_since = False, False, self.loop.now
        self.world.log(f"crash {h.name} ({why})")
        self.loop.after(self.rng.randint(20, 300), lambda: self._restart(host))

    def _restart(self, host: uuid.UUID) -> None:
        h = self.world.hosts[host]
        if h.gone or h.up:
            return
        h.up, h.down_since = True, None  # serving again only once it caught up with group0
        self.world.log(f"restart {h.name}")

    def _maybe_crash_coordinator(self, command: TopologyCommand) -> None:
        """``after_commit`` of the coordinator: crashes it now and then, so at every step."""
        if (
            self.faults
            and self.coordinator.leader is not None
            and self.rng.random() < self.COORDINATOR_CRASH_CHANCE
        ):
            self.coordinator_crashes += 1
            self.crashed_after.add(stage_label(command.reason))
            self._crash(self.coordinator.leader, "coordinator, right after its command committed")

    def nemesis(self) -> None:
        if not self.faults:
            return
        w = self.world
        live = [h for h in sorted(w.hosts) if w.hosts[h].up and not w.hosts[h].gone]
        kind = self.rng.choice(self.NEMESIS_KINDS)
        if kind == "crash_coordinator" and self.coordinator.leader is not None:
            self.coordinator_crashes += 1
            self._crash(self.coordinator.leader, "coordinator")
        elif kind == "crash" and live:
            self._crash(self.rng.choice(live), "nemesis")
        elif kind == "partition" and len(live) >= 3 and not any(w.side.values()):
            cut = self.rng.sample(live, self.rng.randint(1, (len(live) - 1) // 2))
            for h in cut:
                w.side[h] = 1
            w.log(f"partition {sorted(w.name(h) for h in cut)} away")
            self.loop.after(self.rng.randint(30, 300), self.heal_partition)
        else:
            self.other_fault(kind)

    def other_fault(self, kind: str) -> None:
        """A nemesis kind of the subclass's own (``NEMESIS_KINDS`` beyond the shared ones)."""

    def heal_partition(self) -> None:
        if any(self.world.side.values()):
            self.world.log("partition healed")
        for h in self.world.side:
            self.world.side[h] = 0

    def heal_all(self) -> None:
        """The end of the faults: ``heal_more`` (the subclass's), the partition, every node up."""
        self.faults = False
        self.heal_more()
        self.heal_partition()
        for h in sorted(self.world.hosts):
            self._restart(h)

    def heal_more(self) -> None:
        """The subclass's own faults to lift at the end (before the partition heals)."""

    def stopped(self) -> bool:
        """A run stops at its first violation."""
        return bool(self.world.violations)


RunT = TypeVar("RunT", bound=SimRun[Any])


def simulate(make: Callable[[], RunT], result: SeedOutcome) -> RunT:
    """Build a seed's run, run it into ``result`` and fill in the result's shared fields; a
    crash of the simulation itself is a violation of the seed (with its traceback), not an
    exception. Returns the run, for the fields of the subclass's own."""
    started = time.perf_counter()
    made = make()
    try:
        made.run(result)
    except Exception:
        made.world.violations.append("simulation raised:\n" + traceback.format_exc(limit=8))
    result.violations = made.world.violations
    result.trace = made.world.trace
    result.writes_acked = made.world.writes_acked
    result.coordinator_crashes = made.coordinator_crashes
    result.crashed_after = made.crashed_after
    result.virtual_ms = made.loop.now
    result.wall_seconds = time.perf_counter() - started
    return made
