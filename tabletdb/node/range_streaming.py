"""The internode verbs that move vnode ranges for the topology coordinator: stream and cleanup.

* ``vnode.stream`` (asked of a node gaining ranges of a table): for each range, pull everything
  its sources hold (``data.mutations`` over the range, tombstones included, in slices so no
  message carries a large range whole) and apply it through the ordinary durable write path.
  Upserts are last-write-wins, so the writes the node already takes for the range (both rings
  are written by then) and several sources merge in any order. Answers how many partitions came.
``request_cleanup`` is what ``nodetool cleanup`` asks (``POST /storage_service/keyspace_cleanup``):
it marks this node's cleanup as needed in group0 and waits until the coordinator has run it, so
a manual cleanup is never beside an ownership change either.

* ``vnode.cleanup`` (asked of a node whose cleanup is running): after a Raft read barrier shows
  at least the topology version named, delete from its files of every vnode table the ranges it
  replicates in none of the rings reads and writes use (``StorageService.drop_ranges``: logged
  first, so a commit-log replay deletes them again). Answers how many partitions went.

Rows are copied rather than files because a vnode table is one file per shard holding every
range the node replicates: a range is a slice of a file, never a whole one. A node asking
itself runs the handler directly (no RPC to self).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from tabletdb.cql.errors import InvalidRequest
from tabletdb.dht.ring import Location
from tabletdb.dht.token import TokenRange
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import raft_id_of
from tabletdb.net.rpc import RpcNode
from tabletdb.node.group0_shell.service import Group0Service
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService, table_directory
from tabletdb.replica.verbs import TableOf, wait_for_table
from tabletdb.replica.wire import VERB_MUTATIONS, mutations_from_plain
from tabletdb.topology import vnode_ranges as vr
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.states import CleanupStatus
from tabletdb.topology.vnode_phase import RangeCleanupTask, RangeStreamTask, ask_cleanup, vnode_tables

log = logging.getLogger(__name__)

VERB_RANGES_STREAM = "vnode.stream"
VERB_RANGES_CLEANUP = "vnode.cleanup"

STREAM_TIMEOUT = 600.0
"""Seconds a target may take over one table's ranges."""
SLICE_TIMEOUT = 60.0
"""Seconds one source may take to export one slice."""
MAX_SLICE = 1 << 58
"""The widest token slice fetched in one message: 1/64 of the ring (a range of 3 nodes with 256
tokens each is ~1/768 of it, so most ranges go whole)."""
CONCURRENCY = 4
"""Slices fetched at once by one target."""
APPLY_BATCH = 512
"""Partitions per local write (one commit-log record each)."""


def _slices(token_range: TokenRange) -> list[TokenRange]:
    """``token_range`` (non-wrapping) cut into adjacent pieces at most ``MAX_SLICE`` wide."""
    out: list[TokenRange] = []
    start = token_range.start
    while start < token_range.end:
        end = min(token_range.end, start + MAX_SLICE)
        out.append(TokenRange(start, end))
        start = end
    return out


class RangeStreaming:
    """Serves the two verbs on ``rpc`` and asks them of other nodes."""

    def __init__(
        self,
        rpc: RpcNode,
        local: LocalReplica,
        storage: StorageService,
        table_of: TableOf,
        state: Callable[[], ClusterState],
        barrier: Callable[[], Awaitable[int]],
    ) -> None:
        """``state``: group0's state as this node applied it; ``barrier``: a Raft read barrier
        answering the topology version then applied."""
        self.rpc = rpc
        self.local = local
        self.storage = storage
        self.table_of = table_of
        self.state = state
        self.barrier = barrier

    def register(self) -> None:
        self.rpc.register(VERB_RANGES_STREAM, self._stream)
        self.rpc.register(VERB_RANGES_CLEANUP, self._cleanup)

    # --- asking --------------------------------------------------------------------------------

    async def stream(self, task: RangeStreamTask) -> int:
        """Have the task's target pull its ranges of the table from their sources."""
        payload = [
            task.table_id.bytes,
            [[r.start, r.end, [raft_id_of(s) for s in sources]] for r, sources in task.ranges],
        ]
        target = raft_id_of(task.target)
        if target == self.rpc.node_id:
            return await self._stream(target, payload)
        return int(await self.rpc.call(target, VERB_RANGES_STREAM, payload, STREAM_TIMEOUT))

    async def cleanup(self, task: RangeCleanupTask) -> int:
        """Have the task's node drop the vnode ranges it no longer replicates."""
        node = raft_id_of(task.host)
        if node == self.rpc.node_id:
            return await self._cleanup(node, [task.version])
        return int(await self.rpc.call(node, VERB_RANGES_CLEANUP, [task.version], STREAM_TIMEOUT))

    # --- serving -------------------------------------------------------------------------------

    async def _stream(self, src: int, payload: list[Any]) -> int:
        raw_id, ranges = payload
        table = await wait_for_table(self.table_of, raw_id)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def pull(piece: TokenRange, source: int) -> int:
            async with limit:
                request = [raw_id, ["r", piece.start, piece.end]]
                if source == self.rpc.node_id:
                    mutations = self.local.range_mutations(table, piece)
                else:
                    plain = await self.rpc.call(source, VERB_MUTATIONS, request, SLICE_TIMEOUT)
                    mutations = mutations_from_plain(plain)
                for start in range(0, len(mutations), APPLY_BATCH):
                    await self.local.apply_direct(table, mutations[start : start + APPLY_BATCH])
                return len(mutations)

        counts = await asyncio.gather(
            *(
                pull(piece, source)
                for start, end, sources in ranges
                for piece in _slices(TokenRange(start, end))
                for source in sources
            )
        )
        total = sum(counts)
        log.info(
            "vnode ranges streamed table=%s.%s ranges=%d partitions=%d",
            table.keyspace,
            table.name,
            len(ranges),
            total,
        )
        return total

    async def _cleanup(self, src: int, payload: list[Any]) -> int:
        (version,) = payload
        applied = await self.barrier()
        if applied < version:
            raise InvalidRequest(
                f"cleanup asked at topology version {version} but this node has applied {applied}; retry"
            )
        state = self.state()
        me = self.storage.host_id
        members = state.topology.members
        tokens = {h: r.tokens for h, r in members.items()}
        locations = {h: Location(r.datacenter, r.rack) for h, r in members.items()}
        rings = vr.rings(state.topology_state, tokens)
        if all(me not in ring for ring in (rings.read, *rings.writes)):
            raise InvalidRequest(
                f"node {me} owns no tokens at topology version {applied}; nothing to clean by"
            )
        catalog = state.metadata.catalog
        removed = 0
        for vt in vnode_tables(catalog):
            table = catalog.by_id(vt.table_id)
            if table is None or not table_directory(self.storage.data_dir, table).exists():
                continue
            drop = vr.complement(vr.kept_ranges(rings, me, vt.replication, locations))
            removed += await self.storage.drop_ranges(table, drop)
        log.info("vnode cleanup done topology_version=%d partitions_removed=%d", applied, removed)
        return removed


CLEANUP_WAIT = 600.0
"""Seconds ``request_cleanup`` waits for the coordinator to clean this node."""


async def request_cleanup(group0: Group0Service, host: uuid.UUID) -> None:
    """Mark ``host``'s cleanup needed in group0 (decided again if the state moved on) and wait
    until it is clean; ValueError if the node is not normal, TimeoutError after CLEANUP_WAIT."""
    async with asyncio.timeout(CLEANUP_WAIT):
        while True:
            await group0.driver.read_barrier()
            t = group0.state.topology_state
            found = ask_cleanup(t, host)
            if found is None:
                break  # one is pending already: wait for it
            command = TopologyCommand(
                t.state_id, replace(found.topology, state_id=uuid.uuid1()), (), found.reason
            )
            if await group0.submit_topology(command):
                log.info("vnode cleanup asked host_id=%s", host)
                break
        while (
            node := group0.state.topology_state.nodes.get(host)
        ) is not None and node.cleanup is not CleanupStatus.CLEAN:
            await asyncio.sleep(0.2)
