"""Finished query traces sent to every live peer, so `system_traces` reads the same everywhere.

Traces live in each node's `TraceStore` (`cql.tracing`), rendered as system_traces.sessions and
events. A driver reads a trace (`get_query_trace()`, cqlsh's TRACING ON) through its load
balancing policy: the sessions poll and the events read may go to any node, not the
coordinator. ScyllaDB writes traces to a replicated keyspace; here the coordinator sends each
finished session (with its events, in one message) to its live peers and answers the traced
request once they have it, or once the short timeout passes for a peer that is slow or gone.
Tracing is opt-in per request, so the cost falls only on traced requests.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from tabletdb.cql.tracing import TraceSession, TraceStore, session_from_plain, session_to_plain
from tabletdb.group0.topology import NodeRecord
from tabletdb.net.rpc import RpcError, RpcNode

log = logging.getLogger(__name__)

TRACE_VERB = "trace.session"
SHARE_TIMEOUT = 2.0
"""Seconds a traced request waits for a peer to take its trace before answering anyway."""


class TraceSharing:
    """Sends this node's finished traces to its peers and keeps the ones they send."""

    def __init__(
        self,
        host_id: uuid.UUID,
        store: TraceStore,
        rpc: RpcNode | None,
        peers: Callable[[], Iterable[NodeRecord]],
        alive: Callable[[uuid.UUID], bool],
    ) -> None:
        self._host_id = host_id
        self._store = store
        self._rpc = rpc
        self._peers = peers
        self._alive = alive

    def register(self) -> None:
        """Serve the verb and share what this node finishes (a single node has no RPC: no-op)."""
        if self._rpc is not None:
            self._rpc.register(TRACE_VERB, self._on_session)
            self._store.on_finish(self.share)

    async def share(self, session: TraceSession) -> None:
        peers = [p for p in self._peers() if p.host_id != self._host_id and self._alive(p.host_id)]
        if peers:
            plain = session_to_plain(session)
            await asyncio.gather(*(self._send(p, plain) for p in peers))

    async def _send(self, peer: NodeRecord, plain: list[Any]) -> None:
        assert self._rpc is not None
        try:
            await self._rpc.call(peer.raft_id, TRACE_VERB, plain, timeout=SHARE_TIMEOUT)
        except (RpcError, OSError, TimeoutError) as exc:
            # The trace stays readable on this node and the peers that took it.
            log.debug("trace not shared host_id=%s reason=%r", peer.host_id, exc)

    async def _on_session(self, src: int, payload: Any) -> None:
        self._store.add(session_from_plain(payload))
