"""Tablet copy, stream and cleanup between nodes over real loopback sockets and real stores.

Three nodes (RpcNode + StorageService each, in one process); RF=2 tablets. A replica of one
tablet moves to the node without one, the tablet map at the stage the coordinator would ask for
each verb.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tabletdb.dht.murmur3 import token_of
from tabletdb.net.rpc import RemoteError, RpcNode
from tabletdb.node import tablet_streaming
from tabletdb.node.tablet_streaming import TabletStreaming
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.allocation import NodeCapacity, new_tablet_map
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica, TransitionStage
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000
TABLE = table_def()


class Nodes:
    def __init__(self, tmp: Path) -> None:
        nodes = [NodeCapacity(host(i), "dc1", f"r{i}", 1) for i in range(3)]
        self.maps: dict[uuid.UUID, TabletMap] = {TABLE.id: new_tablet_map(TABLE.id, 4, {"dc1": 2}, nodes)}
        self.rpcs = [RpcNode(i + 1) for i in range(3)]
        self.storages = [StorageService(tmp / f"n{i}", host(i), 1, 12, lambda: self.maps) for i in range(3)]
        tables = {TABLE.id: TABLE}
        self.streaming = [TabletStreaming(r, s, tables.get) for r, s in zip(self.rpcs, self.storages)]

    async def start(self) -> None:
        for rpc, verbs in zip(self.rpcs, self.streaming):
            await rpc.start()
            verbs.register()
        for a in self.rpcs:
            for b in self.rpcs:
                if a is not b:
                    a.add_peer(b.node_id, "127.0.0.1", b.port)

    async def stop(self) -> None:
        for rpc in self.rpcs:
            await rpc.stop()
        for storage in self.storages:
            storage.close()

    def tablet_of(self, key: bytes) -> tuple[int, list[int], int]:
        """(tablet id, its replicas as node indexes, the node without one)."""
        tm = self.maps[TABLE.id]
        tablet_id = tm.tablet_id_of(token_of(key))
        owners = [int(r.host.int >> 100) - 1 for r in tm.tablets[tablet_id].replicas]
        (spare,) = set(range(3)) - set(owners)
        return tablet_id, owners, spare

    def move(self, tablet_id: int, source: int, target: int, stage: TransitionStage | None) -> None:
        """The map with the tablet's replica on ``source`` moving to ``target``, at ``stage``."""
        tm = self.maps[TABLE.id]
        if not tm.tablets[tablet_id].in_transition:
            old = next(r for r in tm.tablets[tablet_id].replicas if r.host == host(source))
            tm = begin_migration(tm, Migration(TABLE.id, tablet_id, old, TabletReplica(host(target), 0)))
        while tm.tablets[tablet_id].stage is not stage:
            tm = advance_stage(tm, tablet_id)
        self.maps = {TABLE.id: tm}

    async def write(self, node: int, key: bytes, value: bytes, ts: int) -> None:
        cell = Cell("v", value, ts)
        m = Mutation(key, token_of(key), rows=(RowWrite(b"c", marker=RowMarker(ts), cells=(cell,)),))
        await self.storages[node].committer(TABLE, m.token).apply([m])

    def values(self, node: int, key: bytes) -> list[bytes]:
        data = LocalReplica(self.storages[node]).read_partition(TABLE, key, token_of(key), NOW)
        return [] if data is None else [c.value for r in data.rows for c in r.cells]


@asynccontextmanager
async def nodes(tmp: Path) -> AsyncIterator[Nodes]:
    cluster = Nodes(tmp)
    await cluster.start()
    try:
        yield cluster
    finally:
        await cluster.stop()


def same_tablet_keys(cluster: Nodes, count: int) -> list[bytes]:
    """``count`` keys of the tablet of ``b"k0"``."""
    tm = cluster.maps[TABLE.id]
    want = tm.tablet_id_of(token_of(b"k0"))
    keys = [f"k{i}".encode() for i in range(2000)]
    return [k for k in keys if tm.tablet_id_of(token_of(k)) == want][:count]


def run(body: Any) -> None:
    asyncio.run(body)


def test_an_empty_target_gets_the_source_file_whole(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 20)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for i, key in enumerate(keys):
                await c.write(source, key, b"v%d" % i, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            modes = await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"]
            assert [c.values(target, k) for k in keys] == [[b"v%d" % i] for i in range(len(keys))]

    run(main())


def test_a_file_larger_than_a_chunk_streams_in_order_and_leaves_no_staged_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tablet_streaming, "CHUNK", 4096)  # a tablet file is a few pages more than this

    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 60)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for i, key in enumerate(keys):
                await c.write(source, key, bytes([i]) * 3000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            modes = await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"]
            assert [c.values(target, k) for k in keys] == [[bytes([i]) * 3000] for i in range(len(keys))]
            outgoing = c.storages[source].data_dir / ".outgoing"
            assert not list(outgoing.iterdir())
            assert not c.streaming[source]._outgoing

    run(main())


def test_a_chunk_of_a_closed_copy_is_refused_with_its_transfer_id(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 1)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            await c.write(source, keys[0], b"v", 10)
            rpc = c.rpcs[target]
            ask = [TABLE.id.bytes, tablet_id]
            transfer, size = await rpc.call(source + 1, tablet_streaming.VERB_TABLET_COPY_OPEN, ask)
            assert size > 0
            assert await rpc.call(source + 1, tablet_streaming.VERB_TABLET_COPY_CLOSE, [transfer])
            with pytest.raises(RemoteError, match=transfer):
                await rpc.call(source + 1, tablet_streaming.VERB_TABLET_COPY_READ, [transfer, 0, 10])

    run(main())


def test_a_target_that_took_writes_merges_the_image_last_write_wins(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            a, b, newer_on_target, only_on_target = same_tablet_keys(c, 4)
            tablet_id, (source, other), target = c.tablet_of(a)
            c.move(tablet_id, source, target, TransitionStage.WRITE_BOTH_READ_OLD)
            await c.write(source, a, b"old", 10)
            await c.write(source, b, b"kept", 10)
            await c.write(source, newer_on_target, b"stale", 10)
            await c.write(target, newer_on_target, b"fresh", 20)  # a write while both sets are written
            await c.write(target, only_on_target, b"mine", 20)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            # asked of the target by another node (the coordinator), the source is a third node
            modes = await c.streaming[other].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["rows"]
            got = [c.values(target, k) for k in (a, b, newer_on_target, only_on_target)]
            assert got == [[b"old"], [b"kept"], [b"fresh"], [b"mine"]]

    run(main())


def test_a_rebuild_merges_every_source(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            first, second = same_tablet_keys(c, 2)
            tablet_id, (x, y), target = c.tablet_of(first)
            await c.write(x, first, b"on-x", 10)  # a QUORUM write may have reached one of them only
            await c.write(y, second, b"on-y", 10)
            c.move(tablet_id, x, target, TransitionStage.STREAMING)
            modes = await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [x + 1, y + 1])
            assert modes == ["file", "rows"]
            assert (c.values(target, first), c.values(target, second)) == ([b"on-x"], [b"on-y"])

    run(main())


def test_cleanup_deletes_only_a_replica_that_moved_away(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            (key,) = same_tablet_keys(c, 1)
            tablet_id, (source, _), target = c.tablet_of(key)
            await c.write(source, key, b"v", 10)
            path = c.storages[source].local_files(TABLE)[0].path.parent / f"tablet-{tablet_id}.db"
            assert path.exists()
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            with pytest.raises(RemoteError, match="still served by this node"):
                await c.streaming[target].cleanup(source + 1, TABLE.id, tablet_id, 0)
            assert c.values(source, key) == [b"v"]
            c.move(tablet_id, source, target, TransitionStage.CLEANUP)
            assert await c.streaming[target].cleanup(source + 1, TABLE.id, tablet_id, 0) is True
            assert not path.exists()
            assert await c.streaming[target].cleanup(source + 1, TABLE.id, tablet_id, 0) is False

    run(main())
