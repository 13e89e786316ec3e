"""Tablet load statistics on a running node: measure this node's replicas, answer the
coordinator's poll, and (on the coordinator) gather every member's report into one size per
tablet for the balancer (``tablets.load_stats`` explains why this is RPC, not group0).

Measuring stats every file of the node, so a report is cached and remeasured when it is older
than ``refresh_s`` or when the tablet maps changed since (a migration, split or new table: the
big changes that move bytes); a poll in between answers from the cache.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tabletdb.group0.topology import NodeRecord
from tabletdb.net.rpc import RpcError, RpcNode
from tabletdb.replica.load_stats import tablet_sizes
from tabletdb.replica.storage_service import LocalFile, StorageService
from tabletdb.schema.model import TableDef
from tabletdb.tablets import load_stats
from tabletdb.tablets.load_stats import TabletSizes
from tabletdb.tablets.tablet_map import TabletMap

log = logging.getLogger(__name__)

TABLET_LOAD_VERB = "tablets.load_stats"
TABLET_LOAD_TIMEOUT = 5.0
REFRESH_S = 10.0


class TabletLoadStats:
    """This node's tablet replica sizes, and the whole cluster's as the coordinator polls them."""

    def __init__(
        self,
        host_id: uuid.UUID,
        storage: StorageService,
        table: Callable[[uuid.UUID], TableDef | None],
        rpc: RpcNode | None,
        peers: Callable[[], Iterable[NodeRecord]],
        alive: Callable[[uuid.UUID], bool],
        refresh_s: float = REFRESH_S,
    ) -> None:
        self._host_id = host_id
        self._storage = storage
        self._table = table
        self._rpc = rpc
        self._peers = peers
        self._alive = alive
        self._refresh_s = refresh_s
        self._cached: TabletSizes | None = None
        self._taken_at = 0.0
        self._maps_seen: Mapping[uuid.UUID, TabletMap] | None = None

    def register(self) -> None:
        """Answer the coordinator's poll (only members may call: the handshake's rule)."""
        if self._rpc is not None:
            self._rpc.register(TABLET_LOAD_VERB, self._on_poll)

    async def local(self) -> TabletSizes:
        maps = self._storage.tablet_maps()
        fresh = time.monotonic() - self._taken_at < self._refresh_s
        if self._cached is None or not fresh or maps is not self._maps_seen:
            self._cached = await asyncio.to_thread(tablet_sizes, self._files(maps))
            self._taken_at, self._maps_seen = time.monotonic(), maps
        return self._cached

    def _files(self, maps: Mapping[uuid.UUID, TabletMap]) -> list[tuple[uuid.UUID, LocalFile]]:
        out: list[tuple[uuid.UUID, LocalFile]] = []
        for table_id in maps:
            table = self._table(table_id)
            if table is not None:
                out.extend((table_id, f) for f in self._storage.local_files(table))
        return out

    async def cluster(self) -> tuple[TabletSizes, frozenset[uuid.UUID]]:
        """Every tablet's size (largest replica) from the members that answered, and who did
        not answer (their tablets' sizes may be missing: the caller decides what that means)."""
        peers = [p for p in self._peers() if p.host_id != self._host_id]
        answers = await asyncio.gather(self.local(), *(self._ask(p) for p in peers))
        missing = frozenset(p.host_id for p, a in zip(peers, answers[1:]) if a is None)
        return load_stats.merge(a for a in answers if a is not None), missing

    async def _ask(self, peer: NodeRecord) -> TabletSizes | None:
        if self._rpc is None or not self._alive(peer.host_id):
            return None
        try:
            answer = await self._rpc.call(peer.raft_id, TABLET_LOAD_VERB, None, timeout=TABLET_LOAD_TIMEOUT)
            return load_stats.decode(answer)
        except (RpcError, OSError, ValueError) as exc:
            log.debug("tablet load of peer unknown host_id=%s reason=%r", peer.host_id, exc)
            return None

    async def _on_poll(self, src: int, payload: Any) -> list[list[Any]]:
        return load_stats.encode(await self.local())
