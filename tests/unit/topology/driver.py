"""A perfect-world shell for the pure topology coordinator in tests: every stream and cleanup
succeeds at once, a barrier too unless a member it waits for is down (as on a node,
``Barrier.asks``), and commands apply in order (unless a test says otherwise)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tabletdb.topology import coordinator as co
from tabletdb.topology import resize as rs
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology.cdc_switch import LatestGeneration
from tabletdb.topology.commands import TopologyCommand, apply_command
from tabletdb.topology.requests import enqueue
from tabletdb.topology.state import Request, TopologyState, TopoNode
from tabletdb.topology.states import NodeState, RequestKind

TABLE = uuid.UUID(int=0xAB)
_ids = itertools.count(1)


def new_id() -> uuid.UUID:
    return uuid.UUID(int=(1 << 100) + next(_ids))


def host(n: int) -> uuid.UUID:
    return uuid.UUID(int=n + 1)


@dataclass
class Cluster:
    topology: TopologyState
    tablets: dict[uuid.UUID, TabletMap]
    alive: set[uuid.UUID]
    obs: co.Observations = field(default_factory=lambda: co.Observations(alive=frozenset()))
    config: co.CoordinatorConfig = field(default_factory=co.CoordinatorConfig)
    actions: list[co.Action] = field(default_factory=list)
    commands: list[TopologyCommand] = field(default_factory=list)
    locations: dict[uuid.UUID, tuple[str, str]] = field(default_factory=dict)
    check: Callable[[Cluster, TopologyCommand, co.Observations], None] | None = None
    """Called with every command the coordinator proposes and the observations it decided on."""
    vnode: vp.VnodeView = field(default_factory=lambda: vp.VnodeView({}, (), {}))
    balancing: bool = False
    sizes: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    resize: rs.ResizeInputs | None = None
    cdc: LatestGeneration | None = None

    def view(self) -> co.View:
        shards = {h: 2 for h in self.topology.nodes}
        return co.View(
            self.topology,
            self.tablets,
            shards,
            self.locations,
            vnode=self.vnode,
            balancing=self.balancing,
            tablet_sizes=self.sizes,
            resize=self.resize,
            cdc_generation=self.cdc,
        )

    def apply(self, command: TopologyCommand) -> bool:
        self.topology, changed, ok = apply_command(self.topology, self.tablets, command)
        self.tablets.update(changed)
        if ok:
            self.commands.append(command)
        return ok

    def request(self, kind: RequestKind, node: uuid.UUID, replaced: uuid.UUID | None = None) -> Request:
        req = Request(new_id(), kind, node, replaced)
        assert self.apply(enqueue(self.topology, req, frozenset(self.alive), new_id()))
        return req

    def step(self) -> co.Action:
        self.obs = replace(self.obs, alive=frozenset(self.alive))
        action = co.step(self.view(), self.obs, new_id(), self.config)
        if self.check is not None and isinstance(action, co.Propose):
            self.check(self, action.command, self.obs)
        self.actions.append(action)
        return action

    def execute(self, action: co.Action) -> None:
        if isinstance(action, co.Barrier):
            _, down = action.asks(frozenset(self.alive))  # a member that is down holds it back
            if not down:
                self.obs = replace(self.obs, barrier_version=action.version)
        elif isinstance(action, co.Stream):
            self.obs = replace(self.obs, streamed=self.obs.streamed | {t.key for t in action.tasks})
        elif isinstance(action, co.Cleanup):
            self.obs = replace(self.obs, cleaned=self.obs.cleaned | {t.key for t in action.tasks})
        elif isinstance(action, vp.StreamRanges):
            self.obs = replace(
                self.obs, ranges_streamed=self.obs.ranges_streamed | {t.key for t in action.tasks}
            )
        elif isinstance(action, vp.CleanupRanges):
            cleaned = {(t.host, t.version) for t in action.tasks}
            self.obs = replace(self.obs, ranges_cleaned=self.obs.ranges_cleaned | cleaned)
        elif isinstance(action, rs.ResizeFiles):
            self.obs = replace(self.obs, resized=self.obs.resized | {t.key for t in action.tasks})
        elif isinstance(action, co.Propose):
            assert self.apply(action.command), action.command.reason

    def run(self, limit: int = 500, before: Callable[[Cluster], None] | None = None) -> None:
        """Step until idle; `before` runs before every step (a test's fault injection)."""
        for _ in range(limit):
            if before is not None:
                before(self)
            action = self.step()
            if isinstance(action, co.Idle):
                return
            self.execute(action)
        raise AssertionError(f"coordinator did not go idle in {limit} steps; last: {self.actions[-3:]}")

    def replicas_of(self, h: uuid.UUID) -> int:
        return sum(1 for t in self.tablets[TABLE].tablets for r in t.replicas if r.host == h)


def cluster(nodes: int = 4, tablets: int = 8, rf: int = 3) -> Cluster:
    hosts = [host(i) for i in range(nodes)]
    topo = TopologyState(state_id=new_id(), nodes={h: TopoNode(h, NodeState.NORMAL) for h in hosts})
    replicas = [
        [TabletReplica(hosts[(i + j) % nodes], (i + j) % 2) for j in range(rf)] for i in range(tablets)
    ]
    return Cluster(topo, {TABLE: TabletMap.even(TABLE, replicas)}, set(hosts))
