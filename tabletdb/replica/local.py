"""This node acting as a replica: apply, read, scan and export over its own stores.

The coordinator calls these directly for the local replica (no RPC to self) and the replica
RPC verbs call them for remote coordinators, so a local and a remote replica answer the same
thing. Scans merge the node's stores that cover a range (a vnode table's shards interleave in
token order) and stop after ``limit`` CQL rows, cutting a partition if needed; the position
returned resumes exactly after the last row given.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Awaitable, Iterator, Sequence
from typing import Protocol

from tabletdb.dht.token import TokenRange
from tabletdb.replica.cdc_log import CdcLog
from tabletdb.replica.stores import Committer, DataStores
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import FULL_SLICE, ClusteringSlice, Mutation
from tabletdb.storage.reconcile import PartitionData
from tabletdb.storage.tablet_store import ScanPage, ScanPosition, TabletStore

STORE_BATCH = 512
"""Rows fetched from one store per SQL page while merging."""


class DerivedApply(Protocol):
    """Applies base writes together with the view and index updates they cause (``views.updates``)."""

    def maintains(self, table: TableDef) -> bool: ...

    def apply(self, table: TableDef, mutations: Sequence[Mutation]) -> Awaitable[object]: ...


class LocalReplica:
    """Replica-side operations on this node's stores (the ``DataStores`` of the node)."""

    def __init__(
        self, stores: DataStores, derived: DerivedApply | None = None, cdc: CdcLog | None = None
    ) -> None:
        self.stores = stores
        self._derived = derived
        """Base writes of tables with views or indexes (client writes, Paxos commits, read repair
        alike) update them from this replica through it; None: a replica that only applies."""
        self._cdc = cdc
        """Writes to tables with CDC also apply their log rows here (None: no log is written)."""

    def apply(self, table: TableDef, mutations: Sequence[Mutation], *, log: bool = True) -> Awaitable[object]:
        """Apply durably (views and indexes updated from here if ``table`` has any), with the CDC
        log rows of the change unless ``log`` is False (read repair: data already logged).

        This and ``apply_direct`` return what to await rather than being coroutines: on the
        common path that is the commit's own future, so a write pays no coroutine frame per
        layer between the request and its commit. They raise at the call what they cannot
        start (a token this node holds no replica of)."""
        cdc = self._cdc
        if log and cdc is not None and table.options.cdc_enabled:
            if cdc.wants_images(table):
                for m in mutations:
                    self.stores.committer(table, m.token)  # what cannot start raises here, at the call
                return self._apply_with_images(table, mutations, cdc)
            # The base write and its log rows start in the same tick, so one commit-log record
            # of this node holds both (``storage.node_commit``).
            log_table, log_mutations = cdc.log_of(table, mutations)
            return asyncio.gather(
                self._apply_base(table, mutations), self.apply_direct(log_table, log_mutations)
            )
        return self._apply_base(table, mutations)

    async def _apply_with_images(self, table: TableDef, mutations: Sequence[Mutation], cdc: CdcLog) -> None:
        """A CDC write with pre- or post-images: read the partitions, then write base and log
        in one tick, all under the partitions' lock (``CdcLog.reading``)."""
        async with cdc.reading(table, mutations, self.stores) as before:
            log_table, log_mutations = cdc.log_of(table, mutations, before)
            await asyncio.gather(
                self._apply_base(table, mutations), self.apply_direct(log_table, log_mutations)
            )

    def _apply_base(self, table: TableDef, mutations: Sequence[Mutation]) -> Awaitable[object]:
        derived = self._derived
        if derived is not None and derived.maintains(table):
            return derived.apply(table, mutations)
        return self.apply_direct(table, mutations)

    def apply_direct(self, table: TableDef, mutations: Sequence[Mutation]) -> Awaitable[object]:
        """Apply durably: one group-commit entry per store, done once the commit is."""
        if len(mutations) == 1:
            return self.stores.committer(table, mutations[0].token).apply(mutations)
        by_store: dict[int, tuple[Committer, list[Mutation]]] = {}
        for m in mutations:
            committer = self.stores.committer(table, m.token)
            by_store.setdefault(id(committer), (committer, []))[1].append(m)
        if len(by_store) == 1:
            committer, ms = next(iter(by_store.values()))
            return committer.apply(ms)
        return asyncio.gather(*(c.apply(ms) for c, ms in by_store.values()))

    def read_row_cells(
        self, table: TableDef, key: bytes, token: int, now: int
    ) -> dict[str, bytes] | object | None:
        """``TabletStore.read_row_cells`` of the store holding ``token`` (the direct point read)."""
        return self.stores.store(table, token).read_row_cells(key, now)

    def read_partition(
        self,
        table: TableDef,
        key: bytes,
        token: int,
        now: int,
        clustering: ClusteringSlice = FULL_SLICE,
        reverse: bool = False,
    ) -> PartitionData | None:
        return self.stores.store(table, token).read_partition(key, now, clustering, reverse=reverse)

    def scan(
        self, table: TableDef, token_range: TokenRange, now: int, limit: int, after: ScanPosition | None
    ) -> ScanPage:
        """Up to ``limit`` rows of ``token_range`` after ``after``, from every local store covering it."""
        out: list[PartitionData] = []
        remaining = limit
        for data in self._partitions(table, token_range, now, after):
            if data.rows and len(data.rows) > remaining:
                data = PartitionData(data.partition_key, data.token, data.static_row, data.rows[:remaining])
            out.append(data)
            remaining -= data.row_count
            if remaining <= 0:
                last = data.rows[-1].clustering if data.rows else None
                return ScanPage(tuple(out), ScanPosition(data.token, data.partition_key, last))
        return ScanPage(tuple(out), None)

    def partition_mutations(self, table: TableDef, key: bytes, token: int) -> list[Mutation]:
        """Everything stored for one partition, tombstones included (read repair's source)."""
        return self.stores.store(table, token).partition_mutations(key)

    def range_mutations(self, table: TableDef, token_range: TokenRange) -> list[Mutation]:
        """Everything stored for a non-wrapping range on this node, tombstones included."""
        out: list[Mutation] = []
        for segment in self.stores.segments(table):
            for piece in segment.token_range.intersect(token_range):
                for store in segment.stores:
                    out.extend(store.mutations_in_range(piece))
        return out

    def _partitions(
        self, table: TableDef, token_range: TokenRange, now: int, after: ScanPosition | None
    ) -> Iterator[PartitionData]:
        for segment in self.stores.segments(table):
            for piece in segment.token_range.intersect(token_range):
                if after is not None and piece.end < after.token:
                    continue
                streams = [_store_stream(s, piece, now, after) for s in segment.stores]
                if len(streams) == 1:
                    yield from streams[0]
                else:
                    yield from heapq.merge(*streams, key=lambda d: (d.token, d.partition_key))


def _store_stream(
    store: TabletStore, piece: TokenRange, now: int, after: ScanPosition | None
) -> Iterator[PartitionData]:
    position = after
    while True:
        page = store.scan(piece, now, limit=STORE_BATCH, after=position)
        yield from page.partitions
        if page.next_position is None:
            return
        position = page.next_position
