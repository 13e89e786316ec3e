"""Coordinating a write: send each mutation to all live replicas, answer once the level is met.

Mutations are grouped by replica set (all tokens of a tablet share one), and each group is
checked for availability before anything is sent: if the failure detector says too few
replicas are up the client gets Unavailable and no replica sees the write. Otherwise every live
replica gets it concurrently (the local one through its group committer, the others over RPC);
the client is answered as soon as the consistency level is met, while the slower replicas keep
going in the background; if a live replica fails, the ones marked down are tried too (the failure
detector lags a restart by a ping). A replica that misses a write (down, or too slow) just misses it:
there are no hints; reads at a level that overlaps the write's repair the difference.

The local-only case (RF=1 on this node, or a single node) goes straight to the committer.
A tablet in migration may have two replica sets to write (``ReplicaPlacement.write_sets``): the
write goes to both and needs its level on each.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from tabletdb.cdc.tablet_streams import sets_of
from tabletdb.cdc.write_time import refusal
from tabletdb.coordinator.consistency import ALL, NAMES, check_available_sets, tracker_for
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import Replica, WriteSets, replica_names, union
from tabletdb.cql.errors import InvalidRequest, TruncateError, Unavailable, WriteFailure, WriteTimeout
from tabletdb.cql.tracing import current as tracing_on
from tabletdb.cql.tracing import trace
from tabletdb.replica.cdc_log import write_timestamps
from tabletdb.replica.wire import VERB_APPLY, VERB_TRUNCATE, apply_payload, mutations_to_plain
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import Mutation

log = logging.getLogger(__name__)

Settle = Callable[[Replica, BaseException | None], None]


class WriteCoordinator:
    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas

    def groups(
        self, table: TableDef, mutations: Sequence[Mutation]
    ) -> list[tuple[WriteSets, list[Mutation]]]:
        """Mutations grouped by the replica sets of their token (placement order kept)."""
        placement = self.replicas.placement
        by_set: dict[WriteSets, list[Mutation]] = {}
        for m in mutations:
            by_set.setdefault(placement.write_sets(table, m.token), []).append(m)
        return list(by_set.items())

    def write(
        self, table: TableDef, mutations: Sequence[Mutation], cl: int, write_type: str = "SIMPLE"
    ) -> Awaitable[object]:
        """Write ``mutations`` at consistency ``cl``; raises Unavailable, WriteTimeout or WriteFailure.

        What to await, not a coroutine: a single write whose only replica is this node is the
        local commit itself (``LocalReplica.apply``)."""
        if table.options.cdc_enabled:
            self.check_cdc_time(table, mutations)
        if len(mutations) == 1:  # the common single-statement write: skip the grouping
            sets = self.replicas.placement.write_sets(table, mutations[0].token)
            if len(sets) == 1 and self.replicas.placement.only_local(sets[0]):
                trace("Applying a mutation of %s.%s locally", table.keyspace, table.name)
                return self.replicas.local.apply(table, mutations)
        return self._write(table, mutations, cl, write_type)

    def check_cdc_time(self, table: TableDef, mutations: Sequence[Mutation]) -> None:
        """Refuse a CDC write whose timestamp the streams cannot serve (``cdc.write_time``);
        ``write`` checks its own, a batch checks all its tables before writing any."""
        self.check_cdc_timestamps(table, {t for m in mutations for t in write_timestamps(m)})

    def check_cdc_timestamps(self, table: TableDef, timestamps: Iterable[int]) -> None:
        """``check_cdc_time`` for writes whose mutations are not built yet: a read-modify-write
        (list element or UDT field update through Paxos) knows its timestamp before it reads."""
        placement = self.replicas.placement
        if placement.tablet_map(table.id) is None:
            starts = [t for t, _ in placement.cdc_generations()]
        else:
            starts = [s.timestamp for s in sets_of(placement.cdc_stream_sets(), table.id)]
        now = time.time_ns() // 1000
        for timestamp in timestamps:
            why = refusal(starts, timestamp, now)
            if why is not None:
                raise InvalidRequest(why)

    async def _write(self, table: TableDef, mutations: Sequence[Mutation], cl: int, write_type: str) -> None:
        version = self.replicas.placement.topology_version()  # the version the groups are chosen by
        groups = self.groups(table, mutations)
        alive = [self._check(replicas, cl) for replicas, _ in groups]  # all checked before any is sent
        if len(groups) == 1:
            await self._write_group(table, groups[0][0], alive[0], groups[0][1], cl, write_type, version)
            return
        await asyncio.gather(
            *(
                self._write_group(table, r, live, ms, cl, write_type, version)
                for (r, ms), live in zip(groups, alive)
            )
        )

    async def truncate(self, table: TableDef) -> None:
        """Remove ``table``'s data on every node; all nodes must be up (as in Cassandra)."""
        ctx = self.replicas
        members = ctx.placement.members()
        alive = [m for m in members if ctx.is_up(m)]
        if len(alive) < len(members):
            raise Unavailable(
                f"Cannot truncate {table.keyspace}.{table.name}: {len(members) - len(alive)} nodes are down",
                ALL,
                len(members),
                len(alive),
            )

        async def one(member: Replica) -> None:
            if ctx.is_local(member):
                ctx.local.stores.truncate(table)
            else:
                await ctx.call(member, VERB_TRUNCATE, [table.id.bytes], ctx.timeouts.truncate)

        try:
            await asyncio.gather(*(one(m) for m in members))
        except Exception as exc:
            raise TruncateError(f"Error during truncate of {table.keyspace}.{table.name}: {exc}") from exc

    def _check(self, sets: WriteSets, cl: int) -> list[Replica]:
        if len(sets) == 1 and self.replicas.placement.only_local(sets[0]):
            return list(sets[0])
        return check_available_sets(cl, sets, self.replicas.local_dc, self.replicas.is_up, write=True)

    async def _write_group(
        self,
        table: TableDef,
        sets: WriteSets,
        alive: list[Replica],
        mutations: list[Mutation],
        cl: int,
        write_type: str,
        version: int,
    ) -> None:
        ctx = self.replicas
        replicas = sets[0] if len(sets) == 1 else union(sets)
        if len(sets) == 1 and ctx.placement.only_local(replicas):
            trace("Applying %d mutation(s) of %s.%s locally", len(mutations), table.keyspace, table.name)
            await ctx.local.apply(table, mutations)
            return
        if tracing_on():
            trace(
                "Sending %d mutation(s) of %s.%s to replicas %s",
                len(mutations),
                table.keyspace,
                table.name,
                replica_names(replicas),
            )
        tracker = tracker_for(cl, sets, ctx.local_dc, write=True)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        errors: list[str] = []
        payload: list[Any] | None = None

        standby = [r for r in replicas if r not in alive]
        """Replicas the failure detector calls down: tried once a live one fails (it may be stale)."""

        def send(replica: Replica) -> None:
            nonlocal payload
            coro: Awaitable[Any]
            if ctx.is_local(replica):
                coro = _applied_locally(ctx, table, mutations)
            else:
                if payload is None:
                    payload = apply_payload(table.id.bytes, mutations_to_plain(mutations), version)
                coro = ctx.call(replica, VERB_APPLY, payload, ctx.timeouts.write)
            ctx.spawn(_report(replica, coro, settle))

        def settle(replica: Replica, error: BaseException | None) -> None:
            if error is None:
                finished = tracker.ack(replica)
            else:
                errors.append(f"{replica.host_id}: {error}")
                finished = tracker.fail(replica)
                while standby and not finished:
                    send(standby.pop(0))
            if finished and not done.done():
                done.set_result(None)

        for replica in alive:
            send(replica)
        try:
            async with asyncio.timeout(ctx.timeouts.write):
                await done
        except TimeoutError:
            if tracker.satisfied:
                # The last acknowledgements ran in the loop turn that fired the timeout, before
                # this task resumed: the write did reach its consistency level ("received only 2
                # responses from 2" was reported under load).
                return
            raise WriteTimeout(
                f"Operation timed out for {table.keyspace}.{table.name} - received only "
                f"{tracker.received} responses from {tracker.block_for} CL={NAMES.get(cl, cl)}.",
                cl,
                tracker.received,
                tracker.block_for,
                write_type,
            ) from None
        if not tracker.satisfied:
            raise WriteFailure(
                f"Operation failed for {table.keyspace}.{table.name} - received {tracker.received} "
                f"responses and {len(errors)} failures from {tracker.block_for} CL={NAMES.get(cl, cl)}: "
                + "; ".join(errors),
                cl,
                tracker.received,
                tracker.block_for,
                len(errors),
                write_type,
            )


async def _applied_locally(ctx: Replicas, table: TableDef, mutations: Sequence[Mutation]) -> None:
    """The local replica's write as one replica among others: whatever it raises, even when
    starting, reaches the tracker through ``_report``."""
    await ctx.local.apply(table, mutations)


async def _report(replica: Replica, coro: Awaitable[Any], settle: Settle) -> None:
    """Await one replica's write and feed the outcome to the tracker."""
    try:
        await coro
    except Exception as exc:  # any failure of a replica counts against the level
        log.info("replica write failed replica=%s error=%s", replica.host_id, exc)
        settle(replica, exc)
        return
    settle(replica, None)
