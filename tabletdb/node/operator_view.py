"""What operators' tools see of running nodes beyond group0's state: liveness, load, uptime.

group0 holds who the members are and what they own, the same on every node; whether a member
answers (the failure detector), how much data it holds on disk and how long it has been up
are facts of the running processes. nodetool asks one node for all of them, so the node asks
its peers' load over the internode RPC (``LOAD_VERB``; a peer that does not answer in time
has an unknown load, shown as ``?``, never a made-up number).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabletdb.group0.topology import NodeRecord
from tabletdb.net.rpc import RpcError, RpcNode

log = logging.getLogger(__name__)

LOAD_VERB = "node.load"
LOAD_TIMEOUT = 3.0


def data_size(directory: Path) -> int:
    """Bytes of every file under ``directory`` (tablet files, their WAL, the commit log)."""
    total = 0
    stack = [directory]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except FileNotFoundError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except FileNotFoundError:  # a file dropped while we walked (a tablet moved away)
                continue
    return total


@dataclass(frozen=True)
class NodeOps:
    """The running node as the operator routes (``node.admin.rest_ring``) read it."""

    host_id: uuid.UUID
    alive: Callable[[uuid.UUID], bool]
    """The failure detector's view; this node is always alive to itself."""
    loads: LoadReport
    started_wall: float
    """``time.time()`` when the process started (nodetool's generation number and uptime)."""
    cql_serving: Callable[[], bool]
    group0_running: bool

    def uptime_ms(self) -> int:
        return int((time.time() - self.started_wall) * 1000)


class LoadReport:
    """This node's data on disk, and its peers' asked over the internode RPC."""

    def __init__(
        self,
        host_id: uuid.UUID,
        data_dir: Path,
        rpc: RpcNode | None,
        peers: Callable[[], Iterable[NodeRecord]],
        alive: Callable[[uuid.UUID], bool],
    ) -> None:
        self._host_id = host_id
        self._data_dir = data_dir
        self._rpc = rpc
        self._peers = peers
        self._alive = alive

    def register(self) -> None:
        """Serve the load verb to peers (only members may call it: the handshake's rule)."""
        if self._rpc is not None:
            self._rpc.register(LOAD_VERB, self._on_load)

    async def local(self) -> int:
        return await asyncio.to_thread(data_size, self._data_dir)

    async def load_map(self) -> dict[uuid.UUID, int | None]:
        """Host id -> bytes on disk, None where a peer is down or did not answer in time."""
        peers = [p for p in self._peers() if p.host_id != self._host_id]
        answers = await asyncio.gather(self.local(), *(self._ask(p) for p in peers))
        return {self._host_id: answers[0], **{p.host_id: a for p, a in zip(peers, answers[1:])}}

    async def _ask(self, peer: NodeRecord) -> int | None:
        if self._rpc is None or not self._alive(peer.host_id):
            return None
        try:
            answer = await self._rpc.call(peer.raft_id, LOAD_VERB, None, timeout=LOAD_TIMEOUT)
        except (RpcError, OSError) as exc:
            log.debug("load of peer unknown host_id=%s reason=%r", peer.host_id, exc)
            return None
        return answer if isinstance(answer, int) else None

    async def _on_load(self, src: int, payload: Any) -> int:
        return await self.local()
