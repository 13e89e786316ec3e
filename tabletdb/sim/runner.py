"""Run one seeded simulation end to end and judge it: `run_seed` and `run_seeds`.

A run has three phases: (1) the client workload runs while the nemesis injects faults;
(2) every fault is healed and a probe write must commit within `liveness_ticks` ticks
(liveness); (3) the cluster quiesces, then logs are compared (log matching, all live members
agree) and every object's history is checked for linearizability. Safety invariants are checked
continuously throughout. Everything derives from the seed, and a failure prints the command
that replays it.
"""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass, field

from tabletdb.raft.errors import RaftError
from tabletdb.raft.types import Config
from tabletdb.sim.cluster import Cluster
from tabletdb.sim.linearizability import AppendLogModel, Model, RegisterModel, SetModel, check_history
from tabletdb.sim.nemesis import FAULT_KINDS, Nemesis, validate_fault_kinds
from tabletdb.sim.statemachine import encode_command
from tabletdb.sim.workload import Workload

MODELS: dict[str, Model] = {"register": RegisterModel(), "set": SetModel(), "log": AppendLogModel()}
PROBE_CLIENT = -1


@dataclass
class SeedResult:
    seed: int
    nodes: int
    ops: int
    completed: int = 0
    indeterminate: int = 0
    violations: list[str] = field(default_factory=list)
    virtual_ms: int = 0
    events: int = 0
    wall_seconds: float = 0.0
    faults: dict[str, int] = field(default_factory=dict)
    planted_bug: bool = False
    fault_kinds: tuple[str, ...] = FAULT_KINDS

    @property
    def ok(self) -> bool:
        return not self.violations

    def replay_command(self) -> str:
        bug = " --planted-bug" if self.planted_bug else ""
        faults = "" if self.fault_kinds == FAULT_KINDS else f" --faults '{','.join(self.fault_kinds)}'"
        where = f"--start {self.seed} --seeds 1 --nodes {self.nodes} --ops {self.ops}"
        return f"tabletdb sim raft {where}{bug}{faults}"

    def describe(self) -> str:
        head = (
            f"seed {self.seed}: {'ok' if self.ok else 'FAILED'}; {self.completed} ops completed, "
            f"{self.indeterminate} indeterminate, {self.virtual_ms} virtual ms, {self.events} events"
        )
        lines = [head, *(f"  violation: {v}" for v in self.violations)]
        if not self.ok:
            lines.append(f"  replay: {self.replay_command()}")
        return "\n".join(lines)


def _raft_config(rng: random.Random, seed: int) -> Config:
    """Flow-control limits vary by seed: tiny batches expose commit-by-count bugs (figure 8)."""
    return Config(
        id=0,
        election_tick=10,
        heartbeat_tick=1,
        max_entries_per_append=rng.choice([1, 2, 4, 64]),
        max_inflight_appends=rng.choice([1, 2, 8]),
        seed=seed,
    )


def run_seed(
    seed: int,
    nodes: int = 3,
    ops: int = 100,
    planted_bug: bool = False,
    faults: tuple[str, ...] = FAULT_KINDS,
    clients: int = 4,
    liveness_ticks: int = 200,
    check_commit_rule: bool = True,
) -> SeedResult:
    """Simulate one seed; never raises for a finding: violations (and crashes) land in the result."""
    validate_fault_kinds(faults)
    started = time.perf_counter()
    result = SeedResult(seed=seed, nodes=nodes, ops=ops, planted_bug=planted_bug, fault_kinds=faults)
    rng = random.Random(seed)
    cluster = Cluster(rng, nodes, _raft_config(rng, seed), planted_bug, nodes >= 4, check_commit_rule)
    try:
        _simulate(cluster, rng, result, ops, clients, faults, liveness_ticks)
    except Exception:
        result.violations.append("simulation raised:\n" + traceback.format_exc(limit=8))
    result.violations[:0] = cluster.checker.violations
    if cluster.workload is not None:
        result.completed = cluster.workload.completed
        result.indeterminate = cluster.workload.indeterminate
    result.virtual_ms = cluster.loop.now
    result.events = cluster.loop.processed
    result.wall_seconds = time.perf_counter() - started
    return result


def _simulate(
    cluster: Cluster,
    rng: random.Random,
    result: SeedResult,
    ops: int,
    clients: int,
    faults: tuple[str, ...],
    liveness_ticks: int,
) -> None:
    workload = Workload(cluster, rng, ops, clients, timeout=400)
    cluster.workload = workload
    nemesis = Nemesis(cluster, rng, faults)
    nemesis.start()
    workload.start()
    cluster.loop.run_until(ops * 100 + 5_000, stop=lambda: workload.done or bool(cluster.checker.violations))
    # Availability under an unrelenting nemesis is not promised; what remains is issued no more.
    nemesis.stop()
    workload.remaining = 0
    result.faults = dict(nemesis.injected)
    if cluster.checker.violations:
        return
    cluster.heal()
    healed_at = cluster.loop.now
    bound = healed_at + liveness_ticks * 10
    if not _probe_commits(cluster, bound):
        result.violations.append(
            f"liveness: no write committed within {liveness_ticks} ticks after healing at {healed_at} ms"
        )
        return
    cluster.loop.run_until(cluster.loop.now + 1_000, stop=lambda: workload.done)
    _quiesce(cluster, cluster.loop.now + 10_000)
    _final_checks(cluster, workload, result)


def _probe_commits(cluster: Cluster, deadline: int) -> bool:
    """Keep proposing a probe write through the current leader until the leader applies one."""
    seq = 0
    finished = False

    def attempt() -> None:
        nonlocal seq
        if finished:
            return
        leader = cluster.leader()
        if leader is not None and leader.raft is not None:
            seq += 1
            try:
                leader.raft.propose(encode_command(PROBE_CLIENT, seq, "write", "probe", seq))
                leader.process()
            except RaftError:
                pass
        cluster.loop.after(50, attempt)

    def done() -> bool:
        leader = cluster.leader()
        return leader is not None and any(
            (PROBE_CLIENT, s) in leader.sm.applied_ops for s in range(1, seq + 1)
        )

    attempt()
    cluster.loop.run_until(deadline, stop=done)
    finished = True
    return done()


def _quiesce(cluster: Cluster, deadline: int) -> None:
    """Let replication finish: every live member's applied index reaches the leader's commit."""

    def settled() -> bool:
        leader = cluster.leader()
        if leader is None or leader.raft is None:
            return False
        conf = leader.raft.conf_state
        members = conf.voters | conf.learners
        target = leader.raft.commit_index
        return all(
            n.raft is not None and n.raft.applied >= target for n in cluster.alive() if n.id in members
        )

    cluster.loop.run_until(deadline, stop=settled)


def _final_checks(cluster: Cluster, workload: Workload, result: SeedResult) -> None:
    cluster.checker.check_log_matching((n.id, n.raft) for n in cluster.alive() if n.raft is not None)
    leader = cluster.leader()
    if leader is not None and leader.raft is not None:
        conf = leader.raft.conf_state
        for node in cluster.alive():
            if node.id in conf.voters | conf.learners and node.sm.snapshot() != leader.sm.snapshot():
                result.violations.append(
                    f"convergence: node {node.id}'s state machine differs from leader {leader.id}'s "
                    "after quiescing"
                )
    for name, history in workload.history.items():
        verdict = check_history(MODELS[name], history, max_steps=500_000)
        if verdict.ok is False:
            result.violations.append(f"linearizability ({name}): {verdict.describe()}")


def run_seeds(start: int, count: int, **kwargs: object) -> list[SeedResult]:
    return [run_seed(seed, **kwargs) for seed in range(start, start + count)]  # type: ignore[arg-type]
