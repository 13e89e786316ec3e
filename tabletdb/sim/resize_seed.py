"""`run_resize_seed`: split and merge by size, with balancer moves, RF changes and joins, under faults.

One seed: five nodes and one tablets keyspace (RF 2 or 3) with two tables whose tablet counts
have bounds (``min_tablet_count`` / ``max_tablet_count``); clients write and delete rows at QUORUM
through whichever node they reach, in phases that grow the tables and shrink them again, so the
real re-evaluation (``topology.resize``, ``tablets.count``) splits them and merges them back, with
the balancer co-locating siblings before each merge (``tablets.merge_colocation``) and spreading
replicas otherwise. An operator now and then changes the keyspace's RF (by one, as ALTER allows),
adds a node, decommissions one, or pauses balancing for a while (as a backup does). A nemesis
crashes the coordinator (also right after one of its commands commits), crashes other nodes,
partitions the network and loses messages (writes' replica messages, copy and load-report
answers). Then every fault heals, the clients only overwrite live rows, and the system must come
to rest within a bound.

Checked throughout: every QUORUM read by each serving view finds every acknowledged write
(``resize_world``), and every committed group0 value's maps keep the invariants of
``resize_checks``. Everything derives from the seed: a seed replays the same trace (its hash is
in the result).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tabletdb.cql.errors import CqlError
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.schema.ddl_keyspace import RfChangeOutcome, alter_keyspace
from tabletdb.sim.events import EventLoop
from tabletdb.sim.resize_checks import map_violations
from tabletdb.sim.resize_coordinator import ResizeCoordinator, true_sizes
from tabletdb.sim.resize_world import DC, KEYSPACE, ResizeWorld, nts
from tabletdb.sim.seed_run import TICK, SeedOutcome, SimRun, simulate
from tabletdb.tablets.count import SizingConfig
from tabletdb.topology import coordinator as co
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.rf_request import KeyspaceRfChange
from tabletdb.topology.state import Request
from tabletdb.topology.states import RequestKind

PLANTED_BUGS = ("resize-copy-skipped", "no-write-both")
TABLES = (("a", 2, 16), ("b", 1, 8))
KEYS = 120
"""Keys per table: all live is 24,000 bytes (``ROW_BYTES``): above the target even at the maximum count."""
SIZING = SizingConfig(target_tablet_size_in_bytes=600, tablets_initial_scale_factor=0.0)
LAST_SHRINK_MS = 3_000
MAX_NODES = 7
MIN_NODES = 4
SETTLE_BOUND_MS = 30_000
SETTLE_BOUND_COMMITS = 400
"""Coming to rest after faults heal: at most this much virtual time and this many group0 commands."""


@dataclass
class ResizeSeedResult(SeedOutcome):
    length_ms: int
    planted_bug: str = ""
    splits: int = 0
    merges: int = 0
    resize_rollbacks: int = 0
    colocation_rounds: int = 0
    rf_changes: int = 0
    leftovers_swept: int = 0
    leftovers_at_rest: int = 0
    """Files of tablets a node no longer replicates, at rest (a leaving replica that was cut off at
    cleanup keeps its file until it restarts and sweeps: disk only, nothing reads it)."""
    settle_ms: int = 0
    settle_commits: int = 0

    def replay_command(self) -> str:
        bug = f" --planted-bug {self.planted_bug}" if self.planted_bug else ""
        return f"tabletdb sim resize --start {self.seed} --seeds 1 --length-ms {self.length_ms}{bug}"

    def describe(self) -> str:
        return self._describe(
            f"seed {self.seed}: {'ok' if self.ok else 'FAILED'}; {self.splits} splits, {self.merges} merges, "
            f"{self.resize_rollbacks} resize rollbacks, {self.colocation_rounds} co-location rounds, "
            f"{self.rf_changes} RF changes, {self.writes_acked} writes acked, {self.coordinator_crashes} "
            f"coordinator crashes; at rest {self.settle_ms} ms and {self.settle_commits} commands after "
            f"healing, {self.leftovers_at_rest} leftover files; trace {self.trace_hash}"
        )


class SeedRun(SimRun[ResizeSeedResult]):
    NEMESIS_KINDS = ("crash_coordinator", "crash", "partition", "loss", "none", "none")
    COORDINATOR_CRASH_CHANCE = 0.08
    world: ResizeWorld
    coordinator: ResizeCoordinator

    def __init__(self, seed: int, length_ms: int, planted_bug: str) -> None:
        super().__init__()
        self.rng = random.Random(seed)
        self.loop = EventLoop()
        self.rf = self.rng.choice([2, 3])
        self.world = ResizeWorld(self.rng, self.loop, nodes=5, rf=self.rf, tables=TABLES)
        self.world.no_write_both = planted_bug == "no-write-both"
        self.world.after_apply = self._check_maps
        config = co.CoordinatorConfig(rollback_after_ms=self.rng.choice([150, 400, 10_000_000]))
        self.coordinator = ResizeCoordinator(self.world, config, SIZING)
        self.coordinator.skip_copy = planted_bug == "resize-copy-skipped"
        self.coordinator.balancing = True
        self.coordinator.after_commit = self._maybe_crash_coordinator
        self.length_ms = length_ms
        self.growing = True
        self.last_phase = False
        self.drop = 0.05
        self.joins = 0

    # --- checks ---------------------------------------------------------------------------------

    def _check_maps(self) -> None:
        w = self.world
        before, after = w.snapshots[-2], w.snapshots[-1]
        for v in map_violations(before.tablets, after.tablets, after.catalog, after.topology):
            w.violation(v)

    # --- clients --------------------------------------------------------------------------------

    def write(self) -> None:
        w = self.world
        serving = w.coordinators()
        if not serving:
            return
        table = self.rng.choice(sorted(w.table_names, key=lambda t: t.bytes))
        key = self.rng.randrange(KEYS)
        via = self.rng.choice(serving)
        if not self.faults:  # about size-neutral: overwrite rows whose last acknowledged write is live
            if self._live(table, key):
                w.write_row(via, table, key, self.rng.randrange(1 << 30), drop=0.0)
            return
        value = self.rng.randrange(1 << 30) if self.growing else None
        w.write_row(via, table, key, value, drop=self.drop)

    def _live(self, table: uuid.UUID, key: int) -> bool:
        acked = self.world.rows_acked[table].get(key)
        return acked is not None and acked[1] is not None

    def phase(self) -> None:
        """Grow for a while, then shrink for longer (a merge waits for co-location rounds first)."""
        if not self.faults or self.last_phase:
            return
        self.growing = not self.growing
        self.world.log(f"clients now {'write' if self.growing else 'delete'} rows")
        lasts = self.rng.randint(1_800, 2_800) if self.growing else self.rng.randint(3_000, 4_500)
        self.loop.after(lasts, self.phase)

    def _last_shrink(self) -> None:
        """The faults end with the tables shrinking, so every seed's last merges run under them."""
        self.last_phase = True
        if self.growing:
            self.growing = False
            self.world.log("clients now delete rows (to the end of the faults)")

    # --- nemesis ----------------------------------------------------------------------------------

    def other_fault(self, kind: str) -> None:
        if kind == "loss" and self.drop < 0.5:
            self.drop, self.coordinator.loss = 0.5, 0.3
            self.world.log("messages are lost")
            self.loop.after(self.rng.randint(50, 300), self._no_loss)

    def _no_loss(self) -> None:
        self.drop, self.coordinator.loss = 0.05, 0.0

    def heal_more(self) -> None:
        self._no_loss()
        self._unpause()

    # --- operator ----------------------------------------------------------------------------------

    def operator(self) -> None:
        w = self.world
        if not self.faults:
            return
        topo = w.committed.topology
        if topo.queue:
            return
        kind = self.rng.choice(["rf", "join", "leave", "pause", "none"])
        normal = topo.normal_nodes()
        alive = frozenset(h for h, s in w.hosts.items() if s.up)
        if kind == "pause" and not self.coordinator.paused:
            self.coordinator.paused = True
            w.log("balancing paused")
            self.loop.after(self.rng.randint(100, 600), self._unpause)
        elif kind == "join" and len(normal) < MAX_NODES:
            self.joins += 1
            host = w.new_host(f"j{self.joins}")
            w.catch_up(host, full=True)
            self._submit(Request(w.new_id(), RequestKind.JOIN, host), alive)
        elif kind == "leave" and len(normal) > MIN_NODES and topo.transition is None:
            victim = self.rng.choice(sorted(normal, key=lambda h: h.bytes))
            self._submit(Request(w.new_id(), RequestKind.LEAVE, victim), alive)
        elif kind == "rf":
            self._alter_rf(alive)

    def _unpause(self) -> None:
        self.coordinator.paused = False
        self.world.log("balancing resumed")

    def _alter_rf(self, alive: frozenset[uuid.UUID]) -> None:
        w = self.world
        catalog = w.committed.catalog
        current = catalog.keyspaces[KEYSPACE].definition.replication.factor(DC)
        target = 3 if current == 2 else 2
        normal = len(w.committed.topology.normal_nodes())
        config = SchemaConfig(datacenters=(DC,), cluster=w.schema_shape(normal))
        try:
            outcome = alter_keyspace(catalog, KEYSPACE, replication=nts(target), config=config)
        except CqlError as e:
            w.log(f"ALTER KEYSPACE to RF {target} refused: {e}")
            return
        assert isinstance(outcome, RfChangeOutcome) and outcome.before and outcome.after
        change = KeyspaceRfChange(outcome.before, outcome.after)
        subject = sorted(w.committed.topology.normal_nodes(), key=lambda h: h.bytes)[0]
        self._submit(Request(w.new_id(), RequestKind.KEYSPACE_RF_CHANGE, subject, rf_change=change), alive)

    def _submit(self, request: Request, alive: frozenset[uuid.UUID]) -> None:
        w = self.world
        try:
            command = enqueue(w.committed.topology, request, alive, w.new_id())
        except RequestRefused as e:
            w.log(f"refused {request.kind.value} of {request.subject}: {e}")
            return
        w.apply(command, "operator")

    # --- the run --------------------------------------------------------------------------------------

    def idle(self) -> bool:
        """At rest: no request, no transition, no resize, and the coordinator, given every
        tablet's true size, has nothing to begin (no split, merge, co-location or balancing)."""
        w = self.world
        snap = w.committed
        t = snap.topology
        if t.transition is not None or t.queue:
            return False
        view = self.coordinator.make_view(snap, true_sizes(w))
        alive = frozenset(h for h in w.hosts if w.hosts[h].up)
        action = co.step(view, co.Observations(alive=alive, barrier_version=t.version), uuid.UUID(int=0))
        return isinstance(action, co.Idle)

    def run(self, result: ResizeSeedResult) -> None:
        self.start()
        self.loop.run_until(self.length_ms, stop=self.stopped)
        self.heal_and_settle(result)

    def start(self) -> None:
        """Schedule the coordinator, the clients, the nemesis and the operator."""
        self.every(TICK, self.coordinator.tick)
        self.every(TICK, self.deliver)
        self.every(2, self.write)
        self.every(250, self.nemesis)
        self.every(900, self.operator)
        self.growing = False
        self.phase()
        self.loop.after(max(0, self.length_ms - LAST_SHRINK_MS), self._last_shrink)

    def heal_and_settle(self, result: ResizeSeedResult) -> None:
        """Stop every fault and let the cluster come to rest (a violation if it does not)."""
        self.heal_all()
        healed, healed_at = self.loop.now, len(self.world.snapshots)
        rest = self._at_rest_every(50)
        self.loop.run_until(healed + SETTLE_BOUND_MS, stop=lambda: self.stopped() or rest())
        result.settle_commits = len(self.world.snapshots) - healed_at
        result.settle_ms = self.loop.now - healed
        if not self.world.violations and not self.idle():
            snap = self.world.committed
            self.world.violation(
                f"liveness: not at rest {SETTLE_BOUND_MS} ms after faults healed at {healed} ms "
                f"(transition {snap.topology.transition}, queue {len(snap.topology.queue)})"
            )
        elif result.settle_commits > SETTLE_BOUND_COMMITS:
            self.world.violation(
                f"liveness: {result.settle_commits} group0 commands to come to rest after faults healed "
                f"(bound {SETTLE_BOUND_COMMITS})"
            )
        if not self.world.violations:
            self.world.check_replicas("the end")
            result.leftovers_at_rest = self.world.leftovers()

    def _at_rest_every(self, period_ms: int) -> Callable[[], bool]:
        """``idle`` asked at most once every ``period_ms`` of virtual time (it plans a whole step)."""
        asked = [-period_ms]

        def rest() -> bool:
            if self.loop.now - asked[0] < period_ms:
                return False
            asked[0] = self.loop.now
            return self.idle()

        return rest


def _count(trace: list[str], words: str) -> int:
    return sum(1 for line in trace if " commit " in line and words in line)


def run_resize_seed(seed: int, length_ms: int = 6_000, planted_bug: str = "") -> ResizeSeedResult:
    """Simulate one seed; a finding (or a crash of the simulation) lands in the result. Barriers
    run as the node's shell runs them (``topo_coordinator.Coordinator._barrier``)."""
    if planted_bug and planted_bug not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug {planted_bug!r}; known: {', '.join(PLANTED_BUGS)}")
    result = ResizeSeedResult(seed, length_ms, planted_bug)
    run = simulate(lambda: SeedRun(seed, length_ms, planted_bug), result)
    trace = result.trace
    result.splits = _count(trace, ": split of table")
    result.merges = _count(trace, ": merge of table")
    result.resize_rollbacks = _count(trace, ": roll back resize")
    result.colocation_rounds = _count(trace, "co-locating sibling tablets")
    result.rf_changes = _count(trace, ": finish keyspace_rf_change")
    result.leftovers_swept = run.world.leftovers_swept
    return result


def run_resize_seeds(
    start: int, count: int, length_ms: int = 6_000, planted_bug: str = ""
) -> list[ResizeSeedResult]:
    return [run_resize_seed(s, length_ms, planted_bug) for s in range(start, start + count)]
