"""The internode verbs that move tablet replicas for the topology coordinator: copy, stream, cleanup.

* ``tablet.copy_open`` / ``tablet.copy_read`` / ``tablet.copy_close`` (asked of a source): a
  consistent copy of its replica's SQLite file (``replica.tablet_images.copy_tablet``) is staged
  under ``.outgoing`` and read by the target in chunks of ``CHUNK`` bytes, two in flight. Chunks
  keep every frame small: a tablet file of any size streams, and Raft heartbeats and reads that
  share the connection never wait behind one huge frame (a whole 200 MB file used to be one frame,
  and every message behind it waited for it).
* ``tablet.stream`` (asked of a target): pull the copy from each source in turn and install it
  (``install_tablet``: whole into an empty file, else merged as rows, last write wins); answers
  how each went in. The coordinator asks this at a migration's ``streaming`` stage.
* ``tablet.cleanup`` (asked of an old replica): close and delete its file of the tablet
  (``drop_tablet``), refused while the node's map still serves the tablet there.
* ``tablet.shard_move`` (asked of a node whose replica moves between two of its shards, at the
  ``streaming`` stage): rename the file into the new shard (``replica.shard_moves``); writes in
  flight to it are waited out for up to ``SHARD_MOVE_WAIT`` seconds, then the coordinator retries.

A node asking itself runs the handler directly (no RPC to self). A staged copy whose target went
away is deleted once it has been idle for ``STREAM_TIMEOUT``, and leftovers of a previous run of
the process when the verbs are registered.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from tabletdb.net.rpc import RpcNode
from tabletdb.replica.shard_moves import ShardMoveBusy, move_between_shards
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.tablet_images import copy_tablet, drop_tablet, install_tablet
from tabletdb.replica.verbs import TableOf, wait_for_table
from tabletdb.storage.tablet_store import StorageError

log = logging.getLogger(__name__)

VERB_TABLET_COPY_OPEN = "tablet.copy_open"
VERB_TABLET_COPY_READ = "tablet.copy_read"
VERB_TABLET_COPY_CLOSE = "tablet.copy_close"
VERB_TABLET_STREAM = "tablet.stream"
VERB_TABLET_CLEANUP = "tablet.cleanup"
VERB_TABLET_SHARD_MOVE = "tablet.shard_move"
SHARD_MOVE_WAIT = 5.0
"""Seconds a shard move waits for a moment with no write in flight to the tablet's file."""

STREAM_TIMEOUT = 600.0
"""Seconds a whole stream from one source may take; also how long an idle staged copy is kept."""
CHUNK = 8 << 20
"""Bytes per read of a staged copy: large enough that per-frame costs vanish, small enough that
other messages on the connection are never held up for long."""
IN_FLIGHT = 2
"""Chunk reads outstanding at once, so the source's disk and the network overlap the target's write."""
CHUNK_TIMEOUT = 120.0


@dataclass
class _Outgoing:
    path: Path
    size: int
    last_used: float


class TabletStreaming:
    """Serves the verbs on ``rpc`` and asks them of other nodes."""

    def __init__(self, rpc: RpcNode, storage: StorageService, table_of: TableOf) -> None:
        self.rpc = rpc
        self.storage = storage
        self.table_of = table_of
        self._outgoing: dict[str, _Outgoing] = {}

    def register(self) -> None:
        shutil.rmtree(self._outgoing_dir(), ignore_errors=True)
        self.rpc.register(VERB_TABLET_COPY_OPEN, self._copy_open)
        self.rpc.register(VERB_TABLET_COPY_READ, self._copy_read)
        self.rpc.register(VERB_TABLET_COPY_CLOSE, self._copy_close)
        self.rpc.register(VERB_TABLET_STREAM, self._stream)
        self.rpc.register(VERB_TABLET_CLEANUP, self._cleanup)
        self.rpc.register(VERB_TABLET_SHARD_MOVE, self._shard_move)

    # --- asking --------------------------------------------------------------------------------

    async def stream(self, target: int, table_id: uuid.UUID, tablet_id: int, sources: list[int]) -> list[str]:
        """Have ``target`` pull and install the tablet from ``sources`` (raft ids)."""
        payload = [table_id.bytes, tablet_id, sources]
        if target == self.rpc.node_id:
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
        """Stage a consistent copy of the replica; [transfer id, size], or None if never written."""
        raw_id, tablet_id = payload
        table = await wait_for_table(self.table_of, raw_id)
        self._forget_idle()
        staging = self._staging(".outgoing")
        if not await copy_tablet(self.storage, table, tablet_id, staging):
            return None
        transfer = staging.stem
        size = staging.stat().st_size
        self._outgoing[transfer] = _Outgoing(staging, size, time.monotonic())
        return [transfer, size]

    async def _copy_read(self, src: int, payload: list[Any]) -> bytes:
        transfer, offset, length = payload
        outgoing = self._outgoing.get(transfer)
        if outgoing is None:
            raise StorageError(f"no staged tablet copy {transfer} on this node (closed, or idle too long)")
        outgoing.last_used = time.monotonic()
        return await asyncio.to_thread(_read_at, outgoing.path, offset, length)

    async def _copy_close(self, src: int, payload: list[Any]) -> bool:
        (transfer,) = payload
        outgoing = self._outgoing.pop(transfer, None)
        if outgoing is not None:
            outgoing.path.unlink(missing_ok=True)
        return outgoing is not None

    def _forget_idle(self) -> None:
        cutoff = time.monotonic() - STREAM_TIMEOUT
        for transfer, outgoing in list(self._outgoing.items()):
            if outgoing.last_used < cutoff:
                del self._outgoing[transfer]
                outgoing.path.unlink(missing_ok=True)

    # --- serving: the target's side --------------------------------------------------------------

    async def _stream(self, src: int, payload: list[Any]) -> list[str]:
        raw_id, tablet_id, sources = payload
        table = await wait_for_table(self.table_of, raw_id)
        modes: list[str] = []
        for source in sources:
            started = time.monotonic()
            staging = self._staging()
            try:
                size = await self._pull(source, [raw_id, tablet_id], staging)
                if size is None:
                    modes.append("empty")
                    continue
                modes.append(await install_tablet(self.storage, table, tablet_id, staging))
            finally:
                staging.unlink(missing_ok=True)
            log.info(
                "tablet streamed table=%s tablet=%d source=%d bytes=%d mode=%s ms=%.0f",
                table.id,
                tablet_id,
                source,
                size,
                modes[-1],
                (time.monotonic() - started) * 1000,
            )
        return modes

    async def _pull(self, source: int, request: list[Any], staging: Path) -> int | None:
        """Copy the source's replica to ``staging``; its size, or None if it was never written."""
        if source == self.rpc.node_id:
            table = await wait_for_table(self.table_of, request[0])
            if not await copy_tablet(self.storage, table, request[1], staging):
                return None
            return staging.stat().st_size
        opened = await self.rpc.call(source, VERB_TABLET_COPY_OPEN, request, STREAM_TIMEOUT)
        if opened is None:
            return None
        transfer, size = opened
        try:
            with staging.open("wb") as out:
                await self._read_chunks(source, transfer, size, out)
        finally:
            try:
                await self.rpc.call(source, VERB_TABLET_COPY_CLOSE, [transfer], CHUNK_TIMEOUT)
            except Exception as exc:  # the source forgets idle copies on its own
                log.debug("tablet copy close failed source=%d transfer=%s: %s", source, transfer, exc)
        return int(size)

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


def _read_at(path: Path, offset: int, length: int) -> bytes:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read(length)
