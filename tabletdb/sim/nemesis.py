"""The nemesis: a seeded stream of faults injected while the client workload runs.

Every `interval` of virtual time it draws one fault from the enabled kinds; faults with a
duration schedule their own repair. The schedule is a pure function of the seed (all draws come
from the run's generator), so a failing seed replays exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial

from tabletdb.raft.types import Role
from tabletdb.sim.cluster import Cluster
from tabletdb.sim.network import LinkQuality
from tabletdb.sim.node import SimNode

FAULT_KINDS = (
    "partition",
    "one_way",
    "isolate_leader",
    "crash",
    "crash_mid_write",
    "crash_leader",
    "crash_new_leader",
    "lossy",
    "drift",
    "reconfigure",
    "transfer",
    "snapshot",
)


def validate_fault_kinds(kinds: tuple[str, ...]) -> None:
    unknown = sorted(set(kinds) - set(FAULT_KINDS))
    if unknown:
        raise ValueError(f"unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}")


class Nemesis:
    def __init__(self, cluster: Cluster, rng: random.Random, kinds: tuple[str, ...] = FAULT_KINDS) -> None:
        validate_fault_kinds(kinds)
        self.cluster = cluster
        self.rng = rng
        self.kinds = kinds
        self.active = True
        self.injected: dict[str, int] = {}
        self._new_leader_crashes = 0
        cluster.on_new_leader = self._new_leader
        self._actions: dict[str, Callable[[], None]] = {
            "partition": self._partition,
            "one_way": self._one_way,
            "isolate_leader": self._isolate_leader,
            "crash": lambda: self._crash(mid_write=False, leader=False),
            "crash_mid_write": lambda: self._crash(mid_write=True, leader=False),
            "crash_leader": lambda: self._crash(mid_write=self.rng.random() < 0.5, leader=True),
            "crash_new_leader": self._arm_new_leader_crash,
            "lossy": self._lossy,
            "drift": self._drift,
            "reconfigure": cluster.reconfigure,
            "transfer": cluster.transfer_leadership,
            "snapshot": lambda: cluster.snapshot(self.rng.choice(list(cluster.nodes.values()))),
        }

    def start(self) -> None:
        for node in self.cluster.nodes.values():
            node.snapshot_probability = (
                self.rng.choice([0.0, 0.01, 0.05]) if "snapshot" in self.kinds else 0.0
            )
        self._next()

    def stop(self) -> None:
        self.active = False

    def _next(self) -> None:
        self.cluster.loop.after(self.rng.randint(20, 150), self._strike)

    def _strike(self) -> None:
        if not self.active or not self.kinds:
            return
        kind = self.rng.choice(self.kinds)
        self.injected[kind] = self.injected.get(kind, 0) + 1
        self._actions[kind]()
        self._next()

    def _later(self, callback: Callable[[], None]) -> None:
        """Repair a fault after a while (the final heal repairs whatever is still broken)."""

        def repair() -> None:
            if self.active:
                callback()

        self.cluster.loop.after(self.rng.randint(50, 600), repair)

    def _partition(self) -> None:
        ids = list(self.cluster.nodes)
        self.rng.shuffle(ids)
        cut = self.rng.randint(1, len(ids) - 1)
        self.cluster.network.partition([ids[:cut], ids[cut:]])
        self._later(self.cluster.network.heal)

    def _one_way(self) -> None:
        ids = list(self.cluster.nodes)
        src, dst = self.rng.sample(ids, 2)
        self.cluster.network.cut_one_way(src, dst)
        self._later(self.cluster.network.heal)

    def _isolate_leader(self) -> None:
        leader = self.cluster.leader()
        if leader is not None:
            self.cluster.network.isolate(leader.id, self.cluster.nodes)
            self._later(self.cluster.network.heal)

    def _crash(self, mid_write: bool, leader: bool) -> None:
        target = self.cluster.leader() if leader else None
        if target is None:
            down = len(self.cluster.nodes) - len(self.cluster.alive())
            if down >= (len(self.cluster.nodes) - 1) // 2:
                return  # keep a majority of processes up so the workload makes progress
            target = self.rng.choice(self.cluster.alive())
        self.cluster.crash(target, mid_write)
        self.cluster.loop.after(self.rng.randint(50, 500), partial(self.cluster.restart, target))

    def _arm_new_leader_crash(self) -> None:
        """Crash the next few leaders within milliseconds of their election: the window in
        which a new leader has re-replicated old entries but not yet its own (Raft figure 8)."""
        self._new_leader_crashes = self.rng.randint(1, 3)

    def _new_leader(self, node: SimNode) -> None:
        if not self.active or self._new_leader_crashes <= 0:
            return
        self._new_leader_crashes -= 1
        mid_write = self.rng.random() < 0.3

        def strike() -> None:
            if node.alive and node.raft is not None and node.raft.role == Role.LEADER:
                self.cluster.crash(node, mid_write)
                self.cluster.loop.after(self.rng.randint(30, 400), partial(self.cluster.restart, node))

        self.cluster.loop.after(self.rng.randint(0, 8), strike)

    def _lossy(self) -> None:
        quality = self.cluster.network.quality
        quality.loss = self.rng.choice([0.05, 0.15, 0.3])
        quality.duplicate = self.rng.choice([0.0, 0.05, 0.2])
        quality.max_delay = self.rng.choice([5, 20, 60])

        def calm() -> None:
            self.cluster.network.quality = LinkQuality()

        self._later(calm)

    def _drift(self) -> None:
        node = self.rng.choice(list(self.cluster.nodes.values()))
        node.tick_period = self.rng.choice([8, 9, 10, 11, 12, 15])
