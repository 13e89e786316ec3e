"""Tablet migration as a sequence of TabletMap values, one per stage.

Each stage is a separate group0 state change so a new topology coordinator can resume a
migration where the old one stopped: writes go to both replica sets before any data is copied,
reads switch only after streaming, and the old replica is cleaned up last. This module only
computes the next map; streaming and cleanup are done by the node between stages.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage

STAGE_ORDER = (
    TransitionStage.ALLOW_WRITE_BOTH_READ_OLD,
    TransitionStage.WRITE_BOTH_READ_OLD,
    TransitionStage.STREAMING,
    TransitionStage.WRITE_BOTH_READ_NEW,
    TransitionStage.USE_NEW,
    TransitionStage.CLEANUP,
    TransitionStage.END_MIGRATION,
)


@dataclass(frozen=True, slots=True)
class Migration:
    """Move one replica of one tablet: to another node, or to another shard of the same node."""

    table_id: uuid.UUID
    tablet_id: int
    source: TabletReplica
    target: TabletReplica

    @property
    def kind(self) -> TransitionKind:
        if self.source.host == self.target.host:
            return TransitionKind.INTRANODE_MIGRATION
        return TransitionKind.MIGRATION


def begin_migration(tm: TabletMap, migration: Migration) -> TabletMap:
    """The map with the migration started (first stage, new replica set recorded)."""
    tablet = tm.tablets[migration.tablet_id] if 0 <= migration.tablet_id < tm.tablet_count else None
    if tablet is None:
        raise ValueError(f"table {tm.table_id} has no tablet {migration.tablet_id}")
    if tablet.in_transition:
        raise ValueError(f"tablet {migration.tablet_id} of table {tm.table_id} is already in transition")
    if migration.source not in tablet.replicas:
        raise ValueError(
            f"tablet {migration.tablet_id} of table {tm.table_id} has no replica {migration.source}; "
            f"its replicas are {list(tablet.replicas)}"
        )
    if migration.source == migration.target:
        raise ValueError(
            f"migration of tablet {migration.tablet_id} of table {tm.table_id} does not move anything"
        )
    others = [r for r in tablet.replicas if r != migration.source]
    if migration.kind is TransitionKind.MIGRATION and any(r.host == migration.target.host for r in others):
        raise ValueError(
            f"tablet {migration.tablet_id} of table {tm.table_id} "
            f"already has a replica on {migration.target.host}"
        )
    new_replicas = tuple(migration.target if r == migration.source else r for r in tablet.replicas)
    started = TabletInfo(tablet.last_token, tablet.replicas, new_replicas, STAGE_ORDER[0], migration.kind)
    return tm.with_tablet(migration.tablet_id, started)


def advance_stage(tm: TabletMap, tablet_id: int) -> TabletMap:
    """The map with the tablet's migration moved one stage on; after the last stage, finished."""
    tablet = tm.tablets[tablet_id]
    if tablet.stage is None or tablet.new_replicas is None:
        raise ValueError(f"tablet {tablet_id} of table {tm.table_id} is not migrating")
    index = STAGE_ORDER.index(tablet.stage)
    if index + 1 < len(STAGE_ORDER):
        moved = TabletInfo(
            tablet.last_token, tablet.replicas, tablet.new_replicas, STAGE_ORDER[index + 1], tablet.transition
        )
    else:
        moved = TabletInfo(tablet.last_token, tablet.new_replicas)
    return tm.with_tablet(tablet_id, moved)


_OLD, _BOTH, _NEW = "old", "both", "new"

# stage -> (who receives writes, who serves reads). The first stage only announces the
# transition, so that every coordinator knows of it before writes start going to both sets.
_SELECTORS = {
    TransitionStage.ALLOW_WRITE_BOTH_READ_OLD: (_OLD, _OLD),
    TransitionStage.WRITE_BOTH_READ_OLD: (_BOTH, _OLD),
    TransitionStage.STREAMING: (_BOTH, _OLD),
    TransitionStage.WRITE_BOTH_READ_NEW: (_BOTH, _NEW),
    TransitionStage.USE_NEW: (_NEW, _NEW),
    TransitionStage.CLEANUP: (_NEW, _NEW),
    TransitionStage.END_MIGRATION: (_NEW, _NEW),
}


def _select(tablet: TabletInfo, which: int) -> tuple[TabletReplica, ...]:
    if tablet.stage is None or tablet.new_replicas is None:
        return tablet.replicas
    selector = _SELECTORS[tablet.stage][which]
    if selector == _OLD:
        return tablet.replicas
    if selector == _NEW:
        return tablet.new_replicas
    return tuple(dict.fromkeys(tablet.replicas + tablet.new_replicas))


def write_replicas(tablet: TabletInfo) -> tuple[TabletReplica, ...]:
    """Replicas that must receive writes in the tablet's current stage."""
    return _select(tablet, 0)


def read_replicas(tablet: TabletInfo) -> tuple[TabletReplica, ...]:
    """Replicas that serve reads in the tablet's current stage."""
    return _select(tablet, 1)
