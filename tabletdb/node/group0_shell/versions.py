"""What schema version each peer has applied, as it told us: `system.peers.schema_version`.

Drivers wait for schema agreement after DDL by comparing `system.local` with every row of
`system.peers`, so a peer that has not applied the change yet must show its older version. Each
node tells every member its applied (state id, Raft index) right after an apply that changed
the schema (coalesced: one message per member per event-loop wake-up) and again every second,
so a lost message or a restarted peer is repaired.

A peer that reported an index at or past the entry that made our current version holds
everything we hold: it shows our version, so only peers that lag break agreement (a peer ahead
of us would otherwise show a version this node cannot even name yet). A peer not heard from
lately (down, partitioned) shows null, "unknown": drivers leave such rows out of the
agreement check instead of waiting for a node that cannot answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from tabletdb.net.rpc import RpcNode

log = logging.getLogger(__name__)

VERSION_VERB = "g0.version"
REPEAT_SECONDS = 1.0
SILENT_SECONDS = 3 * REPEAT_SECONDS
"""A peer not heard from for this long is not waited for (it is down or partitioned)."""

AppliedNow = Callable[[], tuple[uuid.UUID, int]]
"""This node's (state id, Raft index it has applied)."""
Members = Callable[[], list[int]]
"""Raft ids of the other members."""


class PeerVersions:
    def __init__(self, rpc: RpcNode, applied: AppliedNow, members: Members) -> None:
        self._rpc = rpc
        self._applied = applied
        self._members = members
        self._reported: dict[int, tuple[uuid.UUID, int]] = {}
        self._heard: dict[int, float] = {}
        self._report_arrived = asyncio.Event()
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._epoch = 0

    def register(self) -> None:
        self._rpc.register(VERSION_VERB, self._on_version)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def changed(self) -> None:
        """Our schema version moved: tell the members soon (once for a burst of applies)."""
        self._dirty.set()

    def view_key(self) -> tuple[int, frozenset[int]]:
        """Changes whenever what some peer shows may have changed (for caches of peer rows)."""
        recent = time.monotonic() - SILENT_SECONDS
        return self._epoch, frozenset(p for p, t in self._heard.items() if t <= recent)

    def version_of(self, raft_id: int, local: uuid.UUID, local_index: int) -> uuid.UUID | None:
        """What `system.peers` shows for the peer: None while it is unknown or silent."""
        reported = self._reported.get(raft_id)
        if reported is None or self._heard.get(raft_id, 0.0) <= time.monotonic() - SILENT_SECONDS:
            return None
        state_id, index = reported
        return local if index >= local_index else state_id

    async def wait_reported(self, index: int, timeout: float) -> None:
        """Until every peer heard from lately has reported applying `index` (or `timeout`).

        A DDL answers its client after this, so the driver's schema-agreement check that
        follows finds the peers on the new version instead of sleeping and asking again.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._lagging(index):
                    self._report_arrived.clear()
                    await self._report_arrived.wait()

    async def settle(self, index: Callable[[], int], timeout: float) -> None:
        """Until no peer heard from lately lags behind `index()` (re-read after every report, as
        this node keeps applying), or `timeout`.

        A read of the schema versions waits for this, so what it shows is a moment when this
        node and its live peers stand on the same version: the driver's agreement check (run at
        a random moment after every SCHEMA_CHANGE event) then no longer lands in the few ms
        between this node's apply and its peers' reports and sleeps 200 ms on the difference.
        Versions are only ever shown as reported; waiting changes when, never what.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._lagging(index()):
                    self._report_arrived.clear()
                    await self._report_arrived.wait()

    def _lagging(self, index: int) -> bool:
        recent = time.monotonic() - SILENT_SECONDS
        members = self._members()
        return any(
            self._heard.get(peer, 0.0) > recent and self._reported[peer][1] < index for peer in members
        )

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(REPEAT_SECONDS):
                    await self._dirty.wait()
            self._dirty.clear()
            state_id, index = self._applied()
            payload = [state_id.bytes, index]
            await asyncio.gather(*(self._rpc.send(peer, VERSION_VERB, payload) for peer in self._members()))

    async def _on_version(self, src: int, payload: Any) -> None:
        state_id, index = uuid.UUID(bytes=bytes(payload[0])), int(payload[1])
        self._heard[src] = time.monotonic()
        if self._reported.get(src) != (state_id, index):
            self._reported[src] = (state_id, index)
            self._epoch += 1
            self._report_arrived.set()
