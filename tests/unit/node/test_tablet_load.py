"""Tablet load statistics between nodes over real loopback sockets and real tablet files.

Three nodes (RpcNode + StorageService + TabletLoadStats each, in one process), RF=2: one node
polls the others, as the topology coordinator does, and gets each tablet's size from the files.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from tabletdb.dht.murmur3 import token_of
from tabletdb.group0.topology import NodeRecord, raft_id_of
from tabletdb.net.rpc import RpcNode
from tabletdb.node.tablet_load import TabletLoadStats
from tabletdb.replica.load_stats import file_bytes
from tabletdb.replica.storage_service import StorageService
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.allocation import NodeCapacity, new_tablet_map
from tabletdb.tablets.tablet_map import TabletMap
from tests.unit.coordinator.replica_cluster import host, table_def

TABLE = table_def()


def record(i: int) -> NodeRecord:
    return NodeRecord(host(i), "127.0.0.1", "127.0.0.1", "dc1", f"r{i}", (), frozenset(), 1)


def test_the_coordinator_gathers_every_tablets_size_from_its_files(tmp_path: Path) -> None:
    async def main() -> None:
        caps = [NodeCapacity(host(i), "dc1", f"r{i}", 1) for i in range(3)]
        maps: dict[uuid.UUID, TabletMap] = {TABLE.id: new_tablet_map(TABLE.id, 4, {"dc1": 2}, caps)}
        rpcs = [RpcNode(raft_id_of(host(i))) for i in range(3)]
        storages = [StorageService(tmp_path / f"n{i}", host(i), 1, 12, lambda: maps) for i in range(3)]
        down: set[uuid.UUID] = set()
        stats = [
            TabletLoadStats(
                host(i),
                storages[i],
                {TABLE.id: TABLE}.get,
                rpcs[i],
                lambda: [record(j) for j in range(3)],
                lambda h: h not in down,
                refresh_s=3600.0,
            )
            for i in range(3)
        ]
        for rpc, s in zip(rpcs, stats):
            await rpc.start()
            s.register()
        for a in rpcs:
            for b in rpcs:
                if a is not b:
                    a.add_peer(b.node_id, "127.0.0.1", b.port)
        try:
            key = b"big"
            tablet = maps[TABLE.id].tablet_id_of(token_of(key))
            owners = [int(r.host.int >> 100) - 1 for r in maps[TABLE.id].tablets[tablet].replicas]
            ts = 1_700_000_000_000_000
            row = RowWrite(b"c", marker=RowMarker(ts), cells=(Cell("v", b"x" * 300_000, ts),))
            m = Mutation(key, token_of(key), rows=(row,))
            for i in owners:
                await storages[i].committer(TABLE, m.token).apply([m])
                storages[i].write_deferred()

            sizes, missing = await stats[0].cluster()
            assert missing == frozenset()
            assert set(sizes) == {(TABLE.id, t) for t in range(4)}
            big = sizes[(TABLE.id, tablet)]
            assert big >= 300_000
            assert all(size < big for (_, t), size in sizes.items() if t != tablet)
            path = next(f.path for f in storages[owners[0]].local_files(TABLE) if f.tablet_id == tablet)
            assert big >= file_bytes(path)

            # a down peer is reported, not guessed; its tablets still come from the other replica
            down.add(host(owners[0]))
            sizes, missing = await stats[owners[1]].cluster()
            assert missing == {host(owners[0])}
            assert sizes[(TABLE.id, tablet)] >= 300_000
        finally:
            for rpc in rpcs:
                await rpc.stop()
            for storage in storages:
                storage.close()

    asyncio.run(main())


def test_a_node_remeasures_when_the_tablet_maps_change(tmp_path: Path) -> None:
    async def main() -> None:
        caps = [NodeCapacity(host(0), "dc1", "r0", 1)]
        maps: dict[uuid.UUID, TabletMap] = {TABLE.id: new_tablet_map(TABLE.id, 2, {"dc1": 1}, caps)}
        current = [maps]
        storage = StorageService(tmp_path / "n0", host(0), 1, 12, lambda: current[0])
        stats = TabletLoadStats(host(0), storage, {TABLE.id: TABLE}.get, None, list, lambda h: True, 3600.0)
        try:
            assert set(await stats.local()) == {(TABLE.id, 0), (TABLE.id, 1)}
            current[0] = {TABLE.id: new_tablet_map(TABLE.id, 4, {"dc1": 1}, caps)}  # a split, say
            assert set(await stats.local()) == {(TABLE.id, t) for t in range(4)}
        finally:
            storage.close()

    asyncio.run(main())


def test_a_replica_weighs_what_its_copy_weighs_whatever_its_write_ahead_log_holds(tmp_path: Path) -> None:
    """Overwriting one row grows the WAL file with old page versions; the streamed copy (no WAL)
    of the same data must weigh about the same, or the balancer would chase the difference."""
    from tabletdb.replica.load_stats import stat_bytes
    from tabletdb.storage.snapshot_files import snapshot_to

    async def main() -> None:
        caps = [NodeCapacity(host(0), "dc1", "r0", 1)]
        maps = {TABLE.id: new_tablet_map(TABLE.id, 1, {"dc1": 1}, caps)}
        storage = StorageService(tmp_path / "n0", host(0), 1, 12, lambda: maps)
        try:
            key = b"k"
            for ts in range(1, 9):
                row = RowWrite(b"c", marker=RowMarker(ts), cells=(Cell("v", bytes([ts]) * 200_000, ts),))
                mutation = Mutation(key, token_of(key), rows=(row,))
                await storage.committer(TABLE, mutation.token).apply([mutation])
                storage.write_deferred()
            (local,) = storage.local_files(TABLE)
            copy = tmp_path / "copy.db"
            snapshot_to(local.path, copy)
            assert stat_bytes(local.path) > 2 * stat_bytes(copy)  # the WAL file holds old versions
            assert abs(file_bytes(local.path) - file_bytes(copy)) <= 0.1 * file_bytes(copy)
            assert file_bytes(copy) >= 200_000
        finally:
            storage.close()

    asyncio.run(main())
