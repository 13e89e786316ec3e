"""Migration stages: which replicas take writes and serve reads, and how a migration ends."""

from __future__ import annotations

import uuid

import pytest

from tabletdb.tablets.migration import (
    STAGE_ORDER,
    Migration,
    advance_stage,
    begin_migration,
    read_replicas,
    write_replicas,
)
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica, TransitionKind, TransitionStage

TABLE = uuid.UUID(int=5)
A, B, C = (TabletReplica(uuid.UUID(int=i), 0) for i in (1, 2, 3))


def two_tablets() -> TabletMap:
    return TabletMap.even(TABLE, [(A, B), (A, B)])


def test_stages_route_reads_and_writes() -> None:
    tm = begin_migration(two_tablets(), Migration(TABLE, 1, B, C))
    seen: list[tuple[TransitionStage, tuple[TabletReplica, ...], tuple[TabletReplica, ...]]] = []
    while tm.tablets[1].in_transition:
        t = tm.tablets[1]
        assert t.stage is not None and t.transition is TransitionKind.MIGRATION
        seen.append((t.stage, write_replicas(t), read_replicas(t)))
        tm = advance_stage(tm, 1)
    assert [s for s, _, _ in seen] == list(STAGE_ORDER)
    both = (A, B, C)
    assert seen[0][1:] == ((A, B), (A, B))
    assert seen[1][1:] == (both, (A, B))
    assert seen[2][1:] == (both, (A, B))
    assert seen[3][1:] == (both, (A, C))
    assert seen[4][1:] == ((A, C), (A, C))
    assert tm.tablets[1].replicas == (A, C) and tm.tablets[1].new_replicas is None
    assert tm.tablets[0].replicas == (A, B)


def test_intranode_migration_kind() -> None:
    m = Migration(TABLE, 0, A, A._replace(shard=1))
    assert m.kind is TransitionKind.INTRANODE_MIGRATION
    assert begin_migration(two_tablets(), m).tablets[0].transition is TransitionKind.INTRANODE_MIGRATION


@pytest.mark.parametrize(
    ("migration", "message"),
    [
        (Migration(TABLE, 5, A, C), "has no tablet 5"),
        (Migration(TABLE, 0, C, A), "has no replica"),
        (Migration(TABLE, 0, A, B._replace(shard=1)), "already has a replica"),
        (Migration(TABLE, 0, A, A), "does not move anything"),
    ],
)
def test_invalid_migrations(migration: Migration, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        begin_migration(two_tablets(), migration)


def test_no_second_migration_and_no_advance_when_idle() -> None:
    tm = begin_migration(two_tablets(), Migration(TABLE, 0, B, C))
    with pytest.raises(ValueError, match="already in transition"):
        begin_migration(tm, Migration(TABLE, 0, A, C))
    with pytest.raises(ValueError, match="not migrating"):
        advance_stage(tm, 1)
