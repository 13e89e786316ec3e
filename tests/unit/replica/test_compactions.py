"""Compaction of a running node's tablet files (``replica.compactions``) on a real
StorageService with its commit log: dropped tombstones stay dropped through a crash's replay,
files that move are left alone, and a flush folds everything into the file."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.compactions import Outcome, compact_file, flush_files
from tabletdb.replica.storage_service import LocalFile, StorageService
from tabletdb.schema.options import TableOptions, apply_options
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.migration import Migration, begin_migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000
ME = host(0)
TIMEOUT_GC = apply_options(TableOptions(), {"tombstone_gc": {"mode": "timeout"}, "gc_grace_seconds": 0})
TABLE = replace(table_def(), options=TIMEOUT_GC)
REPAIR_GC = replace(TABLE, options=apply_options(TableOptions(), {"gc_grace_seconds": 0}))


class Node:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.map = TabletMap.even(TABLE.id, [[TabletReplica(ME, 0)]] * 2)
        self.storage = self.open()

    def open(self) -> StorageService:
        return StorageService(self.tmp, ME, 2, 12, lambda: {TABLE.id: self.map})

    def restart(self) -> None:
        """A clean stop (its commit log emptied) and a start."""
        self.storage.close()
        self.storage = self.open()

    def crash_and_restart(self) -> None:
        """A new service on the same files without closing the old one: the commit log is not
        emptied, so the new one replays it (as after kill -9)."""
        self.storage = self.open()

    async def write(self, key: bytes, ts: int) -> None:
        row = RowWrite(b"c", marker=RowMarker(ts), cells=(Cell("v", b"x" * 100, ts),))
        await self.storage.committer(TABLE, token_of(key)).apply([Mutation(key, token_of(key), rows=(row,))])

    async def delete(self, key: bytes, ts: int) -> None:
        await self.storage.committer(TABLE, token_of(key)).apply(
            [Mutation(key, token_of(key), partition_tombstone=ts)]
        )

    def read(self, key: bytes) -> bool:
        return self.storage.store(TABLE, token_of(key)).read_partition(key, NOW) is not None

    def file_of(self, key: bytes) -> Path:
        return self.storage.path_of(TABLE, token_of(key))

    def local(self, key: bytes) -> LocalFile:
        return next(f for f in self.storage.local_files(TABLE) if f.path == self.file_of(key))


def test_dropped_tombstones_stay_dropped_through_a_replay(tmp_path: Path) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        keys = [f"k{i}".encode() for i in range(40)]
        key = keys[0]
        await node.delete(key, ts=10)
        node.restart()  # the tombstone is in the file, no longer in the commit log ...
        await node.write(key, ts=5)  # ... which then logs a write it shadows (an older timestamp)
        for k in keys[1:]:
            await node.write(k, ts=5)
        assert not node.read(key)
        result = await compact_file(node.storage, TABLE, node.local(key), now_s=NOW)
        assert result.outcome is Outcome.COMPACTED and result.after is not None
        assert result.after.tombstones == 0  # the tombstone and the row it shadowed are gone
        node.crash_and_restart()  # the log still holds the shadowed write: it must not come back
        assert not node.read(key)
        assert all(node.read(k) for k in keys[1:])

    asyncio.run(run())


def test_repair_mode_keeps_tombstones_and_drops_what_they_shadow(tmp_path: Path) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        await node.write(b"a", ts=5)
        await node.delete(b"a", ts=10)
        result = await compact_file(node.storage, REPAIR_GC, node.local(b"a"), now_s=NOW)
        assert result.after is not None and result.after.tombstones == 1 and result.after.entries == 1
        node.crash_and_restart()
        assert not node.read(b"a")

    asyncio.run(run())


def test_moving_tablets_and_missing_files_are_left_alone(tmp_path: Path) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        await node.write(b"a", ts=5)
        tablet = node.local(b"a").tablet_id
        assert tablet is not None
        missing = next(f for f in node.storage.local_files(TABLE) if f.tablet_id != tablet)
        assert (await compact_file(node.storage, TABLE, missing, now_s=NOW)).outcome is Outcome.MISSING
        local = node.local(b"a")
        node.map = begin_migration(
            node.map, Migration(TABLE.id, tablet, TabletReplica(ME, 0), TabletReplica(ME, 1))
        )
        assert (await compact_file(node.storage, TABLE, local, now_s=NOW)).outcome is Outcome.SKIPPED

    asyncio.run(run())


def test_flush_writes_deferred_rows_and_empties_the_write_ahead_log(tmp_path: Path) -> None:
    async def run() -> None:
        node = Node(tmp_path)
        for i in range(50):
            await node.write(f"k{i}".encode(), ts=5)
        paths = {node.file_of(f"k{i}".encode()) for i in range(50)}
        assert any(node.storage.open_store(p).deferred_count for p in paths)  # type: ignore[union-attr]
        assert await flush_files(node.storage, paths) == len(paths)
        for path in paths:
            assert node.storage.open_store(path).deferred_count == 0  # type: ignore[union-attr]
            assert Path(f"{path}-wal").stat().st_size == 0

    asyncio.run(run())
