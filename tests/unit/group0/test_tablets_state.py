"""Tablet maps that move with schema changes: the incremental planner and load index agree with
a full scan of the catalog and of every tablet."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.group0.tablets_state import (
    EMPTY_TABLET_MAPS,
    ReplicaLoad,
    TabletMaps,
    _plan_by_scan,
    apply_tablet_changes,
    plan_tablet_changes,
)
from tabletdb.schema.ddl_keyspace import drop_keyspace
from tabletdb.schema.ddl_table import drop_table
from tabletdb.schema.model import Catalog
from tabletdb.tablets.allocation import NodeCapacity
from tabletdb.tablets.count import SizingConfig
from tests.unit.schema.helpers import apply, with_keyspace, with_table

HOSTS = [uuid.UUID(int=i << 64) for i in (1, 2, 3)]
SIZING = SizingConfig()
TABLETS_KS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 2}, "tablets": {"initial": 2}}
VNODES_KS = {"replication": {"class": "NetworkTopologyStrategy", "dc1": 2}, "tablets": {"enabled": False}}

steps = st.lists(
    st.tuples(
        st.sampled_from(["create", "drop", "drop_ks"]), st.sampled_from(["tk", "vn"]), st.integers(0, 5)
    ),
    max_size=40,
)


def _nodes(load: ReplicaLoad, maps: TabletMaps) -> list[NodeCapacity]:
    return load.cluster_capacity([(h, "dc1", "rack1", 2) for h in HOSTS], maps)


def _brute_load(maps: TabletMaps) -> dict[tuple[uuid.UUID, int], int]:
    total: dict[tuple[uuid.UUID, int], int] = {}
    for tablet_map in maps.values():
        for replica, count in tablet_map.replica_load().items():
            total[replica] = total.get(replica, 0) + count
    return total


def _step(catalog: Catalog, action: str, ks: str, n: int) -> Catalog:
    if catalog.keyspace(ks) is None:
        return with_keyspace(catalog, ks, **(TABLETS_KS if ks == "tk" else VNODES_KS))
    if action == "create" and catalog.table(ks, f"t{n}") is None:
        return with_table(catalog, f"t{n}", keyspace=ks)
    if action == "drop" and catalog.table(ks, f"t{n}") is not None:
        return apply(catalog, drop_table(catalog, ks, f"t{n}"))
    if action == "drop_ks":
        return apply(catalog, drop_keyspace(catalog, ks))
    return catalog


@settings(max_examples=60, deadline=None)
@given(steps)
def test_incremental_plan_matches_a_full_scan(actions: list[tuple[str, str, int]]) -> None:
    catalog = Catalog()
    maps = EMPTY_TABLET_MAPS
    load = ReplicaLoad()
    for action, ks, n in actions:
        after = _step(catalog, action, ks, n)
        nodes = _nodes(load, maps)
        assert load.of(maps) == _brute_load(maps)
        changes = plan_tablet_changes(catalog, after, maps, nodes, SIZING)
        expected = _plan_by_scan(after, maps, nodes, SIZING)
        assert sorted(changes, key=lambda c: c.table_id.bytes) == sorted(
            expected, key=lambda c: c.table_id.bytes
        )
        catalog, maps = after, apply_tablet_changes(maps, changes)
    tablet_tables = {t.id for t in (catalog.keyspace("tk").tables.values() if catalog.keyspace("tk") else ())}
    assert set(maps) == tablet_tables


def test_a_table_left_without_a_map_is_repaired_by_the_next_change() -> None:
    catalog = with_table(with_keyspace(None, "tk", **TABLETS_KS), "t0", keyspace="tk")
    load = ReplicaLoad()
    after = with_table(catalog, "t1", keyspace="tk")
    changes = plan_tablet_changes(catalog, after, EMPTY_TABLET_MAPS, _nodes(load, EMPTY_TABLET_MAPS), SIZING)
    assert {c.table_id for c in changes} == set(after.keyspaces["tk"].tables[n].id for n in ("t0", "t1"))
    assert all(c.tablet_map is not None for c in changes)


def test_new_tables_go_to_the_shards_with_the_fewest_replicas() -> None:
    catalog = with_keyspace(None, "tk", **TABLETS_KS)
    maps = EMPTY_TABLET_MAPS
    load = ReplicaLoad()
    for n in range(6):
        after = with_table(catalog, f"t{n}", keyspace="tk")
        maps = apply_tablet_changes(
            maps, plan_tablet_changes(catalog, after, maps, _nodes(load, maps), SIZING)
        )
        catalog = after
    counts = _brute_load(maps)
    assert load.of(maps) == counts
    assert max(counts.values()) - min(counts.values()) <= 2, counts


def test_index_entries_tables_are_counted_incrementally_and_exactly() -> None:
    from tabletdb.group0.tablets_state import _tablet_table_count
    from tabletdb.schema.index_table import index_tables
    from tabletdb.schema.indexes import create_index

    def brute(catalog: Catalog) -> int:
        ks = catalog.keyspaces["tk"]
        return len(ks.tables) + len(ks.views) + sum(len(index_tables(t)) for t in ks.tables.values())

    catalog = with_keyspace(None, "tk", **TABLETS_KS)
    for n in range(4):
        catalog = with_table(catalog, f"t{n}", keyspace="tk")
        assert _tablet_table_count(catalog) == brute(catalog)
    catalog = apply(catalog, create_index(catalog, "tk", "t1", "i1", "v", table_id=uuid.uuid4()))
    assert _tablet_table_count(catalog) == brute(catalog) == 5
    catalog = apply(catalog, drop_table(catalog, "tk", "t1"))
    assert _tablet_table_count(catalog) == brute(catalog) == 3
