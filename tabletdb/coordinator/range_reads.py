"""Counts and value pages of token ranges answered by one replica each: the pushed-down
``COUNT(*)`` and the fast full scan (issue 19 item 5).

At ONE and LOCAL_ONE one replica's answer is the answer, as for any read at those levels: this
node's stores where it is a replica (the drivers' token-aware default), otherwise the most
preferred live replica over ``data.count`` / ``data.values``, the next one if it fails. The
replica counts or builds the page in SQLite (``replica.range_reads``), so neither rows nor
cells cross the wire or go through Python objects for a count.

A remote replica has ``range_request_timeout_in_ms`` to answer (ReadTimeout otherwise); this
node's own count has none, as it waits on no one (it runs on worker threads, so the node keeps
serving meanwhile).

Higher levels are not served here (``serves`` says False): a count must equal what a full read
at that level returns, and that read compares replicas' data (digests of timestamps and TTLs,
read repair), which per-replica counts cannot (two replicas can hold as many rows and still
differ). Those go through the replicated scan (``coordinator.reads``), counted without decoding.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from tabletdb.coordinator.consistency import LOCAL_ONE, NAMES, ONE, ResponseTracker, check_available
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import Replica, ReplicatedRange
from tabletdb.coordinator.reads import LOCAL_DAMAGED
from tabletdb.cql.errors import ReadFailure, ReadTimeout
from tabletdb.dht.token import TokenRange
from tabletdb.replica.range_reads import count_rows, live_values
from tabletdb.replica.wire import VERB_COUNT, VERB_VALUES, position_from_plain, position_to_plain
from tabletdb.schema.model import TableDef
from tabletdb.storage.range_reads import ValuesRow
from tabletdb.storage.tablet_store import ScanPosition, TabletCorrupt, TabletUnavailable

ONE_REPLICA_LEVELS = (ONE, LOCAL_ONE)

log = logging.getLogger(__name__)


class RangeReads:
    """One-replica counts and value pages over ``Replicas``."""

    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas

    def serves(self, table: TableDef, cl: int) -> bool:
        """Whether one replica per range answers a read of ``table`` at ``cl``."""
        if cl in ONE_REPLICA_LEVELS:
            return True
        placement = self.replicas.placement
        return all(placement.only_local(rr.replicas) for rr in placement.ranges(table))

    def ranges(self, table: TableDef) -> list[ReplicatedRange]:
        return self.replicas.placement.ranges(table)

    async def count(
        self, table: TableDef, where: ReplicatedRange, piece: TokenRange, now: int, cl: int
    ) -> int:
        """CQL rows of ``piece`` (inside ``where``) as one replica holds them."""
        stores = self.replicas.local.stores

        async def local() -> int:
            return await count_rows(stores, table, piece, now)

        answer = await self._one(table, where, cl, local, VERB_COUNT, [piece.start, piece.end, now])
        return int(answer)

    async def values(
        self,
        table: TableDef,
        where: ReplicatedRange,
        piece: TokenRange,
        now: int,
        columns: tuple[str, ...],
        limit: int,
        after: ScanPosition | None,
        cl: int,
    ) -> tuple[list[ValuesRow], ScanPosition | None]:
        """Up to ``limit`` live rows of ``piece`` after ``after`` with the values of ``columns``."""
        stores = self.replicas.local.stores

        async def local() -> list[Any]:
            rows, nxt = live_values(stores, table, piece, now, columns, limit, after)
            return [rows, position_to_plain(nxt)]

        request = [piece.start, piece.end, now, list(columns), limit, position_to_plain(after)]
        rows, nxt = await self._one(table, where, cl, local, VERB_VALUES, request)
        return [(r[0], r[1], r[2], tuple(r[3])) for r in rows], position_from_plain(nxt)

    async def _one(
        self,
        table: TableDef,
        where: ReplicatedRange,
        cl: int,
        local: Callable[[], Awaitable[Any]],
        verb: str,
        request: list[Any],
    ) -> Any:
        """The answer of the most preferred live replica that gives one."""
        ctx = self.replicas
        level = cl if cl in ONE_REPLICA_LEVELS else ONE  # only-local ranges at any level
        alive = check_available(level, where.replicas, ctx.local_dc, ctx.is_up, write=False)
        tracker = ResponseTracker(level, where.replicas, ctx.local_dc, write=False)
        candidates = [r for r in sorted(alive, key=ctx.prefer) if tracker.counts(r)]
        timeout = ctx.timeouts.range
        failed: list[Replica] = []
        note = ""
        for replica in candidates:
            try:
                if ctx.is_local(replica):  # no wait on anyone: a long count here is work, not silence
                    return await local()
                async with asyncio.timeout(timeout):
                    return await ctx.call(replica, verb, [table.id.bytes, request], timeout)
            except TimeoutError:
                raise ReadTimeout(
                    f"Operation timed out for {table.keyspace}.{table.name} - received only 0 responses "
                    f"from 1 CL={NAMES.get(cl, cl)}.",
                    cl,
                    0,
                    1,
                    False,
                ) from None
            except (TabletCorrupt, TabletUnavailable) as exc:
                log.info(
                    "%s.%s: this node's replica refused a range read: %s", table.keyspace, table.name, exc
                )
                note = LOCAL_DAMAGED
                failed.append(replica)
            except Exception as exc:
                log.info(
                    "%s.%s: replica %s failed a range read: %s",
                    table.keyspace,
                    table.name,
                    replica.host_id,
                    exc,
                )
                failed.append(replica)
        raise ReadFailure(
            f"Operation failed for {table.keyspace}.{table.name} - received 0 responses and "
            f"{len(failed)} failures from 1 CL={NAMES.get(cl, cl)}{note}",
            cl,
            0,
            1,
            len(failed),
            False,
        )
