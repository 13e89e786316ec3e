"""The internode verbs that move tablet replicas for the topology coordinator: copy, stream, cleanup.

* ``tablet.copy`` (asked of a source): a consistent copy of its replica's SQLite file
  (``replica.tablet_images.copy_tablet``), or None if it was never written. A copy of at most
  ``chunk_bytes`` is sent whole in the answer; a larger one stays in the source's staging
  directory and the answer names it (a transfer id and its size);
* ``tablet.chunk`` (asked of a source): the bytes of such a copy from an offset, one frame each,
  so a tablet of any size streams (frames are bounded: ``net.framing.MAX_FRAME``). The source
  deletes its copy once the last chunk was read, or when no chunk was asked for
  ``STREAM_TIMEOUT`` (the target died, or gave up);
* ``tablet.stream`` (asked of a target): pull the copy from each source in turn and install it
  (``install_tablet``: whole into an empty file, else merged as rows, last write wins); answers
  how each went in. The coordinator asks this at a migration's ``streaming`` stage.
* ``tablet.cleanup`` (asked of an old replica): close and delete its file of the tablet
  (``drop_tablet``), refused while the node's map still serves the tablet there.

A node asking itself runs the handler directly (no RPC to self).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabletdb.net.framing import MAX_FRAME
from tabletdb.net.rpc import RpcNode
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.tablet_images import copy_tablet, drop_tablet, install_tablet
from tabletdb.replica.verbs import TableOf, wait_for_table
from tabletdb.storage.tablet_store import StorageError

log = logging.getLogger(__name__)

VERB_TABLET_COPY = "tablet.copy"
VERB_TABLET_STREAM = "tablet.stream"
VERB_TABLET_CLEANUP = "tablet.cleanup"
VERB_TABLET_CHUNK = "tablet.chunk"

STREAM_TIMEOUT = 600.0
"""Seconds one answer (a whole copy, or one chunk) may take to arrive; also how long a source
keeps a chunked copy nobody reads."""
CHUNK_BYTES = 16 << 20
"""Copies up to this size go whole in one answer, larger ones in chunks of this size: small
enough for one frame and for memory, large enough that round trips cost little."""
assert CHUNK_BYTES <= MAX_FRAME - (1 << 20)  # room left for the frame's envelope


@dataclass
class _Transfer:
    """A chunked copy waiting on the source for its target to read it."""

    path: Path
    size: int
    expires: float


class TabletStreaming:
    """Serves the three verbs on ``rpc`` and asks them of other nodes."""

    def __init__(
        self, rpc: RpcNode, storage: StorageService, table_of: TableOf, chunk_bytes: int = CHUNK_BYTES
    ) -> None:
        self.rpc = rpc
        self.storage = storage
        self.table_of = table_of
        self.chunk_bytes = chunk_bytes
        self._transfers: dict[uuid.UUID, _Transfer] = {}

    def register(self) -> None:
        self.rpc.register(VERB_TABLET_COPY, self._copy)
        self.rpc.register(VERB_TABLET_CHUNK, self._chunk)
        self.rpc.register(VERB_TABLET_STREAM, self._stream)
        self.rpc.register(VERB_TABLET_CLEANUP, self._cleanup)

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

    # --- serving -------------------------------------------------------------------------------

    def _staging(self) -> Path:
        incoming = self.storage.data_dir / ".incoming"
        incoming.mkdir(parents=True, exist_ok=True)
        return incoming / f"{uuid.uuid4().hex}.db"

    async def _copy(self, src: int, payload: list[Any]) -> bytes | dict[str, Any] | None:
        raw_id, tablet_id = payload
        table = await wait_for_table(self.table_of, raw_id)
        self._expire()
        staging = self._staging()
        kept = False
        try:
            if not await copy_tablet(self.storage, table, tablet_id, staging):
                return None
            size = staging.stat().st_size
            if size <= self.chunk_bytes:
                return await asyncio.to_thread(staging.read_bytes)
            transfer = uuid.uuid4()
            self._transfers[transfer] = _Transfer(staging, size, time.monotonic() + STREAM_TIMEOUT)
            kept = True
            return {"transfer": transfer.bytes, "size": size}
        finally:
            if not kept:
                staging.unlink(missing_ok=True)

    async def _chunk(self, src: int, payload: list[Any]) -> bytes:
        raw_transfer, offset = payload
        self._expire()
        transfer_id = uuid.UUID(bytes=bytes(raw_transfer))
        transfer = self._transfers.get(transfer_id)
        if transfer is None:
            raise StorageError(
                f"tablet copy {transfer_id} is not held here (this node restarted, or nobody read it "
                f"for {STREAM_TIMEOUT:.0f} s); the coordinator streams the tablet again"
            )
        data = await asyncio.to_thread(_read_at, transfer.path, int(offset), self.chunk_bytes)
        transfer.expires = time.monotonic() + STREAM_TIMEOUT
        if not data or int(offset) + len(data) >= transfer.size:
            self._transfers.pop(transfer_id, None)
            transfer.path.unlink(missing_ok=True)
        return data

    def _expire(self) -> None:
        now = time.monotonic()
        for transfer_id, transfer in list(self._transfers.items()):
            if transfer.expires < now:
                del self._transfers[transfer_id]
                transfer.path.unlink(missing_ok=True)
                log.info("tablet copy dropped: not read for %.0f s file=%s", STREAM_TIMEOUT, transfer.path)

    async def _fetch(self, source: int, request: list[Any], staging: Path) -> int | None:
        """Write ``source``'s copy of the tablet into ``staging``: its size, None if it has none."""
        if source == self.rpc.node_id:
            answer: Any = await self._copy(source, request)
        else:
            answer = await self.rpc.call(source, VERB_TABLET_COPY, request, STREAM_TIMEOUT)
        if answer is None:
            return None
        if not isinstance(answer, dict):
            await asyncio.to_thread(staging.write_bytes, answer)
            return len(answer)
        size, raw_transfer = int(answer["size"]), answer["transfer"]
        with open(staging, "wb") as out:
            offset = 0
            while offset < size:
                ask = [raw_transfer, offset]
                if source == self.rpc.node_id:
                    chunk = await self._chunk(source, ask)
                else:
                    chunk = await self.rpc.call(source, VERB_TABLET_CHUNK, ask, STREAM_TIMEOUT)
                if not chunk:
                    raise StorageError(f"tablet copy from node {source} ended at {offset} of {size} bytes")
                await asyncio.to_thread(out.write, chunk)
                offset += len(chunk)
        return size

    async def _stream(self, src: int, payload: list[Any]) -> list[str]:
        raw_id, tablet_id, sources = payload
        table = await wait_for_table(self.table_of, raw_id)
        modes: list[str] = []
        for source in sources:
            started = time.monotonic()
            staging = self._staging()
            try:
                size = await self._fetch(source, [raw_id, tablet_id], staging)
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

    async def _cleanup(self, src: int, payload: list[Any]) -> bool:
        raw_id, tablet_id, shard = payload
        table = await wait_for_table(self.table_of, raw_id)
        return drop_tablet(self.storage, table, tablet_id, shard)


def _read_at(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(length)
