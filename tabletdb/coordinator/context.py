"""What every coordinator (writes, reads, and later Paxos) shares: placement, liveness, transport.

The query layer may not import the node or net layers, so the internode RPC is the ``Transport``
protocol here (``net.rpc.RpcNode`` satisfies it) and liveness is a plain callable (the node's
failure detector). ``Replicas`` is the one object a coordinator needs: who the replicas of a
token are, which are up, how to reach each (the local one directly, no RPC to self), and the
timeouts from the node's configuration.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from tabletdb.coordinator.placement import Replica, ReplicaPlacement
from tabletdb.replica.local import LocalReplica


class Transport(Protocol):
    """Request/response to another node by its RPC (Raft) id; raises on failure or timeout."""

    async def call(self, peer: int, verb: str, payload: Any = None, timeout: float = 5.0) -> Any: ...


@dataclass(frozen=True)
class Timeouts:
    """Seconds a coordinator waits for replicas (``*_request_timeout_in_ms`` in node.yaml)."""

    write: float = 2.0
    read: float = 5.0
    range: float = 10.0
    counter_write: float = 5.0
    truncate: float = 60.0


RPC_GRACE = 0.5
"""Seconds an RPC may outlive the coordinator's own deadline, so that a replica which never
answers is reported by the coordinator's timer (a timeout), not by the RPC's (a failure)."""


class ReplicaUnreachable(Exception):
    """A remote replica was needed but this node has no transport (a node without internode RPC)."""


class Replicas:
    """Placement + liveness + transport + the local replica: the coordinator's view of the cluster."""

    def __init__(
        self,
        placement: ReplicaPlacement,
        local: LocalReplica,
        transport: Transport | None = None,
        is_up: Callable[[int], bool] | None = None,
        timeouts: Timeouts = Timeouts(),
    ) -> None:
        self.placement = placement
        self.local = local
        self.transport = transport
        self._is_up = is_up
        self.timeouts = timeouts
        self.local_dc = placement.local_dc
        self._background: set[asyncio.Task[Any]] = set()

    def set_timeouts(self, timeouts: Timeouts) -> None:
        """New request timeouts (an operator's live config update); requests that start from
        now on wait this long."""
        self.timeouts = timeouts

    def is_local(self, replica: Replica) -> bool:
        return self.placement.is_local(replica)

    def is_up(self, replica: Replica) -> bool:
        """The failure detector's view; this node is always up to itself."""
        if self.is_local(replica):
            return True
        return self._is_up is None or self._is_up(replica.raft_id)

    def prefer(self, replica: Replica) -> int:
        """Read preference: this node, then its datacenter, then the rest (stable sort keeps order)."""
        if self.is_local(replica):
            return 0
        return 1 if replica.dc == self.local_dc else 2

    async def call(self, replica: Replica, verb: str, payload: Any, timeout: float) -> Any:
        if self.transport is None:
            raise ReplicaUnreachable(f"no internode transport to reach replica {replica.host_id}")
        return await self.transport.call(replica.raft_id, verb, payload, timeout + RPC_GRACE)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run work that must finish even though nobody awaits it (late replica writes)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task
