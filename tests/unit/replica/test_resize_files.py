"""A split and a merge on one replica's real stores: the data after each cut-over equals the data
before, including writes taken while the copy ran (write-both), and old generations are removed."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.resize_files import StaleFiles, copy_into_next, generation_of, stale_files
from tabletdb.replica.storage_service import StorageService
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000
TABLE = table_def()
KEYS = [f"k{i}".encode() for i in range(400)]


class Replica:
    def __init__(self, tmp: Path) -> None:
        me = TabletReplica(host(0), 0)
        self.map = TabletMap.even(TABLE.id, [[me]] * 4)
        self.storage = StorageService(tmp, host(0), 1, 12, lambda: {TABLE.id: self.map})

    async def write(self, key: bytes, value: bytes, ts: int) -> None:
        m = Mutation(
            key, token_of(key), rows=(RowWrite(b"c", marker=RowMarker(ts), cells=(Cell("v", value, ts),)),)
        )
        await self.storage.committer(TABLE, m.token).apply([m])

    def read_all(self) -> dict[bytes, list[bytes]]:
        local = LocalReplica(self.storage)
        out = {}
        for key in KEYS:
            data = local.read_partition(TABLE, key, token_of(key), NOW)
            out[key] = [] if data is None else [c.value for r in data.rows for c in r.cells]
        return out

    def generations(self) -> set[int]:
        files = self.storage.data_dir.glob("*/*/shard-*/tablet-*.db")
        return {g for p in files if (found := generation_of(p)) is not None for g in [found[1]]}


async def resize(replica: Replica, kind: ResizeState, round_: int) -> None:
    """Prepare, write while copying (some overwrites, some new keys), cut over."""
    replica.map = replace(replica.map, resize=kind)
    seq = replica.map.resize_seq_number
    writes = [replica.write(k, b"r%d-%d" % (round_, i), 100 + round_) for i, k in enumerate(KEYS[::7])]
    await asyncio.gather(copy_into_next(replica.storage, TABLE, seq, kind), *writes)
    replica.map = replica.map.split() if kind is ResizeState.SPLIT else replica.map.merge()


def test_split_then_merge_keeps_every_write(tmp_path: Path) -> None:
    async def main() -> None:
        r = Replica(tmp_path)
        try:
            for i, key in enumerate(KEYS[:300]):
                await r.write(key, b"v%d" % i, 10)
            expected = r.read_all()
            await resize(r, ResizeState.SPLIT, 1)
            for i, key in enumerate(KEYS[::7]):
                expected[key] = [b"r1-%d" % i]
            assert r.map.tablet_count == 8
            assert r.read_all() == expected
            assert r.generations() == {0, 1}
            assert {generation_of(p) for p in stale_files(r.storage, TABLE, r.map)} == {
                (i, 0) for i in range(4)
            }
            sweeper = StaleFiles(r.storage, grace_s=5)
            assert sweeper.sweep([TABLE], now=0.0) == []  # garbage, but not for long enough yet
            assert len(sweeper.sweep([TABLE], now=6.0)) == 4
            assert r.generations() == {1}
            assert r.read_all() == expected

            await resize(r, ResizeState.MERGE, 2)
            for i, key in enumerate(KEYS[::7]):
                expected[key] = [b"r2-%d" % i]
            assert r.map.tablet_count == 4 and r.map.resize_seq_number == 2
            assert r.read_all() == expected
            StaleFiles(r.storage, grace_s=0).sweep([TABLE])
            assert r.generations() == {2}
        finally:
            r.storage.close()

    asyncio.run(main())


def test_a_rolled_back_split_leaves_its_new_files_as_garbage(tmp_path: Path) -> None:
    async def main() -> None:
        r = Replica(tmp_path)
        try:
            for i, key in enumerate(KEYS[:50]):
                await r.write(key, b"v%d" % i, 10)
            expected = r.read_all()
            r.map = replace(r.map, resize=ResizeState.SPLIT)
            await r.write(KEYS[0], b"during", 20)  # written both ways
            expected[KEYS[0]] = [b"during"]
            assert stale_files(r.storage, TABLE, r.map) == []
            r.map = replace(r.map, resize=ResizeState.NONE)  # rolled back
            assert r.read_all() == expected
            stale = stale_files(r.storage, TABLE, r.map)
            assert stale and {(generation_of(p) or (0, 0))[1] for p in stale} == {1}
            StaleFiles(r.storage, grace_s=0).sweep([TABLE])
            assert r.generations() == {0}
            assert r.read_all() == expected
        finally:
            r.storage.close()

    asyncio.run(main())


def test_a_copy_for_a_stale_resize_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        r = Replica(tmp_path)
        try:
            try:
                await copy_into_next(r.storage, TABLE, 0, ResizeState.SPLIT)
            except Exception as exc:
                assert "is not being split at generation 0" in str(exc)
            else:
                raise AssertionError("a copy with no resize prepared was accepted")
        finally:
            r.storage.close()

    asyncio.run(main())


def test_ids() -> None:
    assert generation_of(Path("tablet-3.db")) == (3, 0)
    assert generation_of(Path("tablet-3.g2.db")) == (3, 2)
    assert generation_of(Path("tablet-3.db-wal")) is None


def test_writes_during_prepare_copy_and_cut_over_all_read_back(tmp_path: Path) -> None:
    """A writer that never stops, through prepare, copy and cut-over: each write reads back at
    once and still after (both halves of a splitting tablet get their own writes)."""

    async def main() -> None:
        r = Replica(tmp_path)
        stop = asyncio.Event()
        local = LocalReplica(r.storage)

        def found(key: bytes) -> bool:
            return local.read_partition(TABLE, key, token_of(key), NOW) is not None

        async def writer() -> list[bytes]:
            written: list[bytes] = []
            while not stop.is_set():
                key = b"w%d" % len(written)
                await r.write(key, b"x", 50)
                assert found(key), f"{key!r} not read back right after its write"
                written.append(key)
                await asyncio.sleep(0)
            return written

        try:
            for i, key in enumerate(KEYS[:300]):
                await r.write(key, b"v%d" % i, 10)
            task = asyncio.create_task(writer())
            await asyncio.sleep(0.2)
            r.map = replace(r.map, resize=ResizeState.SPLIT)
            await asyncio.sleep(0.2)
            await copy_into_next(r.storage, TABLE, 0, ResizeState.SPLIT)
            await asyncio.sleep(0.2)
            r.map = r.map.split()
            await asyncio.sleep(0.2)
            stop.set()
            written = await task
            assert len(written) > 20
            assert [k for k in written if not found(k)] == []
        finally:
            r.storage.close()

    asyncio.run(main())
