"""The internode verbs that move tablet replicas for the topology coordinator: copy, stream, cleanup.

* ``tablet.copy_open`` (asked of a source): offer a consistent image of its replica's SQLite
  file to the asking node (``node.tablet_outgoing``: the live file pinned, followed by its log's
  committed frames, or a copy staged under ``.outgoing``) under a transfer id issued to that
  node alone; the answer says how many of the image's last bytes are log frames. The asker's
  topology version must not be below the source's fence (a stream of a move that was rolled back
  and fenced is refused).
* ``tablet.copy_send`` (a dedicated connection, ``net.dedicated``): the whole image, sent with
  ``sendfile``, spliced straight into the staged file, and checksummed end to end. Used whenever
  the connection to the source may be plaintext.
* ``tablet.copy_read`` / ``tablet.copy_digest`` / ``tablet.copy_close``: with internode TLS, the
  image read over RPC in chunks of ``CHUNK`` bytes, two in flight, then the source's checksum of
  it compared with the target's of what it wrote. Chunks keep every frame small: Raft heartbeats
  and reads that share the connection never wait behind one huge frame.
* ``tablet.stream`` (asked of a target): pull the image from each source in turn, replay its log
  frames into the file's bytes (``storage.wal_frames.replay_into``), make it a rollback-journal
  file (a pinned image arrives in WAL mode: ``as_rollback_file``, two header bytes), sync and
  check it (``check_image``; SQLite's ``quick_check`` only for an image that was not checksummed
  end to end, i.e. a local copy), and install it (``install_tablet``: whole into
  an empty file, else merged as rows, last write wins); answers how each went in. The
  coordinator asks this at a migration's ``streaming`` stage. Each image's phases are logged
  (``tablet streamed ... open_ms= transfer_ms= check_ms= install_ms=``; the source logs ``tablet
  image sent``), which ``bench/bench_migration.py`` reads.
* ``tablet.cleanup`` (asked of an old replica): close and delete its file of the tablet
  (``drop_tablet``), refused while the node's map still serves the tablet there.
* ``tablet.shard_move`` (asked of a node whose replica moves between two of its shards, at the
  ``streaming`` stage): rename the file into the new shard (``replica.shard_moves``); writes in
  flight to it are waited out for up to ``SHARD_MOVE_WAIT`` seconds, then the coordinator retries.

A node asking itself runs the handler directly (no RPC to self). An image whose target went away
is released once idle (``tablet_outgoing.IDLE``), and copies left by a previous run of the process
are deleted when the verbs are registered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from tabletdb.net.dedicated import TransferCorrupt, connect, open_stream, receive_file, send_file
from tabletdb.net.file_bytes import DIGEST, digest_of
from tabletdb.net.framing import encode_frame
from tabletdb.net.rpc import Kind, RpcNode
from tabletdb.node.tablet_outgoing import Image, OutgoingImages, open_image
from tabletdb.replica.fencing import check_fence
from tabletdb.replica.shard_moves import ShardMoveBusy, move_between_shards
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.tablet_images import copy_tablet, drop_tablet, install_tablet
from tabletdb.replica.verbs import TableOf, wait_for_table
from tabletdb.storage.images.pinned_image import as_rollback_file
from tabletdb.storage.images.wal_frames import replay_into
from tabletdb.storage.snapshot_files import check_image
from tabletdb.storage.tablet_store import StorageError

log = logging.getLogger(__name__)

VERB_TABLET_COPY_OPEN = "tablet.copy_open"
VERB_TABLET_COPY_READ = "tablet.copy_read"
VERB_TABLET_COPY_CLOSE = "tablet.copy_close"
VERB_TABLET_COPY_DIGEST = "tablet.copy_digest"
VERB_TABLET_COPY_SEND = "tablet.copy_send"
VERB_TABLET_STREAM = "tablet.stream"
VERB_TABLET_CLEANUP = "tablet.cleanup"
VERB_TABLET_SHARD_MOVE = "tablet.shard_move"
SHARD_MOVE_WAIT = 5.0
"""Seconds a shard move waits for a moment with no write in flight to the tablet's file."""

STREAM_TIMEOUT = 600.0
"""Seconds a whole stream from one source may take."""
CHUNK = 8 << 20
"""Bytes per read of a staged copy: large enough that per-frame costs vanish, small enough that
other messages on the connection are never held up for long."""
IN_FLIGHT = 2
"""Chunk reads outstanding at once, so the source's disk and the network overlap the target's write."""
CHUNK_TIMEOUT = 120.0
"""Seconds one chunk read, or one wait for data on a dedicated transfer, may take."""
MAX_CHUNK = 64 << 20


class TabletStreaming:
    """Serves the verbs on ``rpc`` and asks them of other nodes. ``version`` and ``fence``: this
    node's topology version and fence version in group0 (both 0 where nothing fences)."""

    def __init__(
        self,
        rpc: RpcNode,
        storage: StorageService,
        table_of: TableOf,
        version: Callable[[], int] = lambda: 0,
        fence: Callable[[], int] = lambda: 0,
    ) -> None:
        self.rpc = rpc
        self.storage = storage
        self.table_of = table_of
        self._version = version
        self._fence = fence
        self._outgoing = OutgoingImages()

    def register(self) -> None:
        self._outgoing.clear()
        shutil.rmtree(self._outgoing_dir(), ignore_errors=True)
        self.rpc.register(VERB_TABLET_COPY_OPEN, self._copy_open)
        self.rpc.register(VERB_TABLET_COPY_READ, self._copy_read)
        self.rpc.register(VERB_TABLET_COPY_CLOSE, self._copy_close)
        self.rpc.register(VERB_TABLET_COPY_DIGEST, self._copy_digest)
        self.rpc.register_stream(VERB_TABLET_COPY_SEND, self._copy_send)
        self.rpc.register(VERB_TABLET_STREAM, self._stream)
        self.rpc.register(VERB_TABLET_CLEANUP, self._cleanup)
        self.rpc.register(VERB_TABLET_SHARD_MOVE, self._shard_move)

    # --- asking --------------------------------------------------------------------------------

    async def stream(self, target: int, table_id: uuid.UUID, tablet_id: int, sources: list[int]) -> list[str]:
        """Have ``target`` pull and install the tablet from ``sources`` (raft ids)."""
        payload = [table_id.bytes, tablet_id, sources]
        if target == self.rpc.node_id:
            self.rpc.fail_if_injected(target, VERB_TABLET_STREAM)  # TEST ONLY (node.admin.rest_faults)
            return await self._stream(target, payload)
        timeout = STREAM_TIMEOUT * len(sources)
        answer: list[str] = await self.rpc.call(target, VERB_TABLET_STREAM, payload, timeout)
        return answer

    async def cleanup(self, replica: int, table_id: uuid.UUID, tablet_id: int, shard: int) -> bool:
        """Have ``replica`` delete its file of the tablet on ``shard``; True if there was one."""
        payload = [table_id.bytes, tablet_id, shard]
        if replica == self.rpc.node_id:
            return await self._cleanup(replica, payload)
        return bool(await self.rpc.call(replica, VERB_TABLET_CLEANUP, payload, STREAM_TIMEOUT))

    async def shard_move(
        self, node: int, table_id: uuid.UUID, tablet_id: int, from_shard: int, to_shard: int
    ) -> str:
        """Have ``node`` move its file of the tablet from one of its shards to another."""
        payload = [table_id.bytes, tablet_id, from_shard, to_shard]
        if node == self.rpc.node_id:
            return await self._shard_move(node, payload)
        answer: str = await self.rpc.call(node, VERB_TABLET_SHARD_MOVE, payload, STREAM_TIMEOUT)
        return answer

    # --- serving: the source's side --------------------------------------------------------------

    def _outgoing_dir(self) -> Path:
        return self.storage.data_dir / ".outgoing"

    def _staging(self, kind: str = ".incoming") -> Path:
        folder = self.storage.data_dir / kind
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{uuid.uuid4().hex}.db"

    async def _copy_open(self, src: int, payload: list[Any]) -> list[Any] | None:
        """Offer an image of the replica to ``src``: [transfer id, size, kind, bytes of log frames
        at its end], or None if the replica was never written."""
        raw_id, tablet_id, version = payload
        check_fence(version, self._fence(), src)
        table = await wait_for_table(self.table_of, raw_id)
        image = await open_image(self.storage, table, tablet_id, self._staging(".outgoing"))
        if image is None:
            return None
        return [self._outgoing.offer(image, src), image.size, image.kind, len(image.tail)]

    async def _copy_read(self, src: int, payload: list[Any]) -> bytes:
        transfer, offset, length = payload
        if not 0 <= length <= MAX_CHUNK:
            raise StorageError(f"tablet image {transfer}: a read of {length} bytes (at most {MAX_CHUNK})")
        image = self._outgoing.get(transfer, src)
        return await asyncio.to_thread(_read_at, image, offset, length)

    async def _copy_close(self, src: int, payload: list[Any]) -> bool:
        (transfer,) = payload
        return self._outgoing.close(transfer, src)

    async def _copy_digest(self, src: int, payload: list[Any]) -> list[Any]:
        """[DIGEST, checksum] of the whole image, for a target that read it in chunks."""
        (transfer,) = payload
        image = self._outgoing.get(transfer, src)
        return [DIGEST, await asyncio.to_thread(digest_of, image.file.fileno(), image.in_file, image.tail)]

    async def _copy_send(
        self, src: int, payload: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """The whole image on a dedicated connection: its size in one frame, then the bytes."""
        try:
            (transfer,) = payload
            image = self._outgoing.take(transfer, src)
        except (StorageError, TypeError, ValueError) as exc:
            writer.write(encode_frame([Kind.ERROR, 0, VERB_TABLET_COPY_SEND, self.rpc.node_id, str(exc)]))
            await writer.drain()
            return
        started = time.monotonic()
        try:
            writer.write(
                encode_frame([Kind.RESPONSE, 0, VERB_TABLET_COPY_SEND, self.rpc.node_id, image.size])
            )
            await send_file(reader, writer, image.file, image.in_file, CHUNK_TIMEOUT, image.tail)
        finally:
            image.release()
        log.info(
            "tablet image sent to=%d bytes=%d kind=%s prepare_ms=%.0f send_ms=%.0f",
            src,
            image.size,
            image.kind,
            image.prepared_ms,
            (time.monotonic() - started) * 1000,
        )

    # --- serving: the target's side --------------------------------------------------------------

    async def _stream(self, src: int, payload: list[Any]) -> list[str]:
        raw_id, tablet_id, sources = payload
        table = await wait_for_table(self.table_of, raw_id)
        modes: list[str] = []
        for source in sources:
            phases = _Phases()
            staging = self._staging()
            try:
                pulled = await self._pull(source, [raw_id, tablet_id, self._version()], staging, phases)
                if pulled is None:
                    modes.append("empty")
                    continue
                size, how, checksummed, log_bytes = pulled
                await asyncio.to_thread(_check, staging, checksummed, log_bytes)
                phases.lap("check")
                modes.append(await install_tablet(self.storage, table, tablet_id, staging))
                phases.lap("install")
            finally:
                staging.unlink(missing_ok=True)
            log.info(
                "tablet streamed table=%s tablet=%d source=%d bytes=%d mode=%s ms=%.0f via=%s %s "
                "log_bytes=%d",
                table.id,
                tablet_id,
                source,
                size,
                modes[-1],
                phases.total_ms(),
                how,
                phases,
                log_bytes,
            )
        return modes

    async def _pull(
        self, source: int, request: list[Any], staging: Path, phases: _Phases
    ) -> tuple[int, str, bool, int] | None:
        """Copy the source's replica to ``staging``: (its size, how it came: ``local``, or the
        image's kind and the path it took, whether it was checksummed end to end, how many of
        its last bytes are log frames to replay), or None if it was never written."""
        if source == self.rpc.node_id:
            table = await wait_for_table(self.table_of, request[0])
            copied = await copy_tablet(self.storage, table, request[1], staging)
            phases.lap("open")
            phases.lap("transfer")
            return (staging.stat().st_size, "local", False, 0) if copied else None
        # the dedicated connection is set up while the source pins its image (one round trip less)
        plaintext = not self.rpc.authority.must_encrypt(source)
        dialing = asyncio.ensure_future(connect(self.rpc, source)) if plaintext else None
        try:
            opened = await self.rpc.call(source, VERB_TABLET_COPY_OPEN, request, STREAM_TIMEOUT)
        except BaseException:
            await _discard(dialing)
            raise
        phases.lap("open")
        if opened is None:
            await _discard(dialing)
            return None
        transfer, size, kind, *more = opened
        log_bytes = int(more[0]) if more else 0  # a source before log frames sends none
        if not 0 <= log_bytes <= size:
            raise StorageError(f"tablet image {transfer} from node {source}: {log_bytes} log bytes of {size}")
        try:
            with staging.open("w+b") as out:
                if dialing is None:
                    await self._read_chunks(source, transfer, size, out)
                    how = f"{kind}-rpc"
                else:
                    await self._receive(source, transfer, size, out, dialing)
                    how = f"{kind}-sendfile"
            phases.lap("transfer")
            return size, how, True, log_bytes
        finally:
            await _discard(dialing)  # unused if the transfer failed before it began
            try:  # releases the image at once if the transfer failed before it began
                await self.rpc.call(source, VERB_TABLET_COPY_CLOSE, [transfer], CHUNK_TIMEOUT)
            except Exception as exc:  # the source forgets idle images on its own
                log.debug("tablet copy close failed source=%d transfer=%s: %s", source, transfer, exc)

    async def _receive(
        self, source: int, transfer: str, size: int, out: BinaryIO, dialing: asyncio.Future[socket.socket]
    ) -> None:
        """The image over the dedicated connection ``dialing`` set up, straight into ``out``,
        checked against the source's checksum (``net.dedicated``)."""
        connected = await dialing
        sock, announced = await open_stream(
            self.rpc, connected, source, VERB_TABLET_COPY_SEND, [transfer], CHUNK_TIMEOUT
        )
        if announced != size:
            sock.close()
            raise StorageError(
                f"tablet image {transfer} from node {source}: {announced} bytes, offered {size}"
            )
        try:
            await asyncio.to_thread(receive_file, sock, out, size, CHUNK_TIMEOUT)
        except asyncio.CancelledError:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # the receiving thread sees the end and stops
            raise

    async def _read_chunks(self, source: int, transfer: str, size: int, out: BinaryIO) -> None:
        """Read the staged copy in order, ``IN_FLIGHT`` chunks requested ahead of the write."""
        reads: deque[tuple[int, asyncio.Task[Any]]] = deque()
        offset = 0
        try:
            while offset < size or reads:
                while len(reads) < IN_FLIGHT and offset < size:
                    length = min(CHUNK, size - offset)
                    ask = [transfer, offset, length]
                    read = self.rpc.call(source, VERB_TABLET_COPY_READ, ask, CHUNK_TIMEOUT)
                    reads.append((length, asyncio.ensure_future(read)))
                    offset += length
                length, task = reads.popleft()
                data = await task
                if len(data) != length:
                    raise StorageError(
                        f"tablet copy {transfer} from node {source}: chunk of {len(data)} bytes, "
                        f"expected {length} (the staged copy changed or was cut short)"
                    )
                await asyncio.to_thread(out.write, data)
        finally:
            for _, task in reads:
                task.cancel()
        await asyncio.to_thread(out.flush)
        name, sent = await self.rpc.call(source, VERB_TABLET_COPY_DIGEST, [transfer], CHUNK_TIMEOUT)
        written = await asyncio.to_thread(digest_of, out.fileno(), size)
        if name != DIGEST or sent != written:
            raise TransferCorrupt(
                f"tablet image {transfer} from node {source}: the {size} bytes written do not match "
                f"the source's ({name} {bytes(sent).hex()} sent, {DIGEST} {written.hex()} here)"
            )

    async def _cleanup(self, src: int, payload: list[Any]) -> bool:
        raw_id, tablet_id, shard = payload
        table = await wait_for_table(self.table_of, raw_id)
        return drop_tablet(self.storage, table, tablet_id, shard)

    async def _shard_move(self, src: int, payload: list[Any]) -> str:
        raw_id, tablet_id, from_shard, to_shard = payload
        table = await wait_for_table(self.table_of, raw_id)
        deadline = time.monotonic() + SHARD_MOVE_WAIT
        while True:
            try:
                return move_between_shards(self.storage, table, tablet_id, from_shard, to_shard)
            except ShardMoveBusy:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.01)


async def _discard(dialing: asyncio.Future[socket.socket] | None) -> None:
    """Close a dedicated connection set up in advance and left unused (one taken by the transfer
    is closed already: closing it again does nothing)."""
    if dialing is None:
        return
    dialing.cancel()
    await asyncio.wait([dialing])
    if not dialing.cancelled() and dialing.exception() is None:
        dialing.result().close()


def _read_at(image: Image, offset: int, length: int) -> bytes:
    """Up to ``length`` bytes of the image from ``offset``: the file's, then the tail's."""
    length = max(0, min(length, image.size - offset))
    from_file = max(0, min(length, image.in_file - offset))
    data = os.pread(image.file.fileno(), from_file, offset) if from_file else b""
    if from_file < length:
        start = offset + from_file - image.in_file
        data += image.tail[start : start + length - from_file]
    return data


def _check(staging: Path, checksummed: bool, log_bytes: int = 0) -> None:
    """A received image's log frames (its last ``log_bytes``) replayed into its file's bytes, the
    file made a rollback-journal file, synced, and checked: SQLite's page-by-page ``quick_check``
    only where no end-to-end checksum vouched for the bytes."""
    if log_bytes:
        fd = os.open(staging, os.O_RDWR)
        try:
            in_file = os.fstat(fd).st_size - log_bytes
            frames = os.pread(fd, log_bytes, in_file)
            os.ftruncate(fd, in_file)  # pages the replay writes past it must not meet the frames
            replay_into(fd, frames)
        finally:
            os.close(fd)
    as_rollback_file(staging)
    check_image(staging, deep=not checksummed)


class _Phases:
    """Milliseconds per phase of one image's stream, in order, for its log line."""

    def __init__(self) -> None:
        self._started = self._last = time.monotonic()
        self._ms: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self._ms[phase] = (now - self._last) * 1000
        self._last = now

    def total_ms(self) -> float:
        return (self._last - self._started) * 1000

    def __str__(self) -> str:
        return " ".join(f"{phase}_ms={ms:.0f}" for phase, ms in self._ms.items())
