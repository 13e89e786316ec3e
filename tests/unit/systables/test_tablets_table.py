"""``system.tablets`` shows a tablet in transition: its stage, its kind and its new replicas."""

from __future__ import annotations

import uuid

from tabletdb.schema.model import Catalog
from tabletdb.systables.tablets import tablets_rows
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

TABLE = uuid.UUID(int=7)
A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))


def test_a_moving_tablet_shows_stage_transition_and_new_replicas() -> None:
    still = TabletMap.even(TABLE, ((TabletReplica(A, 0), TabletReplica(B, 1)),) * 2)
    moving = begin_migration(still, Migration(TABLE, 1, TabletReplica(A, 0), TabletReplica(C, 1)))
    moving = advance_stage(advance_stage(moving, 1), 1)
    first, second = tablets_rows(Catalog(), {TABLE: moving})
    assert (first["stage"], first["transition"], first["new_replicas"]) == (None, None, None)
    assert first["replicas"] == ((A, 0), (B, 1))
    assert second["stage"] == "streaming" and second["transition"] == "migration"
    assert second["replicas"] == ((A, 0), (B, 1))
    assert second["new_replicas"] == ((C, 1), (B, 1))
