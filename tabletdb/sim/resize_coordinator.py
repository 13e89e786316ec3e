"""The topology coordinator's simulated shell for resize (``resize_seed``): the topology shell
(``topo_coordinator``) with what the node's shell adds for split and merge
(``node.group0_shell.topology_task``): the resize inputs from group0's catalog
(``group0.tablet_resize.catalog_sizing``, the production code), the members' load statistics
polled the way the node polls them, and the replica hosts' file copies (``ResizeFiles``).

Two polls, as on a node: the balancer's, taken whenever a round may start and the maps changed
(or the last one is old), and the resize's, taken only while no transition or resize runs, no
more often than ``POLL_MS`` and once the maps stood still for ``SETTLE_MS``; the resize's is used
only under the maps it was taken under, and the balancer's otherwise. Each host reports sizes
by its own view of the maps, so a host that lags reports tablets that no longer exist, as a real
one would. A copy or a poll answer may be lost (``loss``): the shell then retries. A copy begins
with the host's read barrier, as on a node.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace

from tabletdb.group0.tablet_resize import PAUSED, catalog_sizing
from tabletdb.sim.resize_world import DC, RACK, FileKey, ResizeWorld, Rows
from tabletdb.sim.topo_coordinator import Coordinator
from tabletdb.sim.topo_world import Snapshot
from tabletdb.tablets import load_stats
from tabletdb.tablets.count import SizingConfig
from tabletdb.tablets.load_stats import TabletKey
from tabletdb.topology import coordinator as co
from tabletdb.topology import resize as rs
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology.states import NodeState

POLL_MS = 100
SETTLE_MS = 40
BALANCER_POLL_MS = 500


class ResizeCoordinator(Coordinator):
    def __init__(self, world: ResizeWorld, config: co.CoordinatorConfig, sizing: SizingConfig) -> None:
        super().__init__(world, config)
        self.rworld = world
        self.sizing = sizing
        self.paused = False
        """Tablet balancing disabled (as a backup does): no resize begins, a prepared one rolls back."""
        self.loss = 0.0
        """Chance that a copy's or a poll's answer is lost."""
        self.skip_copy = False
        """Planted bug: resize copies are reported done without copying anything."""
        self._reset_polls()

    def _reset_polls(self) -> None:
        self._bal_sizes: Mapping[TabletKey, int] = {}
        self._bal_at: int | None = None
        self._bal_maps: object = None
        self._maps: object = None
        self._maps_since = 0
        self._polled_at = -POLL_MS
        self._sizes: Mapping[TabletKey, int] | None = None
        self._sizes_maps: object = None

    def elect(self) -> None:
        before = self.epoch
        super().elect()
        if self.epoch != before:
            self._reset_polls()  # a new leader's shell starts with no sizes

    def poll(self) -> dict[TabletKey, int] | None:
        """Every reachable serving member's report merged (largest replica wins)."""
        w = self.rworld
        me = self.leader
        assert me is not None
        reports = []
        for h in sorted(w.hosts, key=lambda h: h.bytes):
            if w.reachable(me, h) and w.hosts[h].serving and not w.hosts[h].gone:
                if w.rng.random() < self.loss:
                    continue  # the answer was lost: that host's tablets may go unmeasured
                reports.append(w.report(h))
        return load_stats.merge(reports)

    def _sizes_for(self, snap: Snapshot) -> Mapping[TabletKey, int]:
        now = self.world.loop.now
        maps = snap.tablets
        t = snap.topology
        may_balance = self.balancing and t.transition is None and not t.queue
        stale = self._bal_at is None or now - self._bal_at >= BALANCER_POLL_MS or maps is not self._bal_maps
        if may_balance and stale:
            self._bal_sizes, self._bal_at, self._bal_maps = self.poll() or {}, now, maps
        if maps is not self._maps:
            self._maps, self._maps_since = maps, now
        quiet = t.transition is None and not rs.resizing(maps)
        if quiet and now - self._polled_at >= POLL_MS and now - self._maps_since >= SETTLE_MS:
            self._polled_at = now
            self._sizes, self._sizes_maps = self.poll(), maps
        if self._sizes is not None and self._sizes_maps is maps:
            return self._sizes
        return self._bal_sizes

    def make_view(self, snap: Snapshot, sizes: Mapping[TabletKey, int] | None = None) -> co.View:
        """The step's view; ``sizes`` given: those instead of the polls (which then do not run)."""
        tables, colocated, cdc = catalog_sizing(snap.catalog)
        normal = sum(1 for n in snap.topology.nodes.values() if n.state is NodeState.NORMAL)
        inputs = rs.ResizeInputs(
            tables, colocated, {DC: {RACK: normal}}, self.sizing, cdc, paused=PAUSED if self.paused else ""
        )
        return co.View(
            snap.topology,
            snap.tablets,
            {h: 1 for h in self.world.hosts},
            self.rworld.locations(),
            vp.VnodeView({}, (), {}),
            balancing=self.balancing and not self.paused,
            tablet_sizes=self._sizes_for(snap) if sizes is None else sizes,
            resize=inputs,
            catalog=snap.catalog,
        )

    def other_action(self, action: co.Action, epoch: int, me: uuid.UUID, delay: int) -> None:
        assert isinstance(action, rs.ResizeFiles), type(action).__name__
        w = self.rworld
        copies: list[tuple[rs.ResizeTask, dict[FileKey, Rows]]] = []
        for task in action.tasks:
            host = task.key[0]
            if w.reachable(me, host):
                w.catch_up(host, full=True)  # the copy verb begins with a read barrier
                copies.append((task, w.copy_snapshot(host, task.tables, task.seq)))
        w.loop.after(delay * 3, lambda: self._copied(epoch, me, copies))

    def _copied(
        self, epoch: int, me: uuid.UUID, copies: list[tuple[rs.ResizeTask, dict[FileKey, Rows]]]
    ) -> None:
        w = self.rworld
        done: set[rs.ResizeKey] = set()
        for task, snapshot in copies:
            host = task.key[0]
            if not w.reachable(me, host) or w.rng.random() < self.loss:
                continue
            if self.skip_copy or w.copy_into_next(host, snapshot, task.kind):
                done.add(task.key)
        if self._current(epoch):
            self.busy = False
            self.obs = replace(self.obs, resized=self.obs.resized | done)


def true_sizes(world: ResizeWorld) -> dict[TabletKey, int]:
    """Sizes from every host's files (all caught up): what a settled poll reports."""
    return load_stats.merge(world.report(h) for h in sorted(world.hosts, key=lambda h: h.bytes))
