"""`run_topology_seed`: the topology coordinator's step function and tablet migrations under faults.

One seed: four normal nodes and one RF=3 tablets table; an operator queues random requests (join,
decommission, removenode of a killed node, replace of a killed node, and now and then a removenode
of a live node, which must be refused) while clients write at QUORUM, and a nemesis crashes the
coordinator (also right after one of its commands commits, so at every stage), crashes other nodes
and partitions the network. Then every fault heals, and every admitted request must end (done or
rolled back) in bounded time. Checked throughout: every acknowledged write is on a quorum of the
replicas any serving node reads it from, and no two coordinators acted on one state id.
Everything derives from the seed: a seed replays the same trace.
"""

from __future__ import annotations

import random
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from tabletdb.sim.events import EventLoop
from tabletdb.sim.topo_coordinator import Coordinator
from tabletdb.sim.topo_world import TABLE, World
from tabletdb.topology.balancing import plan_round
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.coordinator import CoordinatorConfig
from tabletdb.topology.requests import RequestRefused, enqueue, removing_live_node_error
from tabletdb.topology.state import Request
from tabletdb.topology.states import NodeState, RequestKind

PLANTED_BUGS = ("reads-before-streaming", "unguarded", "vnode-ranges-unstreamed")
TICK = 5


@dataclass
class TopologySeedResult:
    seed: int
    requests: int
    planted_bug: str = ""
    violations: list[str] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)
    finished: int = 0
    rolled_back: int = 0
    refused: int = 0
    writes_acked: int = 0
    coordinator_crashes: int = 0
    crashed_after: set[str] = field(default_factory=set)
    """Which steps (`stage_label`) the coordinator crashed right after."""
    virtual_ms: int = 0
    wall_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.violations

    def replay_command(self) -> str:
        bug = f" --planted-bug {self.planted_bug}" if self.planted_bug else ""
        return f"tabletdb sim topology --start {self.seed} --seeds 1 --requests {self.requests}{bug}"

    def describe(self) -> str:
        head = (
            f"seed {self.seed}: {'ok' if self.ok else 'FAILED'}; {self.finished} requests finished, "
            f"{self.rolled_back} rolled back, {self.refused} refused, {self.writes_acked} writes acked, "
            f"{self.coordinator_crashes} coordinator crashes, {self.virtual_ms} virtual ms"
        )
        lines = [head, *(f"  violation: {v}" for v in self.violations[:5])]
        if not self.ok:
            lines.append(f"  replay: {self.replay_command()}")
        return "\n".join(lines)


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


class _Run:
    def __init__(self, seed: int, requests: int, planted_bug: str) -> None:
        self.rng = random.Random(seed)
        self.loop = EventLoop()
        self.world = World(self.rng, self.loop, nodes=4, tablets=8, rf=3)
        self.world.unguarded = planted_bug == "unguarded"
        config = CoordinatorConfig(
            rollback_after_ms=self.rng.choice([150, 400, 10_000_000]),
            planted_bug=planted_bug == "reads-before-streaming",
        )
        self.coordinator = Coordinator(self.world, config)
        self.coordinator.skip_range_copy = planted_bug == "vnode-ranges-unstreamed"
        self.coordinator.after_commit = self._maybe_crash_coordinator
        # half the seeds balance between requests, by uneven sizes (not drawn from rng: the other
        # seeds replay as before)
        self.coordinator.balancing = seed % 2 == 0
        self.coordinator.sizes = {(TABLE, i): 1 + (seed // 2 + 3 * i) % 7 for i in range(8)}
        self.requests = requests
        self.admitted: list[Request] = []
        self.refused = 0
        self.faults = True
        self.coordinator_crashes = 0
        self.crashed_after: set[str] = set()
        self.next_key = 0
        self.joins = 0

    # --- periodic activities ------------------------------------------------------------------

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

    def write(self) -> None:
        w = self.world
        serving = w.coordinators()
        if serving:
            self.next_key += 1
            if self.next_key % 2:
                w.write(self.rng.choice(serving), self.next_key, drop=0.2)
            else:
                w.vnode_write(self.rng.choice(serving), self.next_key, drop=0.2)

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
        if self.faults and self.coordinator.leader is not None and self.rng.random() < 0.15:
            self.coordinator_crashes += 1
            self.crashed_after.add(stage_label(command.reason))
            self._crash(self.coordinator.leader, "coordinator, right after its command committed")

    def nemesis(self) -> None:
        if not self.faults:
            return
        w = self.world
        live = [h for h in sorted(w.hosts) if w.hosts[h].up and not w.hosts[h].gone]
        kind = self.rng.choice(["crash_coordinator", "crash", "partition", "none"])
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

    def heal_partition(self) -> None:
        if any(self.world.side.values()):
            self.world.log("partition healed")
        for h in self.world.side:
            self.world.side[h] = 0

    # --- the operator ------------------------------------------------------------------------

    def operator(self) -> None:
        w = self.world
        topo = w.committed.topology
        if len(self.admitted) >= self.requests or len(topo.queue) >= 2:
            return
        normal = [
            h for h in topo.normal_nodes() if not any(h in (r.host_id, r.replaced_id) for r in topo.queue)
        ]
        if topo.transition is not None:
            normal = [
                h
                for h in normal
                if h not in (topo.transition.request.host_id, topo.transition.request.replaced_id)
            ]
        alive = frozenset(h for h, s in w.hosts.items() if s.up)
        dead_normal = [h for h in normal if w.hosts[h].gone]
        kinds = ["join"]
        if len(topo.normal_nodes()) >= 4 and not dead_normal and topo.transition is None and not topo.queue:
            kinds += ["leave", "remove", "replace", "remove_live"]
        kind = "remove_dead" if dead_normal else self.rng.choice(kinds)
        if kind == "join":
            self.joins += 1
            host = w.new_host(f"j{self.joins}")
            w.catch_up(host, full=True)
            request = Request(w.new_id(), RequestKind.JOIN, host)
        elif kind == "remove_dead":
            request = Request(w.new_id(), RequestKind.REMOVE, dead_normal[0])
        elif kind == "remove_live":
            victim = self.rng.choice([h for h in normal if h in alive] or normal)
            self._submit(
                Request(w.new_id(), RequestKind.REMOVE, victim), alive, expect_refusal=victim in alive
            )
            return
        else:
            victim = self.rng.choice(normal)
            if kind == "leave":
                request = Request(w.new_id(), RequestKind.LEAVE, victim)
            else:
                w.hosts[victim].gone, w.hosts[victim].up = True, False
                w.hosts[victim].down_since = self.loop.now
                w.log(f"kill {w.name(victim)} for good")
                alive = alive - {victim}
                if kind == "remove":
                    request = Request(w.new_id(), RequestKind.REMOVE, victim)
                else:
                    self.joins += 1
                    new = w.new_host(f"r{self.joins}")
                    if self.rng.random() < 0.7:  # it takes the dead node's tokens over, or keeps its own
                        w.tokens[new] = w.tokens[victim]
                    w.catch_up(new, full=True)
                    request = Request(w.new_id(), RequestKind.REPLACE, new, replaced_id=victim)
        self._submit(request, alive, expect_refusal=False)

    def _submit(self, request: Request, alive: frozenset[uuid.UUID], expect_refusal: bool) -> None:
        w = self.world
        what = f"{request.kind.value} {w.name(request.host_id)}"
        try:
            command = enqueue(w.committed.topology, request, alive, w.new_id())
        except RequestRefused as e:
            self.refused += 1
            w.log(f"refused {what}: {e}")
            if expect_refusal and str(e) != removing_live_node_error(request.host_id):
                w.violation(f"removenode of a live node refused with the wrong error: {e}")
            return
        if expect_refusal:
            w.violation(f"removenode of live node {w.name(request.host_id)} was admitted")
        if w.apply(command, "operator"):
            self.admitted.append(request)

    # --- the run ----------------------------------------------------------------------------

    def idle(self) -> bool:
        """No transition, no request, and (balancing on) no balancer round left to start: the
        liveness check after healing thus also requires the balancer to converge."""
        committed = self.world.committed
        topo = committed.topology
        if topo.transition is not None or topo.queue:
            return False
        if not self.coordinator.balancing:
            return True
        shards = {h: 1 for h in self.world.hosts}
        return plan_round(topo, committed.tablets, shards, {}, self.coordinator.sizes, topo.state_id) is None

    def run(self, result: TopologySeedResult) -> None:
        self.every(TICK, self.coordinator.tick)
        self.every(TICK, self.deliver)
        self.every(2, self.write)
        self.every(100, self.nemesis)
        self.every(150, self.operator)

        def stop() -> bool:
            return bool(self.world.violations)

        self.loop.run_until(self.requests * 800 + 1_000, stop=stop)
        self.faults = False
        self.heal_partition()
        for h in sorted(self.world.hosts):
            self._restart(h)
        self.requests = len(self.admitted)  # the operator asks for nothing more
        healed = self.loop.now
        self.loop.run_until(healed + 30_000, stop=lambda: stop() or self.idle())
        if not self.world.violations and not self.idle():
            self.world.violation(f"liveness: requests still open 30 s after faults healed at {healed} ms")
        ended = {r.request.request_id: r for r in self.world.committed.topology.results}
        for request in self.admitted:
            if request.request_id not in ended and not self.world.violations:
                self.world.violation(
                    f"request {request.kind.value} of {self.world.name(request.host_id)} never ended"
                )
        result.finished = sum(1 for r in ended.values() if not r.error)
        result.rolled_back = sum(1 for r in ended.values() if r.error)


def run_topology_seed(seed: int, requests: int = 6, planted_bug: str = "") -> TopologySeedResult:
    """Simulate one seed; a finding (or a crash of the simulation) lands in the result."""
    if planted_bug and planted_bug not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug {planted_bug!r}; known: {', '.join(PLANTED_BUGS)}")
    started = time.perf_counter()
    result = TopologySeedResult(seed, requests, planted_bug)
    run = _Run(seed, requests, planted_bug)
    try:
        run.run(result)
    except Exception:
        run.world.violations.append("simulation raised:\n" + traceback.format_exc(limit=8))
    result.violations = run.world.violations
    result.trace = run.world.trace
    result.refused = run.refused
    result.writes_acked = run.world.writes_acked
    result.coordinator_crashes = run.coordinator_crashes
    result.crashed_after = run.crashed_after
    result.virtual_ms = run.loop.now
    result.wall_seconds = time.perf_counter() - started
    return result


def run_topology_seeds(
    start: int, count: int, requests: int = 6, planted_bug: str = ""
) -> list[TopologySeedResult]:
    return [run_topology_seed(s, requests, planted_bug) for s in range(start, start + count)]
