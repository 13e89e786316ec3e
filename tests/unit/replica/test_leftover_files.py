"""The start-up sweep of tablet files no map places on this node, on real stores: a rolled-back
target's copy and an old replica's file go (with their side files), a replica's file, a new
replica's file of a transition in flight, both shards of an intranode move and a resize's next
generation stay; what a removed file held does not come back from the commit log."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.leftover_files import leftovers, sweep_leftovers
from tabletdb.replica.storage_service import StorageService, tablet_file
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage
from tests.unit.coordinator.replica_cluster import host, table_def

TABLE = table_def()
ME, OTHER = host(0), host(1)


def _map() -> TabletMap:
    """Tablet 0 here on shard 0; 1 elsewhere; 2 moving here (shard 1) from OTHER; 3 moving between
    this node's shards 0 -> 1."""
    tm = TabletMap.even(TABLE.id, [[TabletReplica(ME, 0)], [TabletReplica(OTHER, 0)]] * 2)
    moving_here = TabletInfo(
        tm.tablets[2].last_token,
        (TabletReplica(OTHER, 0),),
        (TabletReplica(ME, 1),),
        TransitionStage.STREAMING,
        TransitionKind.MIGRATION,
    )
    intranode = TabletInfo(
        tm.tablets[3].last_token,
        (TabletReplica(ME, 0),),
        (TabletReplica(ME, 1),),
        TransitionStage.WRITE_BOTH_READ_OLD,
        TransitionKind.INTRANODE_MIGRATION,
    )
    return tm.with_tablet(2, moving_here).with_tablet(3, intranode)


def _path(root: Path, shard: int, tablet_id: int, generation: int = 0) -> Path:
    return tablet_file(root, TABLE, shard, tablet_id, generation)


def test_only_files_of_the_current_generation_that_the_map_does_not_place_here_are_leftovers() -> None:
    root = Path("/data")
    tm = _map()
    kept = [_path(root, 0, 0), _path(root, 1, 2), _path(root, 0, 3), _path(root, 1, 3)]
    gone = [_path(root, 0, 1), _path(root, 1, 0), _path(root, 0, 2)]
    other = [_path(root, 0, 1, 1), root / "x" / "shard-0" / "tablet-1.db-wal", root / "x" / "tablet-1.db"]
    found = leftovers([*kept, *gone, *other], tm, ME)
    assert sorted(f.path for f in found) == sorted(gone)
    assert {(f.tablet_id, f.shard) for f in found} == {(1, 0), (0, 1), (2, 0)}
    resizing = replace(tm, resize=ResizeState.SPLIT)
    assert leftovers([_path(root, 0, 7, 1), _path(root, 1, 6, 1)], resizing, ME) == []  # the resize's
    assert [f.path for f in leftovers(gone, tm, OTHER)] == [_path(root, 1, 0)]  # OTHER: 1, and 2 until moved


def test_the_sweep_removes_leftovers_and_keeps_what_the_map_places(tmp_path: Path) -> None:
    async def main() -> None:
        tm = _map()
        storage = StorageService(tmp_path, ME, 2, 12, lambda: {TABLE.id: tm})
        key = b"k1"
        write = Mutation(
            key, token_of(key), rows=(RowWrite(b"c", marker=RowMarker(5), cells=(Cell("v", b"x", 5),)),)
        )
        leftover = _path(tmp_path, 0, 1)
        try:
            for path in (_path(tmp_path, 0, 0), _path(tmp_path, 1, 2), _path(tmp_path, 0, 3), leftover):
                storage.create_file(path)
            await storage.open_committer(leftover).apply([write])  # in the commit log, not the file yet
            assert sweep_leftovers(storage, [TABLE]) == [leftover]
            assert not leftover.exists() and not list(leftover.parent.glob("tablet-1.db*"))
            assert _path(tmp_path, 0, 0).exists() and _path(tmp_path, 1, 2).exists()
            assert _path(tmp_path, 0, 3).exists()
            assert sweep_leftovers(storage, [TABLE]) == []
        finally:
            storage.close()
        again = StorageService(tmp_path, ME, 2, 12, lambda: {TABLE.id: tm})  # replays the commit log
        again.close()
        assert not leftover.exists()  # the removal was logged after the write: no resurrection

    asyncio.run(main())


def test_the_only_copy_in_another_shard_is_kept_as_the_storage_service_serves_from_it() -> None:
    """An intranode move rolled back after its rename: the map names shard 0 again, the file sits
    in shard 1 alone, and ``resident_shard`` serves the tablet from there, so the sweep keeps it;
    once the map's shard has a file (or two other copies exist) the others are leftovers."""
    root = Path("/data")
    tm = TabletMap.even(TABLE.id, [[TabletReplica(ME, 0)], [TabletReplica(OTHER, 0)]] * 2)
    assert leftovers([_path(root, 1, 0)], tm, ME) == []
    assert [f.path for f in leftovers([_path(root, 0, 0), _path(root, 1, 0)], tm, ME)] == [_path(root, 1, 0)]
    two_copies = [_path(root, 1, 2), _path(root, 2, 2)]
    assert sorted(f.path for f in leftovers(two_copies, tm, ME)) == sorted(two_copies)
