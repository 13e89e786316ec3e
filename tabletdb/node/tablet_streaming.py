"""The internode verbs that move tablet replicas for the topology coordinator: copy, stream, cleanup.

* ``tablet.copy`` (asked of a source): a consistent copy of its replica's SQLite file, sent
  whole in one frame (``replica.tablet_images.copy_tablet``), or None if it was never written.
* ``tablet.stream`` (asked of a target): pull the copy from each source in turn and install it
  (``install_tablet``: whole into an empty file, else merged as rows, last write wins); answers
  how each went in. The coordinator asks this at a migration's ``streaming`` stage.
* ``tablet.cleanup`` (asked of an old replica): close and delete its file of the tablet
  (``drop_tablet``), refused while the node's map still serves the tablet there.
* ``tablet.shard_move`` (asked of a node whose replica moves between two of its shards, at the
  ``streaming`` stage): rename the file into the new shard (``replica.shard_moves``); writes in
  flight to it are waited out for up to ``SHARD_MOVE_WAIT`` seconds, then the coordinator retries.

A node asking itself runs the handler directly (no RPC to self).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from tabletdb.net.framing import MAX_FRAME
from tabletdb.net.rpc import RpcNode
from tabletdb.replica.shard_moves import ShardMoveBusy, move_between_shards
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.tablet_images import copy_tablet, drop_tablet, install_tablet
from tabletdb.replica.verbs import TableOf, wait_for_table
from tabletdb.storage.tablet_store import StorageError

log = logging.getLogger(__name__)

VERB_TABLET_COPY = "tablet.copy"
VERB_TABLET_STREAM = "tablet.stream"
VERB_TABLET_CLEANUP = "tablet.cleanup"
VERB_TABLET_SHARD_MOVE = "tablet.shard_move"
SHARD_MOVE_WAIT = 5.0
"""Seconds a shard move waits for a moment with no write in flight to the tablet's file."""

STREAM_TIMEOUT = 600.0
"""Seconds one source's copy may take to arrive (whole files: bounded by the frame size)."""
MAX_IMAGE = MAX_FRAME - (1 << 20)
"""The largest tablet file sent whole in one frame (room left for the frame's envelope)."""


class TabletStreaming:
    """Serves the three verbs on ``rpc`` and asks them of other nodes."""

    def __init__(self, rpc: RpcNode, storage: StorageService, table_of: TableOf) -> None:
        self.rpc = rpc
        self.storage = storage
        self.table_of = table_of

    def register(self) -> None:
        self.rpc.register(VERB_TABLET_COPY, self._copy)
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

    # --- serving -------------------------------------------------------------------------------

    def _staging(self) -> Path:
        incoming = self.storage.data_dir / ".incoming"
        incoming.mkdir(parents=True, exist_ok=True)
        return incoming / f"{uuid.uuid4().hex}.db"

    async def _copy(self, src: int, payload: list[Any]) -> bytes | None:
        raw_id, tablet_id = payload
        table = await wait_for_table(self.table_of, raw_id)
        staging = self._staging()
        try:
            if not await copy_tablet(self.storage, table, tablet_id, staging):
                return None
            size = staging.stat().st_size
            if size > MAX_IMAGE:
                raise StorageError(
                    f"tablet {tablet_id} of {table.keyspace}.{table.name} is {size} bytes; "
                    f"files over {MAX_IMAGE} bytes cannot be streamed whole yet"
                )
            return await asyncio.to_thread(staging.read_bytes)
        finally:
            staging.unlink(missing_ok=True)

    async def _stream(self, src: int, payload: list[Any]) -> list[str]:
        raw_id, tablet_id, sources = payload
        table = await wait_for_table(self.table_of, raw_id)
        modes: list[str] = []
        for source in sources:
            started = time.monotonic()
            request = [raw_id, tablet_id]
            if source == self.rpc.node_id:
                image = await self._copy(source, request)
            else:
                image = await self.rpc.call(source, VERB_TABLET_COPY, request, STREAM_TIMEOUT)
            if image is None:
                modes.append("empty")
                continue
            staging = self._staging()
            try:
                await asyncio.to_thread(staging.write_bytes, image)
                modes.append(await install_tablet(self.storage, table, tablet_id, staging))
            finally:
                staging.unlink(missing_ok=True)
            log.info(
                "tablet streamed table=%s tablet=%d source=%d bytes=%d mode=%s ms=%.0f",
                table.id,
                tablet_id,
                source,
                len(image),
                modes[-1],
                (time.monotonic() - started) * 1000,
            )
        return modes

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
