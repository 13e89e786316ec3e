"""TOPOLOGY_CHANGE events (NEW_NODE, REMOVED_NODE) from group0's membership, for drivers.

Drivers keep their host list from ``system.peers`` and refresh it only when told: a node that
joined stays unused, and one that left stays in their metadata (and their pools), until an
event arrives. As in ScyllaDB, a node is announced once it is in the ring — a member whose
topology state serves data (normal, or on its way out) — and removed once it is not (left, or
gone from group0's members); an address change is a removal of the old address and a new node
at the new one. This node never announces itself.

``ring_changes`` is pure; ``TopologyEvents`` diffs every state group0 applies against the last
one it saw, so whichever command moved a node (a join, the coordinator's step, a snapshot
installed from the leader) the event follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.topology.states import NodeState

log = logging.getLogger(__name__)

NEW_NODE = "NEW_NODE"
REMOVED_NODE = "REMOVED_NODE"
IN_RING = frozenset({NodeState.NORMAL, NodeState.DECOMMISSIONING, NodeState.REMOVING, NodeState.REBUILDING})
WAKE_INTERVAL = 1.0
"""Also look without a wake-up: a change applied between two waits is caught by the next look."""


def in_ring(state: ClusterState, host: uuid.UUID) -> bool:
    """Whether drivers may see member ``host``: TOPOLOGY_CHANGE announces it and ``system.peers``
    lists it (a joining or replacing node is neither until it is normal, as in ScyllaDB, where
    ``system.peers`` holds token ring members only: a driver would send requests to a node that
    does not serve CQL yet). A member with no topology record predates the coordinator: in."""
    topology_state = state.topology_state
    return host not in topology_state.nodes or topology_state.state_of(host) in IN_RING


def ring_addresses(state: ClusterState, me: uuid.UUID) -> dict[uuid.UUID, str]:
    """Host id -> CQL address of every other member in the ring."""
    return {h: r.rpc_address for h, r in state.topology.members.items() if h != me and in_ring(state, h)}


def ring_changes(before: dict[uuid.UUID, str], after: dict[uuid.UUID, str]) -> list[tuple[str, str]]:
    """(change, address) events that take a driver from ``before``'s ring to ``after``'s."""
    events: list[tuple[str, str]] = []
    for host, address in sorted(before.items()):
        if after.get(host) != address:
            events.append((REMOVED_NODE, address))
    for host, address in sorted(after.items()):
        if before.get(host) != address:
            events.append((NEW_NODE, address))
    return events


class TopologyEvents:
    """Follows group0's applied state and pushes the ring's changes through ``push``."""

    def __init__(
        self,
        me: uuid.UUID,
        state: Callable[[], ClusterState],
        changed: Callable[[], Awaitable[None]],
        push: Callable[[str, str], object],
    ) -> None:
        self._me = me
        self._state = state
        self._changed = changed
        self._push = push

    async def run(self, stop: asyncio.Event) -> None:
        last = self._state()
        ring = ring_addresses(last, self._me)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed(), WAKE_INTERVAL)
            now = self._state()
            if now.topology is last.topology and now.topology_state is last.topology_state:
                continue
            last = now
            new_ring = ring_addresses(now, self._me)
            for change, address in ring_changes(ring, new_ring):
                log.info("topology change event=%s address=%s", change, address)
                self._push(change, address)
            ring = new_ring
