"""The topology coordinator's barrier: has this member applied everything group0 committed?

Before the coordinator switches who serves a tablet (and then raises the fence) it asks every
live member ``topology.barrier``: the member does a Raft read barrier (everything committed
before the question is applied here once it returns) and answers the topology version it then
has. A member that answers N routes by version N or later from then on, so a fence at N cuts
off only nodes that did not answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.raft import RaftDriver

VERB_TOPOLOGY_BARRIER = "topology.barrier"

BARRIER_TIMEOUT = 10.0
"""Seconds a member spends on its read barrier before it answers with an error."""


class TopologyBarrier:
    """Serves the barrier on ``rpc`` and asks it of members (this node itself without RPC)."""

    def __init__(self, rpc: RpcNode, driver: RaftDriver, version: Callable[[], int]) -> None:
        """``version``: the topology version of the group0 state this node has applied."""
        self.rpc = rpc
        self.driver = driver
        self.version = version

    def register(self) -> None:
        self.rpc.register(VERB_TOPOLOGY_BARRIER, self._serve)

    async def ask(self, member: int, timeout: float = BARRIER_TIMEOUT) -> int:
        """The topology version ``member`` has applied after a read barrier."""
        if member == self.rpc.node_id:
            return await self._serve(member, None)
        return int(await self.rpc.call(member, VERB_TOPOLOGY_BARRIER, None, timeout + 1.0))

    async def _serve(self, src: int, payload: Any) -> int:
        async with asyncio.timeout(BARRIER_TIMEOUT):
            await self.driver.read_barrier()
        return self.version()
