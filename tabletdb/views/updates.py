"""Views and indexes maintained by the base replicas, ScyllaDB style.

Every replica that applies a write to a table with materialized views or secondary indexes
(a client write, a Paxos commit, a read repair) derives the view and index entries changes from
its own before/after read of the partition, under that partition's lock (``DerivedLocks``),
with the same timestamps as on a single node (``DerivedLocks.stamp``), and sends them to its
*paired* view replica: the i-th replica of the base token in placement order pairs with the
i-th replica of the view (or index entries) token, within this node's datacenter, so each view
replica gets each update from one base replica and RF copies of the base make RF copies of the
view. Where the pairing is undefined (this node is not a base replica of the token, or the DC's
replica counts differ) or the paired replica is down or fails, the update goes to every live
view replica instead and one ack is enough. The base replica answers its coordinator only after
its own base apply *and* the view updates were acknowledged: synchronous view updates, so a
write acknowledged at a level is in the views at that level (no view backlog, no hints).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence

from tabletdb.coordinator.consistency import ONE
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import Replica, ReplicaSet
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.replica.wire import VERB_APPLY, apply_payload, mutations_to_plain
from tabletdb.schema.model import TableDef, ViewDef
from tabletdb.storage.mutation import Mutation
from tabletdb.views.base_snapshot import partition_snapshot, touched_rows
from tabletdb.views.view_rows import Derived, derive, has_derived, write_timestamp

log = logging.getLogger(__name__)

ViewsOf = Callable[[TableDef], Sequence[ViewDef]]
Target = tuple[uuid.UUID, Replica | None]
"""A derived table and the one replica its updates go to (None: every live replica)."""


def paired_replica(local: Callable[[Replica], bool], base: ReplicaSet, view: ReplicaSet) -> Replica | None:
    """The view replica this node's base replica pairs with, or None where the pairing is undefined.

    Pairs are formed within this node's datacenter (placement order of each list restricted to
    it), so view updates never cross datacenters while each DC keeps its own RF copies.
    """
    me = next((r for r in base if local(r)), None)
    if me is None:
        return None
    base_here = [r for r in base if r.dc == me.dc]
    view_here = [r for r in view if r.dc == me.dc]
    if len(base_here) != len(view_here):
        return None
    return view_here[base_here.index(me)]


class ViewUpdates:
    """The ``derived`` of a node's ``LocalReplica``: base apply plus paired view and index updates.

    ``replicas`` is the cluster as the updates reach it. Its local replica applies directly:
    view and index tables maintain nothing themselves, and the replica that maintains the base
    is built on this object, so it cannot be part of what this object is built with.
    """

    def __init__(
        self, replicas: Replicas, views_of: ViewsOf, now: Callable[[], int], locks: DerivedLocks
    ) -> None:
        self._ctx = replicas
        self._views_of = views_of
        self._now = now
        self._locks = locks
        self._fallback = WriteCoordinator(replicas)

    def maintains(self, table: TableDef) -> bool:
        return has_derived(table, self._views_of(table))

    async def apply(self, table: TableDef, mutations: Sequence[Mutation]) -> None:
        """Apply base ``mutations`` here, then deliver the view and index changes they cause."""
        ctx = self._ctx
        views = self._views_of(table)
        stores = ctx.local.stores
        keys = sorted({(m.partition_key, m.token) for m in mutations})
        locks = self._locks
        async with locks.writing(table.id, [key for key, _ in keys]):
            now = self._now()
            touched = {
                k: touched_rows(table, (m for m in mutations if m.partition_key == k[0])) for k in keys
            }
            before = {k: partition_snapshot(table, stores, k[0], k[1], now, touched[k]) for k in keys}
            await ctx.local.apply_direct(table, mutations)
            timestamp = locks.stamp(write_timestamp(mutations))
            sends: dict[Target, tuple[TableDef, list[Mutation]]] = {}
            for key, token in keys:
                derived: Derived = {}
                after = partition_snapshot(table, stores, key, token, now, touched[(key, token)])
                derive(table, views, key, token, before[(key, token)], after, timestamp, now, derived)
                base_replicas = ctx.placement.replicas(table, token)
                for target_table, changes in derived.values():
                    for m in changes:
                        view_replicas = ctx.placement.replicas(target_table, m.token)
                        pair = paired_replica(ctx.is_local, base_replicas, view_replicas)
                        entry = sends.setdefault((target_table.id, pair), (target_table, []))
                        entry[1].append(m)
            await asyncio.gather(*(self._deliver(t, pair, ms) for (_, pair), (t, ms) in sends.items()))

    async def _deliver(self, table: TableDef, pair: Replica | None, mutations: list[Mutation]) -> None:
        ctx = self._ctx
        if pair is not None and ctx.is_local(pair):
            await ctx.local.apply_direct(table, mutations)
            return
        if pair is not None and ctx.is_up(pair):
            try:
                version = ctx.placement.topology_version()
                payload = apply_payload(table.id.bytes, mutations_to_plain(mutations), version)
                await ctx.call(pair, VERB_APPLY, payload, ctx.timeouts.write)
                return
            except Exception as exc:  # the pair failed: fall back to every live view replica
                log.info("view update to paired replica failed replica=%s error=%s", pair.host_id, exc)
        await self._fallback.write(table, mutations, ONE)
