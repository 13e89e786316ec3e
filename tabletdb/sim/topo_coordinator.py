"""The topology coordinator's I/O shell in the simulation: it runs the pure step function
(`topology.coordinator.step`) on the leader's view of group0, carries out each action after a
delay (barriers, streaming, cleanup, proposing a command), and forgets what it observed when it
loses leadership or its node crashes, exactly as a real coordinator task would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace

from tabletdb.sim.topo_world import Snapshot, World
from tabletdb.topology import coordinator as co
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.states import NodeState


class Coordinator:
    """The I/O shell of the simulation: runs `co.step` on the leader's view, executes actions
    with delays, and forgets its observations when it loses leadership or crashes."""

    def __init__(self, world: World, config: co.CoordinatorConfig) -> None:
        self.world = world
        self.config = config
        self.leader: uuid.UUID | None = None
        self.epoch = 0
        self.busy = False
        self.obs = co.Observations(alive=frozenset())
        self.balancing = False
        """Whether the coordinator starts balancer rounds when idle (``ClusterState.balancing_enabled``)."""
        self.sizes: dict[tuple[uuid.UUID, int], int] = {}
        """Tablet sizes as load statistics would report them (uneven, so rounds have work)."""
        self.after_commit: Callable[[TopologyCommand], None] = lambda command: None
        """Set by the nemesis: may crash the coordinator right after its command commits."""
        self.skip_range_copy = False
        """Planted bug: vnode range streams are reported done without copying anything."""

    def elect(self) -> None:
        w = self.world
        members = [
            h.host_id
            for h in sorted(w.hosts.values(), key=lambda h: h.name)
            if h.up
            and h.serving
            and w.in_majority(h.host_id)
            and w.committed.topology.state_of(h.host_id) is NodeState.NORMAL
        ]
        leader = members[0] if members else None
        if leader != self.leader:
            self.leader = leader
            self.epoch += 1
            self.busy = False
            self.obs = co.Observations(alive=frozenset())
            w.log(f"coordinator is now {w.name(leader) if leader else 'nobody'} (epoch {self.epoch})")

    def tick(self) -> None:
        self.elect()
        if self.leader is None or self.busy:
            return
        w = self.world
        me = self.leader
        alive = frozenset(h for h in w.hosts if w.reachable(me, h))
        down = {h: s.down_since for h, s in w.hosts.items() if s.down_since is not None and h not in alive}
        self.obs = replace(self.obs, alive=alive, now_ms=w.loop.now, down_since=down)
        action = co.step(self.make_view(w.view_of(me)), self.obs, w.new_id(), self.config)
        if isinstance(action, co.Idle):
            return
        self.busy = True
        epoch = self.epoch
        delay = w.rng.randint(1, 15)
        if isinstance(action, co.Propose):
            command = action.command
            origin = f"{w.name(me)}#{epoch}"
            reaches_group0 = w.in_majority(me)
            w.loop.after(delay, lambda: self._proposed(epoch, command, origin, reaches_group0))
        elif isinstance(action, co.Barrier):
            w.loop.after(delay, lambda: self._barrier(epoch, me, action))
        elif isinstance(action, co.Stream):
            snapshots = [(t, w.snapshot_of(t.key[1], t.key[2], t.sources)) for t in action.tasks]
            ok = all(all(w.reachable(s.host, t.target.host) for s in t.sources) for t in action.tasks)
            w.loop.after(delay * 3, lambda: self._streamed(epoch, snapshots, ok))
        elif isinstance(action, vp.StreamRanges):
            copies = [
                (task, {k for r, src in task.ranges for s in src for k in w.vnode_keys(s, [r])})
                for task in action.tasks
            ]
            w.loop.after(delay * 3, lambda: self._ranges_streamed(epoch, copies))
        elif isinstance(action, vp.CleanupRanges):
            w.loop.after(delay, lambda: self._ranges_cleaned(epoch, me, action))
        elif isinstance(action, co.Cleanup):
            w.loop.after(delay, lambda: self._cleaned(epoch, me, action))
        else:
            self.other_action(action, epoch, me, delay)

    def make_view(self, snap: Snapshot) -> co.View:
        """What the step decides on, from the leader's view of group0."""
        w = self.world
        return co.View(
            snap.topology,
            snap.tablets,
            {h: 1 for h in w.hosts},
            vnode=w.vnode_view(),
            balancing=self.balancing,
            tablet_sizes=self.sizes,
        )

    def other_action(self, action: co.Action, epoch: int, me: uuid.UUID, delay: int) -> None:
        """An action this world has no part for (a resize's file copies: ``resize_sim``)."""
        raise AssertionError(f"the simulated coordinator cannot carry out {type(action).__name__}")

    def _current(self, epoch: int) -> bool:
        return epoch == self.epoch and self.leader is not None and self.world.hosts[self.leader].up

    def _proposed(self, epoch: int, command: TopologyCommand, origin: str, reaches_group0: bool) -> None:
        # An entry handed to group0 commits even if its proposer died meanwhile (and is then
        # refused by the state-id guard if a newer coordinator moved the state on).
        w = self.world
        took = reaches_group0 and w.apply(command, origin)
        if self._current(epoch) and self.leader is not None:
            self.busy = False
            w.catch_up(self.leader, full=True)
            if took:
                self.after_commit(command)

    def _barrier(self, epoch: int, me: uuid.UUID, action: co.Barrier) -> None:
        """As the node's shell (``topology_task``) runs it: the nodes the coordinator reaches are
        caught up (their read barrier); one it cannot reach, crashed or cut off alike, holds the
        barrier back unless ``skip_down`` (``co.Barrier.asks``)."""
        w = self.world
        if not self._current(epoch):
            return
        self.busy = False
        reached = frozenset(h for h in action.nodes if h in w.hosts and w.reachable(me, h))
        live, down = action.asks(reached)
        if down:
            return
        for h in live:
            w.catch_up(h, full=True)
        if all(w.view_of(h).topology.version >= action.version for h in live):
            self.obs = replace(self.obs, barrier_version=action.version)

    def _streamed(self, epoch: int, snapshots: list[tuple[co.StreamTask, object]], ok: bool) -> None:
        w = self.world
        done = set()
        for task, keys in snapshots:
            still = all(w.reachable(s.host, task.target.host) for s in task.sources)
            if ok and still:
                w.stream(task.key[1], task.key[2], task.sources, task.target, keys)
                done.add(task.key)
        if self._current(epoch):
            self.busy = False
            self.obs = replace(self.obs, streamed=self.obs.streamed | done)

    def _cleaned(self, epoch: int, me: uuid.UUID, action: co.Cleanup) -> None:
        w = self.world
        done = set()
        for task in action.tasks:
            if w.reachable(me, task.replica.host):
                w.cleanup(task.key[1], task.key[2], task.replica)
                done.add(task.key)
        if self._current(epoch):
            self.busy = False
            self.obs = replace(self.obs, cleaned=self.obs.cleaned | done)

    def _ranges_streamed(self, epoch: int, copies: list[tuple[vp.RangeStreamTask, set[int]]]) -> None:
        """Each target took what its sources held when it asked (the planted bug copies nothing)."""
        w = self.world
        done = set()
        for task, keys in copies:
            sources = {s for _, src in task.ranges for s in src}
            if all(w.reachable(s, task.target) for s in sources):
                if not self.skip_range_copy:
                    w.hosts[task.target].vdata |= keys
                done.add(task.key)
        if self._current(epoch):
            self.busy = False
            self.obs = replace(self.obs, ranges_streamed=self.obs.ranges_streamed | done)

    def _ranges_cleaned(self, epoch: int, me: uuid.UUID, action: vp.CleanupRanges) -> None:
        """A node cleans once it applied the version asked for (its read barrier catches it up)."""
        w = self.world
        done = set()
        for task in action.tasks:
            if not w.reachable(me, task.host):
                continue
            w.catch_up(task.host, full=True)
            if w.view_of(task.host).topology.version >= task.version:
                w.vnode_cleanup(task.host)
                done.add((task.host, task.version))
        if self._current(epoch):
            self.busy = False
            self.obs = replace(self.obs, ranges_cleaned=self.obs.ranges_cleaned | done)
