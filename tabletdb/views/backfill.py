"""What filling a new view or index from the data its base already holds uses.

The coordinator of CREATE MATERIALIZED VIEW / CREATE INDEX runs the fill (``build``,
``index_writes``) once the schema change is applied. It scans the base through the read
coordinator and writes the derived rows through the write coordinator; where this node is the
base's only replica it first holds the table against the base replica's own derived writes
(``DerivedLocks``, shared with the node's ``ViewUpdates``). The fill's start and end are
recorded in group0 (``recorder``, ``group0.view_builds``), so every node shows the build state.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from tabletdb.coordinator.executor import ServerClock
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.views.build_progress import BuildProgress

BuildRecorder = Callable[[uuid.UUID, str], Awaitable[None]]
"""Records a view's build status (view table id, STARTED or SUCCESS) cluster-wide."""


@dataclass(frozen=True)
class Backfill:
    """The parts a fill uses, built once by the node's wiring and handed to the processor (the
    coordinator of the DDL), so the fill reaches for nothing else."""

    placement: ReplicaPlacement
    """Whether this node is the base's only replica (the local, locked fill)."""
    locks: DerivedLocks
    """The locks this node's base replica takes for derived writes: the same object."""
    reads: ReadCoordinator
    writes: WriteCoordinator
    clock: ServerClock
    progress: BuildProgress = field(default_factory=BuildProgress)
    """The fills under way, for the build-progress system tables."""
    recorder: BuildRecorder | None = None
    """Where the fill's start and end are recorded (None: a node without group0)."""


async def record_builds(backfill: Backfill, view_ids: Iterable[uuid.UUID], status: str) -> None:
    """Record each view's build status; returns once this node applied them (so a client's next
    read of the status tables, on any node that caught up, sees them)."""
    if backfill.recorder is None:
        return
    for view_id in view_ids:
        await backfill.recorder(view_id, status)
