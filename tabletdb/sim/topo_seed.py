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
import uuid
from dataclasses import dataclass

from tabletdb.sim.events import EventLoop
from tabletdb.sim.seed_run import TICK, SeedOutcome, SimRun, simulate
from tabletdb.sim.topo_coordinator import Coordinator
from tabletdb.sim.topo_world import TABLE, World
from tabletdb.topology.balancing import plan_round
from tabletdb.topology.coordinator import CoordinatorConfig
from tabletdb.topology.requests import RequestRefused, enqueue, removing_live_node_error
from tabletdb.topology.state import Request
from tabletdb.topology.states import RequestKind

PLANTED_BUGS = ("reads-before-streaming", "unguarded", "vnode-ranges-unstreamed")


@dataclass
class TopologySeedResult(SeedOutcome):
    requests: int
    planted_bug: str = ""
    finished: int = 0
    rolled_back: int = 0
    refused: int = 0

    def replay_command(self) -> str:
        bug = f" --planted-bug {self.planted_bug}" if self.planted_bug else ""
        return f"tabletdb sim topology --start {self.seed} --seeds 1 --requests {self.requests}{bug}"

    def describe(self) -> str:
        return self._describe(
            f"seed {self.seed}: {'ok' if self.ok else 'FAILED'}; {self.finished} requests finished, "
            f"{self.rolled_back} rolled back, {self.refused} refused, {self.writes_acked} writes acked, "
            f"{self.coordinator_crashes} coordinator crashes, {self.virtual_ms} virtual ms"
        )


class _Run(SimRun[TopologySeedResult]):
    def __init__(self, seed: int, requests: int, planted_bug: str) -> None:
        super().__init__()
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
        self.next_key = 0
        self.joins = 0

    def write(self) -> None:
        w = self.world
        serving = w.coordinators()
        if serving:
            self.next_key += 1
            if self.next_key % 2:
                w.write(self.rng.choice(serving), self.next_key, drop=0.2)
            else:
                w.vnode_write(self.rng.choice(serving), self.next_key, drop=0.2)

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
        self.loop.run_until(self.requests * 800 + 1_000, stop=self.stopped)
        self.heal_all()
        self.requests = len(self.admitted)  # the operator asks for nothing more
        healed = self.loop.now
        self.loop.run_until(healed + 30_000, stop=lambda: self.stopped() or self.idle())
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
    result = TopologySeedResult(seed, requests, planted_bug)
    run = simulate(lambda: _Run(seed, requests, planted_bug), result)
    result.refused = run.refused
    return result


def run_topology_seeds(
    start: int, count: int, requests: int = 6, planted_bug: str = ""
) -> list[TopologySeedResult]:
    return [run_topology_seed(s, requests, planted_bug) for s in range(start, start + count)]
