"""What filling a new view or index from the data its base already holds uses.

The coordinator of CREATE MATERIALIZED VIEW / CREATE INDEX runs the fill (``build``,
``index_writes``) once the schema change is applied. It scans the base through the read
coordinator and writes the derived rows through the write coordinator; where this node is the
base's only replica it first holds the table against the base replica's own derived writes
(``DerivedLocks``, shared with the node's ``ViewUpdates``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabletdb.coordinator.executor import ServerClock
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.views.build_progress import BuildProgress


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
