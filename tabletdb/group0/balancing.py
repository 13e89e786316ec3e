"""The cluster-wide "tablet load balancing enabled" flag, held in group0.

Backup pauses balancing so the tablet maps it walks stay put while it copies files; whatever
moves tablets (the balancer loop, resize, manual moves) must read ``ClusterState.balancing_enabled``
and plan nothing while it is False. The flag is replicated and snapshotted like the rest of the
state, so a pause survives restarts and leader changes until someone resumes balancing — a
backup that crashes leaves it paused on purpose rather than silently resuming mid-copy, and
``tabletdb backup`` resumes it in a ``finally``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BalancingCommand:
    """Set the flag. Idempotent, so a proposal repeated after a lost answer is harmless."""

    command_id: uuid.UUID
    enabled: bool


def balancing_to_plain(c: BalancingCommand) -> dict[str, Any]:
    return {"id": c.command_id.bytes, "enabled": c.enabled}


def balancing_from_plain(d: dict[str, Any]) -> BalancingCommand:
    return BalancingCommand(uuid.UUID(bytes=d["id"]), bool(d["enabled"]))
