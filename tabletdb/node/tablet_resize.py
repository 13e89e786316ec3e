"""The resize verb the topology coordinator asks of each replica host, and the sweep of files of
unused generations (``topology.resize`` has the procedure; ``replica.resize_files`` the files).

* ``tablet.resize`` (asked of a replica host): after a Raft read barrier (so this node applied
  the prepare and writes both ways), copy each named table's files into the next generation,
  refused if the node's map is not being resized as asked. Answers the partitions copied.
* The sweep runs every ``SWEEP_S`` on every node: files of a generation the current maps no
  longer use (the old ones after a cut-over, the new ones after a rollback) are removed once they
  have been garbage for a while. It also catches a node that was down at the cut-over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from tabletdb.net.rpc import RpcNode
from tabletdb.replica.resize_files import StaleFiles, copy_into_next
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.verbs import TableOf, wait_for_table
from tabletdb.schema.model import TableDef
from tabletdb.tablets.count import ResizeState
from tabletdb.topology.resize import ResizeTask

log = logging.getLogger(__name__)

VERB_TABLET_RESIZE = "tablet.resize"
RESIZE_TIMEOUT = 3600.0
"""Seconds one host's copy may take (it reads and writes every byte of its replicas once)."""
SWEEP_S = 5.0


class TabletResize:
    def __init__(
        self,
        rpc: RpcNode,
        storage: StorageService,
        table_of: TableOf,
        read_barrier: Callable[[], Awaitable[object]],
    ) -> None:
        self.rpc = rpc
        self.storage = storage
        self.table_of = table_of
        self.read_barrier = read_barrier
        self.stale = StaleFiles(storage)

    def register(self) -> None:
        self.rpc.register(VERB_TABLET_RESIZE, self._resize)

    async def resize(self, target: int, task: ResizeTask) -> int:
        """Have ``target`` (a raft id) copy its files of the task's tables."""
        payload = [[t.bytes for t in task.tables], task.seq, task.kind.value]
        if target == self.rpc.node_id:
            return await self._resize(target, payload)
        return int(await self.rpc.call(target, VERB_TABLET_RESIZE, payload, RESIZE_TIMEOUT))

    async def _resize(self, src: int, payload: list[Any]) -> int:
        raw_ids, seq, kind = payload
        await self.read_barrier()
        copied = 0
        for raw_id in raw_ids:
            table = await wait_for_table(self.table_of, raw_id)
            copied += await copy_into_next(self.storage, table, int(seq), ResizeState(kind))
        return copied

    async def sweep_forever(self, tables: Callable[[], list[TableDef]], stop: asyncio.Event) -> None:
        """Remove files of unused generations until ``stop``; a failure is logged and retried."""
        while not stop.is_set():
            try:
                self.stale.sweep(tables())
            except Exception as exc:  # a file system error: try again on the next sweep
                log.warning("sweep of unused tablet files failed, retrying: %r", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SWEEP_S)
