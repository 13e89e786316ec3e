"""A bulk-load file whose tablet moved while it was merged must not count as loaded everywhere."""

from __future__ import annotations

import uuid

from tabletdb.dht.token import TokenRange
from tabletdb.node.admin.rest_snapshots import moved_during
from tabletdb.tablets.migration import Migration, begin_migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))
TABLE = uuid.UUID(int=99)


def _map() -> TabletMap:
    return TabletMap.even(TABLE, [[TabletReplica(A, 0), TabletReplica(B, 0)]] * 4)


def test_a_quiet_map_is_not_moved() -> None:
    tm = _map()
    assert not moved_during(7, 7, tm, tm.range_of(1))
    assert not moved_during(7, 7, None, TokenRange(-10, 10))


def test_a_topology_version_change_counts_as_moved() -> None:
    tm = _map()
    assert moved_during(7, 8, tm, tm.range_of(1))


def test_a_tablet_in_transition_moves_only_the_ranges_it_overlaps() -> None:
    tm = begin_migration(_map(), Migration(TABLE, 2, TabletReplica(A, 0), TabletReplica(C, 0)))
    assert moved_during(7, 7, tm, tm.range_of(2))
    assert not moved_during(7, 7, tm, tm.range_of(1))
    whole = TokenRange(tm.range_of(0).start, tm.range_of(3).end)
    assert moved_during(7, 7, tm, whole)
