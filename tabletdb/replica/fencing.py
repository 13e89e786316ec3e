"""Fencing of the data plane by topology version: a write routed by an old topology is refused.

The topology coordinator raises group0's ``fence_version`` to the version a barrier confirmed
every member has seen (``topology.coordinator.barrier_members``), before it stops counting on
the old replica sets (a migration's old replica is cleaned up, a left node's data dropped). A
coordinator that still routes by an older version (it was partitioned, or is a node that left)
would write to replicas that no longer serve reads, and the write would be acknowledged yet
lost. So every data-plane write carries the version its replicas were chosen by, and a replica
refuses one below its own fence. Pure.
"""

from __future__ import annotations


class StaleTopology(Exception):
    """A write routed by a topology version older than this replica's fence."""


def check_fence(version: int, fence: int, sender: int) -> None:
    """Raise ``StaleTopology`` if a write routed by ``version`` is below ``fence``."""
    if version < fence:
        raise StaleTopology(
            f"write from node {sender:#x} refused: it was routed by topology version {version}, "
            f"older than this replica's fence version {fence}; the coordinator must catch up "
            "with group0 (a node that left the cluster can no longer write)"
        )
