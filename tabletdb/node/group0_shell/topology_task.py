"""The topology coordinator's shell: runs ``topology.coordinator.step`` while this node leads group0.

Each turn builds the step's view from group0's state as this node applied it, runs the pure step
and carries out its action: a barrier (every member's read barrier answers the version; one the
failure detector calls down holds it back, ``co.Barrier``),
streaming and cleanup of tablet replicas, or a command proposed through group0 (applied, or
refused by its state-id guard if another coordinator moved the state on). What it saw lives in
``Observations`` here and is dropped when leadership is lost: a new leader gathers it again, and
everything else it needs is in group0. A failed barrier, stream or cleanup is logged and tried
again on a later turn; the step decides whether to wait or roll back.

The I/O is handed in as callables by host id (the node maps them to RPCs), so the loop is
tested against real stores and sockets without a whole node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.node.group0_shell.cdc_generations import latest_cdc_generation
from tabletdb.tablets.load_stats import TabletKey
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.topology import coordinator as co
from tabletdb.topology import resize as rs
from tabletdb.topology import vnode_phase as vp
from tabletdb.topology.commands import TopologyCommand

log = logging.getLogger(__name__)

_Task = TypeVar("_Task", co.StreamTask, co.CleanupTask)
_RangeTask = TypeVar("_RangeTask", vp.RangeStreamTask, vp.RangeCleanupTask)

IDLE_WAIT = 0.5
"""Seconds between steps when there is nothing to do (or leadership is elsewhere)."""
RETRY_WAIT = 0.5
"""Seconds before a step again after a barrier, stream or cleanup failed."""
SIZES_MAX_AGE_S = 10.0
"""Tablet sizes older than this are polled again before a balancer round is planned; so are
sizes measured on other tablet maps (a round or a split moved bytes since). Only the poll costs:
nothing about sizes is ever written to group0."""


@dataclass(frozen=True)
class TopologyIo:
    """What the task does to the cluster, by host id."""

    is_leader: Callable[[], bool]
    state: Callable[[], ClusterState]
    alive: Callable[[uuid.UUID], bool]
    barrier: Callable[[uuid.UUID], Awaitable[int]]
    """The topology version the member applied after a Raft read barrier."""
    stream: Callable[[co.StreamTask], Awaitable[object]]
    cleanup: Callable[[co.CleanupTask], Awaitable[object]]
    submit: Callable[[TopologyCommand], Awaitable[object]]
    """Propose through group0; returns once this node applied it (took effect or not)."""
    tidy: Callable[[], Awaitable[None]] | None = None
    """Run after every step (the node promotes normal learners to voters, drops nodes that left
    from the Raft configuration, and keeps the CDC generation fitting the ring)."""
    stream_ranges: Callable[[vp.RangeStreamTask], Awaitable[object]] | None = None
    cleanup_ranges: Callable[[vp.RangeCleanupTask], Awaitable[object]] | None = None
    """Vnode ranges: streamed to a node that gains them, dropped by a node that lost them."""
    resize: Callable[[rs.ResizeTask], Awaitable[object]] | None = None
    """A replica host copies its files into the next generation (``node.tablet_resize``)."""
    resize_inputs: Callable[[ClusterState, int], rs.ResizeInputs] | None = None
    """What the resize re-evaluation needs, for a state and the wall clock in µs (None: no resize)."""
    sizes: Callable[[], Awaitable[Mapping[TabletKey, int]]] | None = None
    """Every tablet's bytes from the members' load statistics (``node.tablet_load``)."""
    tablet_sizes: Callable[[], Awaitable[Mapping[TabletKey, int]]] | None = None
    """Bytes per tablet from every live member's load statistics (``node.tablet_load``); None:
    the balancer weighs every tablet alike."""
    changed: Callable[[], Awaitable[None]] | None = None
    """Returns once group0 may have applied something new; an idle coordinator that leads wakes
    on it when its requests or balancing changed, instead of waiting out ``IDLE_WAIT`` (None:
    it waits)."""


def view_of(state: ClusterState, tablet_sizes: Mapping[TabletKey, int] | None = None) -> co.View:
    members = state.topology.members
    locations = {h: (r.datacenter, r.rack) for h, r in members.items()}
    return co.View(
        state.topology_state,
        state.metadata.tablets,
        {h: r.shard_count for h, r in members.items()},
        locations,
        vp.VnodeView(
            {h: r.tokens for h, r in members.items()}, vp.vnode_tables(state.metadata.catalog), locations
        ),
        catalog=state.metadata.catalog,
        balancing=state.balancing_enabled,
        tablet_sizes=tablet_sizes or {},
        cdc_generation=latest_cdc_generation(state),
    )


def may_balance(state: ClusterState) -> bool:
    """Whether the next step could start a balancer round (so it needs tablet sizes)."""
    t = state.topology_state
    return state.balancing_enabled and t.transition is None and not t.queue


DEFAULT_CONFIG = co.CoordinatorConfig()


class TopologyTask:
    def __init__(
        self,
        io: TopologyIo,
        config: co.CoordinatorConfig = DEFAULT_CONFIG,
        clock_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000),
    ) -> None:
        self.io = io
        self.config = config
        self.clock_ms = clock_ms
        self.obs = co.Observations(alive=frozenset())
        self._down_since: dict[uuid.UUID, int] = {}
        self._leading = False
        self._sizes: Mapping[TabletKey, int] = {}
        self._sizes_at_ms: int | None = None
        self._sizes_maps: Mapping[uuid.UUID, TabletMap] | None = None
        self._resize_sizes = _SizesPoll()
        self._barrier_held: tuple[int, frozenset[uuid.UUID]] | None = None
        """The version and nodes a barrier last waited for (logged at INFO once, then DEBUG)."""

    async def run(self, stop: asyncio.Event) -> None:
        """Step while this node leads group0, until ``stop`` is set."""
        while not stop.is_set():
            if not self.io.is_leader():
                self._lost_leadership()
                await _wait(stop, IDLE_WAIT)
                continue
            self._leading = True
            try:
                action = await self.step_once()
            except Exception as exc:  # the step and commands are pure; this is I/O failing
                log.warning("topology coordinator step failed, retrying: %s", exc)
                await _wait(stop, RETRY_WAIT)
                continue
            if self.io.tidy is not None:
                await self.io.tidy()  # cheap when there is nothing to do; joiners wait on it
            if isinstance(action, co.Idle):
                await self._idle(stop)

    async def _idle(self, stop: asyncio.Event) -> None:
        """Wait ``IDLE_WAIT``, or only until group0 applied a new request queue or transition
        (a decommission, move or join starts at once, not up to ``IDLE_WAIT`` later) or
        balancing was switched. Checked on each of group0's changes by identity: cheap."""
        changed = self.io.changed
        if changed is None:
            await _wait(stop, IDLE_WAIT)
            return
        seen = self.io.state()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + IDLE_WAIT
        while not stop.is_set() and not _plans_changed(seen, self.io.state()):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(changed())]
            try:
                await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()

    def _lost_leadership(self) -> None:
        if self._leading:
            log.info("topology coordinator stopped: this node no longer leads group0")
        self._leading = False
        self.obs = co.Observations(alive=frozenset())
        self._down_since.clear()
        self._sizes_at_ms = None

    async def step_once(self) -> co.Action:
        """Run one step on the current state and carry out its action."""
        state = self.io.state()
        now = self.clock_ms()
        nodes = state.topology_state.nodes
        alive = frozenset(h for h in nodes if self.io.alive(h))
        for h in nodes:
            if h in alive:
                self._down_since.pop(h, None)
            else:
                self._down_since.setdefault(h, now)
        self.obs = replace(
            self.obs,
            alive=alive,
            now_ms=now,
            down_since=dict(self._down_since),
            wall_us=time.time_ns() // 1000,
        )
        view = view_of(state, await self._tablet_sizes(state, now))
        if self.io.resize_inputs is not None:
            sizes = await self._resize_sizes.poll(state, self.io.sizes)
            view = replace(view, resize=self.io.resize_inputs(state, int(time.time() * 1_000_000)))
            if sizes is not None:
                view = replace(view, tablet_sizes=sizes)
        action = co.step(view, self.obs, uuid.uuid1(), self.config)
        if isinstance(action, co.Barrier):
            await self._barrier(action, alive)
        elif isinstance(action, co.Stream):
            done = await self._each(action.tasks, self.io.stream, "stream")
            self.obs = replace(self.obs, streamed=self.obs.streamed | done)
        elif isinstance(action, co.Cleanup):
            done = await self._each(action.tasks, self.io.cleanup, "cleanup")
            self.obs = replace(self.obs, cleaned=self.obs.cleaned | done)
        elif isinstance(action, vp.StreamRanges):
            streamed = await self._ranges(action.tasks, self.io.stream_ranges, "stream")
            self.obs = replace(self.obs, ranges_streamed=self.obs.ranges_streamed | streamed)
        elif isinstance(action, vp.CleanupRanges):
            cleaned = await self._ranges(action.tasks, self.io.cleanup_ranges, "cleanup")
            self.obs = replace(self.obs, ranges_cleaned=self.obs.ranges_cleaned | cleaned)
        elif isinstance(action, rs.ResizeFiles):
            self.obs = replace(self.obs, resized=self.obs.resized | await self._resize(action.tasks, alive))
        elif isinstance(action, co.Propose):
            log.info("topology coordinator proposes: %s", action.command.reason)
            await self.io.submit(action.command)
        return action

    async def _tablet_sizes(self, state: ClusterState, now: int) -> Mapping[TabletKey, int]:
        """The sizes a balancer round plans on, polled again only when one may start and they are
        older than ``SIZES_MAX_AGE_S`` or from other tablet maps (bounded staleness)."""
        poll = self.io.tablet_sizes
        if poll is None or not may_balance(state):
            return self._sizes
        maps = state.metadata.tablets
        at = self._sizes_at_ms
        if at is None or now - at >= SIZES_MAX_AGE_S * 1000 or maps is not self._sizes_maps:
            self._sizes = await poll()
            self._sizes_at_ms, self._sizes_maps = now, maps
        return self._sizes

    async def _ranges(
        self, tasks: tuple[_RangeTask, ...], run: Callable[[_RangeTask], Awaitable[object]] | None, what: str
    ) -> frozenset[Any]:
        """Run vnode range tasks at once; the keys of those that succeeded."""
        if run is None:
            raise RuntimeError(f"this node cannot {what} vnode ranges (no verb wired)")
        outcomes = await asyncio.gather(*(run(t) for t in tasks), return_exceptions=True)
        done: list[Any] = []
        for task, outcome in zip(tasks, outcomes):
            if isinstance(outcome, BaseException):
                where = (
                    f"table {task.table_id} to {task.target}"
                    if isinstance(task, vp.RangeStreamTask)
                    else f"on {task.host}"
                )
                log.info("topology %s of vnode ranges %s failed: %s", what, where, outcome)
            elif isinstance(task, vp.RangeStreamTask):
                done.append(task.key)
            else:
                done.append((task.host, task.version))
        if len(done) < len(tasks):
            await asyncio.sleep(RETRY_WAIT)
        return frozenset(done)

    async def _resize(
        self, tasks: tuple[rs.ResizeTask, ...], alive: frozenset[uuid.UUID]
    ) -> frozenset[rs.ResizeKey]:
        """Each live host's copy at once; the keys of those that succeeded."""
        run = self.io.resize
        if run is None:
            raise RuntimeError("this node cannot resize tablets (no verb wired)")
        live = [t for t in tasks if t.key[0] in alive]
        outcomes = await asyncio.gather(*(run(t) for t in live), return_exceptions=True)
        done = frozenset(t.key for t, o in zip(live, outcomes) if not isinstance(o, BaseException))
        for task, outcome in zip(live, outcomes):
            if isinstance(outcome, BaseException):
                log.info("tablet %s copy on %s failed: %s", task.kind.value, task.key[0], outcome)
        if len(done) < len(tasks):
            await asyncio.sleep(RETRY_WAIT)
        return done

    async def _barrier(self, action: co.Barrier, alive: frozenset[uuid.UUID]) -> None:
        """Ask the members the failure detector calls alive; one it calls down holds the barrier
        back (unless ``skip_down``): it may be cut off, not dead, and serving by its old map."""
        live, down = action.asks(alive)
        answers = await asyncio.gather(*(self.io.barrier(h) for h in live), return_exceptions=True)
        behind: dict[uuid.UUID, object] = {h: "down" for h in down}
        behind |= {h: a for h, a in zip(live, answers) if not isinstance(a, int) or a < action.version}
        if behind:
            held = (action.version, frozenset(behind))
            level = logging.DEBUG if held == self._barrier_held else logging.INFO  # once per change
            self._barrier_held = held
            log.log(level, "topology barrier on version %d not reached yet: %s", action.version, behind)
            await asyncio.sleep(RETRY_WAIT)
            return
        self._barrier_held = None
        self.obs = replace(self.obs, barrier_version=action.version)

    async def _each(
        self, tasks: tuple[_Task, ...], run: Callable[[_Task], Awaitable[object]], what: str
    ) -> frozenset[co.MoveKey]:
        outcomes = await asyncio.gather(*(run(t) for t in tasks), return_exceptions=True)
        done = frozenset(t.key for t, o in zip(tasks, outcomes) if not isinstance(o, BaseException))
        for task, outcome in zip(tasks, outcomes):
            if isinstance(outcome, BaseException):
                _, table_id, tablet_id = task.key
                log.info(
                    "topology %s of tablet %d of table %s failed: %s", what, tablet_id, table_id, outcome
                )
        if len(done) < len(tasks):
            await asyncio.sleep(RETRY_WAIT)
        return done


SIZES_EVERY_S = 5.0
"""Seconds between polls of the members' tablet sizes (each member stats its files)."""
SETTLE_S = 2.0
"""A poll counts only if the tablet maps did not change for this long before it began: a member
that had not applied the latest maps yet would report sizes of tablets that no longer exist."""


class _SizesPoll:
    """The latest sizes polled, valid only for the tablet maps they were taken under."""

    def __init__(self) -> None:
        self._maps: object = None
        self._maps_since = 0.0
        self._taken_at = -SIZES_EVERY_S
        self._sizes: Mapping[TabletKey, int] | None = None
        self._for_maps: object = None

    async def poll(
        self, state: ClusterState, sizes: Callable[[], Awaitable[Mapping[TabletKey, int]]] | None
    ) -> Mapping[TabletKey, int] | None:
        now = time.monotonic()
        maps = state.metadata.tablets
        if maps is not self._maps:
            self._maps, self._maps_since = maps, now
        quiet = state.topology_state.transition is None and not rs.resizing(maps)
        due = now - self._taken_at >= SIZES_EVERY_S and now - self._maps_since >= SETTLE_S
        if sizes is not None and quiet and due:
            self._taken_at = now
            try:
                found: Mapping[TabletKey, int] | None = await sizes()
            except Exception as exc:  # an unanswered poll: no sizes, so no resize decision
                log.info("tablet sizes poll failed: %r", exc)
                found = None
            self._sizes, self._for_maps = found, maps
        return self._sizes if self._for_maps is maps else None


def _plans_changed(before: ClusterState, now: ClusterState) -> bool:
    moved = now.topology_state is not before.topology_state
    return moved or now.balancing_enabled != before.balancing_enabled


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
