"""Tablet copy, stream and cleanup between nodes over real loopback sockets and real stores.

Three nodes (RpcNode + StorageService each, in one process); RF=2 tablets. A replica of one
tablet moves to the node without one, the tablet map at the stage the coordinator would ask for
each verb. Images go over a dedicated connection (sendfile) unless the nodes must talk TLS, when
they go in RPC chunks over TLS (``tls=True``: real certificates, real TLS on loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import uvloop

from tabletdb.dht.murmur3 import token_of
from tabletdb.net.dedicated import TransferCorrupt, dial, send_trailer
from tabletdb.net.file_bytes import digest_of
from tabletdb.net.handshake import TrustAll
from tabletdb.net.rpc import InjectedFailure, InternodeTls, PeerUnreachable, RemoteError, RpcNode
from tabletdb.net.tls import TlsFiles, client_context, server_context
from tabletdb.node import tablet_streaming
from tabletdb.node.tablet_streaming import TabletStreaming
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.storage.images import pinned_image
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.allocation import NodeCapacity, new_tablet_map
from tabletdb.tablets.migration import Migration, advance_stage, begin_migration
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica, TransitionStage
from tests.harness.certs import TestCA
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000
TABLE = table_def()


class _TlsEverywhere(TrustAll):
    """Every peer at its word, but every connection must be TLS (``internode_encryption: all``)."""

    def must_encrypt(self, peer: int) -> bool:
        return True


class Nodes:
    def __init__(self, tmp: Path, tls: bool = False) -> None:
        nodes = [NodeCapacity(host(i), "dc1", f"r{i}", 1) for i in range(3)]
        self.maps: dict[uuid.UUID, TabletMap] = {TABLE.id: new_tablet_map(TABLE.id, 4, {"dc1": 2}, nodes)}
        self.rpcs = [RpcNode(i + 1) for i in range(3)]
        if tls:
            ca = TestCA(tmp / "ca")
            for i in range(3):
                pair = ca.issue(f"n{i}")
                files = TlsFiles(
                    "server_encryption_options", pair.certificate, pair.keyfile, ca.certificate, True
                )
                tls_config = InternodeTls(server_context(files), client_context(files), 0, False)
                self.rpcs[i] = RpcNode(i + 1, authority=_TlsEverywhere(i + 1), tls=tls_config)
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

    def dial_tls_of(self, caller: int, callee: int) -> None:
        """One machine: ``caller`` dials ``callee``'s TLS port (a real cluster shares one port)."""
        self.rpcs[caller].tls_port = self.rpcs[callee].tls_port

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
async def nodes(tmp: Path, tls: bool = False) -> AsyncIterator[Nodes]:
    cluster = Nodes(tmp, tls)
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
    """On uvloop, as a node runs (its transports and sockets differ from asyncio's own)."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(body)


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


def streamed_via(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage().split(" via=")[1].split()[0]
        for r in caplog.records
        if "tablet streamed" in r.getMessage()
    ]


def log_frames_streamed(caplog: pytest.LogCaptureFixture) -> list[int]:
    """Bytes of source log frames each stream carried (and the target replayed)."""
    return [
        int(r.getMessage().split(" log_bytes=")[1].split()[0])
        for r in caplog.records
        if "tablet streamed" in r.getMessage()
    ]


def test_with_internode_tls_the_image_goes_in_rpc_chunks_in_order_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tablet_streaming, "CHUNK", 4096)  # a tablet file is a few pages more than this
    caplog.set_level(logging.INFO, logger=tablet_streaming.__name__)

    async def main() -> None:
        async with nodes(tmp_path, tls=True) as c:
            keys = same_tablet_keys(c, 60)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            c.dial_tls_of(target, source)
            for i, key in enumerate(keys):
                await c.write(source, key, bytes([i]) * 3000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            modes = await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"]
            assert streamed_via(caplog) == ["pinned-rpc"] and log_frames_streamed(caplog)[0] > 0
            assert [c.values(target, k) for k in keys] == [[bytes([i]) * 3000] for i in range(len(keys))]
            outgoing = c.storages[source].data_dir / ".outgoing"
            assert not list(outgoing.iterdir())
            assert not c.streaming[source]._outgoing
            # a dedicated connection is never plaintext where TLS is required
            with pytest.raises(PeerUnreachable, match="TLS"):
                await dial(c.rpcs[target], source + 1, tablet_streaming.VERB_TABLET_COPY_SEND, ["x"], 5)

    run(main())


def test_without_tls_the_image_goes_over_a_dedicated_connection_and_leaves_nothing_behind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=tablet_streaming.__name__)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 60)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for i, key in enumerate(keys):
                await c.write(source, key, bytes([i]) * 3000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            modes = await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"]
            assert streamed_via(caplog) == ["pinned-sendfile"] and log_frames_streamed(caplog)[0] > 0
            assert [c.values(target, k) for k in keys] == [[bytes([i]) * 3000] for i in range(len(keys))]
            assert not list((c.storages[source].data_dir / ".outgoing").iterdir())
            assert not list((c.storages[target].data_dir / ".incoming").iterdir())
            assert not c.streaming[source]._outgoing

    run(main())


def test_a_stream_failed_by_fault_injection_fails_towards_a_peer_and_itself_until_healed(
    tmp_path: Path,
) -> None:
    """The test-only hold a chaos test keeps a migration at ``streaming`` with: the asking node's
    requests of ``tablet.stream`` fail, sent to a peer or served by itself, and nothing installs."""

    async def main() -> None:
        async with nodes(tmp_path) as c:
            (key,) = same_tablet_keys(c, 1)
            tablet_id, (source, _), target = c.tablet_of(key)
            await c.write(source, key, b"v", 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            verb = tablet_streaming.VERB_TABLET_STREAM
            c.rpcs[source].faults.fail(target + 1, verb)
            c.rpcs[target].faults.fail(target + 1, verb)
            with pytest.raises(InjectedFailure, match=rf"tablet\.stream to node {target + 1}: failed"):
                await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            with pytest.raises(InjectedFailure, match=rf"tablet\.stream to node {target + 1}: failed"):
                await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert c.values(target, key) == []
            assert c.rpcs[source].faults.failed == c.rpcs[target].faults.failed == 1
            c.rpcs[target].faults.heal()
            assert await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [source + 1]) == ["file"]
            assert c.values(target, key) == [b"v"]
            with pytest.raises(InjectedFailure):  # healing one node lifts none of another's faults
                await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            c.rpcs[source].faults.heal()
            assert len(await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])) == 1

    run(main())


def test_a_chunk_of_a_closed_copy_is_refused_with_its_transfer_id(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 1)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            await c.write(source, keys[0], b"v", 10)
            rpc = c.rpcs[target]
            ask = [TABLE.id.bytes, tablet_id, 0]
            transfer, size, _, _ = await rpc.call(source + 1, tablet_streaming.VERB_TABLET_COPY_OPEN, ask)
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


def test_an_image_is_sent_once_and_only_to_the_node_it_was_offered_to(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            (key,) = same_tablet_keys(c, 1)
            tablet_id, (source, other), target = c.tablet_of(key)
            await c.write(source, key, b"v", 10)
            ask = [TABLE.id.bytes, tablet_id, 0]
            transfer, size, _, _ = await c.rpcs[target].call(
                source + 1, tablet_streaming.VERB_TABLET_COPY_OPEN, ask
            )
            verb = tablet_streaming.VERB_TABLET_COPY_SEND
            with pytest.raises(RemoteError, match=f"offered to node {target + 1}, not node {other + 1}"):
                await dial(c.rpcs[other], source + 1, verb, [transfer], 5)
            sock, announced = await dial(c.rpcs[target], source + 1, verb, [transfer], 5)
            sock.close()
            assert announced == size
            with pytest.raises(RemoteError, match="no tablet image"):
                await dial(c.rpcs[target], source + 1, verb, [transfer], 5)
            assert not c.streaming[source]._outgoing

    run(main())


def test_a_stream_asked_by_a_topology_version_below_the_source_fence_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        async with nodes(tmp_path) as c:
            (key,) = same_tablet_keys(c, 1)
            tablet_id, (source, _), target = c.tablet_of(key)
            await c.write(source, key, b"v", 10)
            c.streaming[source]._fence = lambda: 7
            c.streaming[target]._version = lambda: 6
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            with pytest.raises(
                RemoteError, match="topology version 6, older than this replica's fence version 7"
            ):
                await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            c.streaming[target]._version = lambda: 7
            assert await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [source + 1]) == ["file"]

    run(main())


def test_a_transfer_cut_short_fails_the_stream_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def half_then_reset(
        reader: Any, writer: Any, file: Any, size: int, timeout: float, tail: bytes = b""
    ) -> None:
        writer.write(file.read(size // 2))  # the source dies half-way
        await writer.drain()
        raise ConnectionResetError("source killed")

    monkeypatch.setattr(tablet_streaming, "send_file", half_then_reset)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 20)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for key in keys:
                await c.write(source, key, b"x" * 3000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            with pytest.raises(RemoteError, match=r"TransferCut: the transfer ended after \d+ of \d+ bytes"):
                await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert [c.values(target, k) for k in keys] == [[]] * len(keys)
            assert not list((c.storages[target].data_dir / ".incoming").iterdir())
            assert not c.streaming[source]._outgoing  # the image was released

    run(main())


@pytest.mark.parametrize("part", ["file", "log"])
def test_a_byte_changed_on_the_way_fails_the_stream_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str
) -> None:
    """The image's bytes are checksummed end to end (no SQLite ``quick_check`` on the target):
    one byte changed in transit, inside a value where the file's structure stays valid, must be
    refused all the same, in the file's bytes as in the log frames sent after them."""
    flipped: list[str] = []

    async def flip_one_byte(
        reader: Any, writer: Any, file: Any, size: int, timeout: float, tail: bytes = b""
    ) -> None:
        data = bytearray(os.pread(file.fileno(), size, 0) + tail)
        values = data.rfind(b"x" * 100, 0, size) if part == "file" else data.rfind(b"x" * 100, size)
        assert values > 0, f"no value in the image's {part} part"
        data[values + 50] ^= 0x01  # inside a cell's value
        flipped.append(part)
        writer.write(bytes(data))
        await send_trailer(reader, writer, digest_of(file.fileno(), size, tail), timeout)

    monkeypatch.setattr(tablet_streaming, "send_file", flip_one_byte)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 20)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for key in keys[:10]:
                await c.write(source, key, b"x" * 3000, 10)
            c.storages[source].write_deferred()
            path = c.storages[source].local_files(TABLE)[0].path.parent / f"tablet-{tablet_id}.db"
            with contextlib.closing(sqlite3.connect(path)) as conn:  # the first ten into the file
                assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
            for key in keys[10:]:  # the other ten in the log
                await c.write(source, key, b"x" * 3000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            with pytest.raises(RemoteError, match=r"TransferCorrupt: the \d+ bytes written do not match"):
                await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert flipped == [part]
            assert [c.values(target, k) for k in keys] == [[]] * len(keys)
            assert not list((c.storages[target].data_dir / ".incoming").iterdir())
            assert not c.streaming[source]._outgoing

    run(main())


def test_with_tls_a_chunk_changed_on_the_way_fails_the_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_read_at = tablet_streaming._read_at

    def flip_in_second_chunk(image: Any, offset: int, length: int) -> bytes:
        data = bytearray(real_read_at(image, offset, length))
        if offset and data:
            data[len(data) // 2] ^= 0x01
        return bytes(data)

    monkeypatch.setattr(tablet_streaming, "CHUNK", 8192)
    monkeypatch.setattr(tablet_streaming, "_read_at", flip_in_second_chunk)

    async def main() -> None:
        async with nodes(tmp_path, tls=True) as c:
            keys = same_tablet_keys(c, 20)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            c.dial_tls_of(target, source)
            for key in keys:
                await c.write(source, key, b"x" * 3000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            with pytest.raises(TransferCorrupt, match="do not match the source's"):
                await c.streaming[target].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert [c.values(target, k) for k in keys] == [[]] * len(keys)
            assert not list((c.storages[target].data_dir / ".incoming").iterdir())

    run(main())


def test_writes_during_the_transfer_do_not_reach_the_image_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The source's live file is sent (pinned): writes and checkpoints while it goes out must not
    change the bytes sent (in a migration those writes reach the target as writes of their own)."""
    caplog.set_level(logging.INFO, logger=tablet_streaming.__name__)
    real_send_file = tablet_streaming.send_file
    cluster: list[Nodes] = []

    async def write_then_send(
        reader: Any, writer: Any, file: Any, size: int, timeout: float, tail: bytes = b""
    ) -> None:
        c = cluster[0]
        keys = same_tablet_keys(c, 40)
        for key in keys:  # new values, new keys' neighbours, enough to pass through checkpoints
            await c.write(c.tablet_of(key)[1][0], key, b"new" * 1000, 20)
        source = c.storages[c.tablet_of(keys[0])[1][0]]
        source.write_deferred()
        for path in source.data_dir.rglob("tablet-*.db"):  # a checkpoint, as any other connection may
            with contextlib.closing(sqlite3.connect(path, timeout=0.05)) as conn:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        await real_send_file(reader, writer, file, size, timeout, tail)

    monkeypatch.setattr(tablet_streaming, "send_file", write_then_send)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            cluster.append(c)
            keys = same_tablet_keys(c, 40)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for key in keys[:20]:
                await c.write(source, key, b"old" * 1000, 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            modes = await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"] and streamed_via(caplog) == ["pinned-sendfile"]
            assert log_frames_streamed(caplog)[0] > 0  # the state's newest pages came as log frames
            assert [c.values(target, k) for k in keys] == [[b"old" * 1000]] * 20 + [[]] * 20
            assert [c.values(source, k) for k in keys] == [[b"new" * 1000]] * 40

    run(main())


def test_a_target_that_goes_away_mid_transfer_releases_the_pinned_file(tmp_path: Path) -> None:
    """The target closes its dedicated connection after part of the image (it was killed): the
    source ends the transfer and its pin, so checkpoints fold the log into the file again."""

    async def main() -> None:
        async with nodes(tmp_path) as c:
            keys = same_tablet_keys(c, 40)
            tablet_id, (source, _), target = c.tablet_of(keys[0])
            for key in keys:
                await c.write(source, key, b"x" * 60000, 10)
            ask = [TABLE.id.bytes, tablet_id, 0]
            opened = await c.rpcs[target].call(source + 1, tablet_streaming.VERB_TABLET_COPY_OPEN, ask)
            transfer, size, kind, _ = opened
            assert kind == "pinned" and size > 1 << 20
            path = c.storages[source].local_files(TABLE)[0].path.parent / f"tablet-{tablet_id}.db"
            await c.write(source, keys[0], b"after the pin", 20)
            c.storages[source].write_deferred()

            def checkpoint_folds_everything() -> bool:
                with contextlib.closing(sqlite3.connect(path, timeout=0.05)) as conn:
                    busy, log_frames, folded = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                return not busy and log_frames == folded

            assert not checkpoint_folds_everything()  # pinned: nothing may be written into the file
            sock, _ = await dial(
                c.rpcs[target], source + 1, tablet_streaming.VERB_TABLET_COPY_SEND, [transfer], 5
            )
            assert len(await asyncio.get_running_loop().sock_recv(sock, 1 << 16)) > 0
            sock.close()
            for _ in range(50):
                if checkpoint_folds_everything():
                    break
                await asyncio.sleep(0.02)
            assert checkpoint_folds_everything()
            assert not c.streaming[source]._outgoing
            assert c.values(source, keys[0]) == [b"after the pin"]

    run(main())


def test_an_older_reader_holding_the_log_does_not_stop_the_pin(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader of an older state keeps checkpoints from folding the log in, which a pin by
    checkpoint needed; a pin that carries the log's frames does not: the newest state goes."""
    caplog.set_level(logging.INFO, logger=tablet_streaming.__name__)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            first, second = same_tablet_keys(c, 2)
            tablet_id, (source, _), target = c.tablet_of(first)
            await c.write(source, first, b"1", 10)
            c.storages[source].write_deferred()
            path = c.storages[source].local_files(TABLE)[0].path.parent / f"tablet-{tablet_id}.db"
            with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as old_reader:
                old_reader.execute("BEGIN")
                old_reader.execute("SELECT count(*) FROM partitions").fetchone()
                await c.write(source, second, b"2", 10)  # log frames the old reader's state lacks
                c.move(tablet_id, source, target, TransitionStage.STREAMING)
                modes = await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"] and streamed_via(caplog) == ["pinned-sendfile"]
            assert (c.values(target, first), c.values(target, second)) == ([b"1"], [b"2"])

    run(main())


def test_a_log_too_long_to_carry_sends_an_online_backup_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=tablet_streaming.__name__)
    monkeypatch.setattr(pinned_image, "LOG_LIMIT", 4096)

    async def main() -> None:
        async with nodes(tmp_path) as c:
            first, second = same_tablet_keys(c, 2)
            tablet_id, (source, _), target = c.tablet_of(first)
            await c.write(source, first, b"1" * 5000, 10)
            await c.write(source, second, b"2", 10)
            c.move(tablet_id, source, target, TransitionStage.STREAMING)
            modes = await c.streaming[source].stream(target + 1, TABLE.id, tablet_id, [source + 1])
            assert modes == ["file"] and streamed_via(caplog) == ["copy-sendfile"]
            assert (c.values(target, first), c.values(target, second)) == ([b"1" * 5000], [b"2"])
            assert not list((c.storages[source].data_dir / ".outgoing").iterdir())

    run(main())
