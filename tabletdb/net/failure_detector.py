"""Which group0 members answer: periodic pings over the internode RPC, reported as UP/DOWN.

Drivers learn about a peer going down or coming back from STATUS_CHANGE events; this is the
source of those. It is deliberately simple (ScyllaDB uses a similar direct ping, not gossip
phi-accrual): a member is DOWN after `MISSES_FOR_DOWN` consecutive unanswered pings and UP on
the first answer. Members start as UP, so a freshly started node does not announce its peers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from tabletdb.group0.topology import NodeRecord
from tabletdb.net.rpc import RpcError, RpcNode

log = logging.getLogger(__name__)

PING_VERB = "g0.ping"
PING_INTERVAL = 1.0
MISSES_FOR_DOWN = 2

Members = Callable[[], list[NodeRecord]]
Transition = Callable[[NodeRecord, bool], None]


class FailureDetector:
    def __init__(self, rpc: RpcNode, members: Members, on_change: Transition) -> None:
        self._rpc = rpc
        self._members = members
        self._on_change = on_change
        self._misses: dict[int, int] = {}
        self._down: set[int] = set()
        self._task: asyncio.Task[None] | None = None

    def register(self) -> None:
        self._rpc.register(PING_VERB, self._on_ping)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def is_up(self, raft_id: int) -> bool:
        return raft_id not in self._down

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(PING_INTERVAL)
            members = self._members()
            await asyncio.gather(*(self._probe(m) for m in members))

    async def _probe(self, member: NodeRecord) -> None:
        try:
            await self._rpc.call(member.raft_id, PING_VERB, None, timeout=PING_INTERVAL)
        except (RpcError, OSError):
            self._misses[member.raft_id] = misses = self._misses.get(member.raft_id, 0) + 1
            if misses >= MISSES_FOR_DOWN and member.raft_id not in self._down:
                self._down.add(member.raft_id)
                log.info("node DOWN host_id=%s address=%s", member.host_id, member.address)
                self._on_change(member, False)
            return
        self._misses[member.raft_id] = 0
        if member.raft_id in self._down:
            self._down.discard(member.raft_id)
            log.info("node UP host_id=%s address=%s", member.host_id, member.address)
            self._on_change(member, True)

    async def _on_ping(self, src: int, payload: Any) -> bool:
        return True
