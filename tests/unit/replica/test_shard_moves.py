"""A tablet replica moved between two shards of one node (``replica.shard_moves``) on a real
StorageService: the data follows the file through every stage and a restart, writes after the
move land in the new shard, and the move refuses what a stale coordinator could ask."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tabletdb.cql.errors import InvalidRequest
from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.shard_moves import ShardMoveBusy, move_between_shards
from tabletdb.replica.storage_service import StorageService, tablet_file
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionStage
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000
TABLE = table_def()
ME = host(0)


class Node:
    """One node with two shards holding every tablet of TABLE on shard 0."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.map = TabletMap.even(TABLE.id, [[TabletReplica(ME, 0)]] * 4)
        self.storage = self.open()

    def open(self) -> StorageService:
        return StorageService(self.tmp, ME, 2, 12, lambda: {TABLE.id: self.map})

    def restart(self) -> None:
        self.storage.close()
        self.storage = self.open()

    def to_stage(self, tablet_id: int, stage: TransitionStage | None) -> None:
        tm = self.map
        if not tm.tablets[tablet_id].in_transition:
            move = Migration(TABLE.id, tablet_id, TabletReplica(ME, 0), TabletReplica(ME, 1))
            tm = begin_migration(tm, move)
        while tm.tablets[tablet_id].stage is not stage:
            tm = advance_stage(tm, tablet_id)
        self.map = tm

    async def write(self, key: bytes, value: bytes, ts: int) -> None:
        cell = Cell("v", value, ts)
        m = Mutation(key, token_of(key), rows=(RowWrite(b"c", marker=RowMarker(ts), cells=(cell,)),))
        await self.storage.committer(TABLE, m.token).apply([m])

    def read(self, key: bytes) -> bytes | None:
        data = self.storage.store(TABLE, token_of(key)).read_partition(key, NOW)
        if data is None or not data.rows:
            return None
        return data.rows[0].cells_of("v")[0].value

    def file(self, tablet_id: int, shard: int) -> Path:
        return tablet_file(self.tmp, TABLE, shard, tablet_id)


def keys_of(node: Node, tablet_id: int, n: int) -> list[bytes]:
    out = [k for i in range(2000) if node.map.tablet_id_of(token_of(k := f"k{i}".encode())) == tablet_id]
    return out[:n]


def test_the_data_follows_the_file_into_the_new_shard_through_every_stage_and_a_restart(
    tmp_path: Path,
) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        keys = keys_of(node, 1, 30)
        before, during, after = keys[:10], keys[10:20], keys[20:]
        for k in before:
            await node.write(k, b"before", 1)
        node.to_stage(1, TransitionStage.STREAMING)
        for k in during:  # routed by the map, before the file moved: the old shard
            await node.write(k, b"during", 2)
        assert move_between_shards(node.storage, TABLE, 1, 0, 1) == "moved"
        assert not node.file(1, 0).exists() and node.file(1, 1).exists()
        assert move_between_shards(node.storage, TABLE, 1, 0, 1) == "done before"  # a retry
        for k in after:
            await node.write(k, b"after", 3)
        assert not node.file(1, 0).exists()  # no write recreated the old shard's file
        node.restart()  # the commit log replays nothing into the old path
        assert not node.file(1, 0).exists()
        for stage in (TransitionStage.STREAMING, TransitionStage.WRITE_BOTH_READ_NEW, None):
            node.to_stage(1, stage)
            for keys, value in ((before, b"before"), (during, b"during"), (after, b"after")):
                assert [node.read(k) for k in keys] == [value] * len(keys), stage
        assert node.map.tablets[1].replicas == (TabletReplica(ME, 1),)
        assert [f.shard for f in node.storage.local_files(TABLE) if f.tablet_id == 1] == [1]
        node.storage.close()

    asyncio.run(run())


def test_a_tablet_never_written_gets_an_empty_file_in_the_new_shard(tmp_path: Path) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        node.to_stage(2, TransitionStage.STREAMING)
        assert move_between_shards(node.storage, TABLE, 2, 0, 1) == "empty"
        (key,) = keys_of(node, 2, 1)
        await node.write(key, b"x", 1)
        assert not node.file(2, 0).exists()
        node.to_stage(2, None)
        assert node.read(key) == b"x"
        node.storage.close()

    asyncio.run(run())


def test_a_move_is_refused_off_its_stage_or_for_other_shards_and_waits_for_writes(tmp_path: Path) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        (key,) = keys_of(node, 3, 1)
        await node.write(key, b"x", 1)
        with pytest.raises(InvalidRequest, match="is not moving from shard 0 to shard 1"):
            move_between_shards(node.storage, TABLE, 3, 0, 1)
        node.to_stage(3, TransitionStage.WRITE_BOTH_READ_OLD)
        with pytest.raises(InvalidRequest, match="not reached the streaming stage"):
            move_between_shards(node.storage, TABLE, 3, 0, 1)
        node.to_stage(3, TransitionStage.STREAMING)
        with pytest.raises(InvalidRequest, match="is not moving from shard 1 to shard 0"):
            move_between_shards(node.storage, TABLE, 3, 1, 0)
        pending = node.storage.committer(TABLE, token_of(key)).apply([])
        in_flight = asyncio.ensure_future(node.write(key, b"y", 2))
        await asyncio.sleep(0)
        with pytest.raises(ShardMoveBusy):
            move_between_shards(node.storage, TABLE, 3, 0, 1)
        await asyncio.gather(pending, in_flight)
        assert node.file(3, 0).exists()  # nothing moved while busy
        assert move_between_shards(node.storage, TABLE, 3, 0, 1) == "moved"
        assert node.read(key) == b"y"
        node.storage.close()

    asyncio.run(run())


def test_a_reader_holding_the_write_ahead_log_defers_the_move_and_loses_nothing(tmp_path: Path) -> None:
    """Another connection (a load measurement, a copy being streamed) in a read transaction keeps
    the closed store's WAL from being folded into the file: the move waits, nothing is dropped."""
    import contextlib
    import sqlite3

    async def run() -> None:
        node = Node(tmp_path)
        keys = keys_of(node, 0, 20)
        for k in keys:
            await node.write(k, b"w", 1)
        node.storage.write_deferred()
        node.to_stage(0, TransitionStage.STREAMING)
        old = node.file(0, 0)
        with contextlib.closing(sqlite3.connect(f"file:{old}?mode=ro", uri=True)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
            with pytest.raises(ShardMoveBusy, match="write-ahead log"):
                move_between_shards(node.storage, TABLE, 0, 0, 1)
            assert old.exists() and not node.file(0, 1).exists()
            assert [node.read(k) for k in keys] == [b"w"] * len(keys)  # reopened where it was
            reader.execute("COMMIT")
        assert move_between_shards(node.storage, TABLE, 0, 0, 1) == "moved"
        node.restart()
        node.to_stage(0, None)
        assert [node.read(k) for k in keys] == [b"w"] * len(keys)
        node.storage.close()

    asyncio.run(run())


def roll_back(node: Node, tablet_id: int) -> None:
    """What the coordinator's rollback writes: the tablet's old replicas, no transition."""
    info = node.map.tablets[tablet_id]
    node.map = node.map.with_tablet(tablet_id, TabletInfo(info.last_token, info.replicas))


@pytest.mark.parametrize("moved", [True, False], ids=["after-the-rename", "before-it"])
def test_a_rolled_back_move_keeps_the_data_where_the_file_is_through_a_restart_and_a_new_move(
    tmp_path: Path, moved: bool
) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        keys = keys_of(node, 1, 20)
        for k in keys[:10]:
            await node.write(k, b"before", 1)
        node.to_stage(1, TransitionStage.STREAMING)
        if moved:
            assert move_between_shards(node.storage, TABLE, 1, 0, 1) == "moved"
        roll_back(node, 1)  # the map names shard 0 again
        assert node.map.tablets[1].replicas == (TabletReplica(ME, 0),)
        for k in keys[10:]:
            await node.write(k, b"after", 2)
        where = 1 if moved else 0
        assert node.file(1, where).exists() and not node.file(1, 1 - where).exists()  # no empty twin
        assert [f.path for f in node.storage.local_files(TABLE) if f.tablet_id == 1] == [node.file(1, where)]
        node.restart()
        assert [node.read(k) for k in keys] == [b"before"] * 10 + [b"after"] * 10
        node.to_stage(1, TransitionStage.STREAMING)  # the balancer plans the same move again
        assert move_between_shards(node.storage, TABLE, 1, 0, 1) == ("done before" if moved else "moved")
        node.to_stage(1, None)
        assert not node.file(1, 0).exists() and node.file(1, 1).exists()
        assert [node.read(k) for k in keys] == [b"before"] * 10 + [b"after"] * 10
        node.storage.close()

    asyncio.run(run())
