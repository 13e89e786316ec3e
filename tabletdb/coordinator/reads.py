"""Coordinating a read: data from one replica, digests from the others, read repair on mismatch.

The coordinator contacts the fewest live replicas that meet the consistency level (this node
first when it is a replica, then its datacenter). The most preferred one returns the data, the
others a digest of the same answer computed at the coordinator's ``now`` (write timestamps and
TTLs included). If a digest differs, every contacted replica exports the full-fidelity
mutations (tombstones included) of the partition or token span involved; their union is written
back to every contacted replica and awaited (read repair), and the read is repeated. Since
applying mutations is idempotent last-write-wins, after the repair the contacted replicas agree
on everything the answer covers, which is what makes QUORUM reads see QUORUM writes and ALL
reads see every acknowledged write even though a replica missed some (there are no hints).

A replica that fails (not one that is slow) is replaced by another live one if the level
allows; a replica that does not answer within the timeout makes the read a ReadTimeout. A replica
whose file was found damaged refuses reads until repaired (``replica.storage_service``): when
this node's own refuses a direct local read, the read goes through the replicas like any other
and counts it as failed, so others answer, or ReadFailure says why when too few are left
(replication factor 1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tabletdb.coordinator.consistency import (
    ANY,
    LOCAL_ONE,
    NAMES,
    ONE,
    ResponseTracker,
    check_available,
    read_targets,
)
from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import Replica, ReplicaSet, ReplicatedRange, replica_names
from tabletdb.cql.errors import InvalidRequest, ReadFailure, ReadTimeout
from tabletdb.cql.tracing import current as tracing_on
from tabletdb.cql.tracing import trace
from tabletdb.dht.token import TokenRange
from tabletdb.replica.verbs import export_mutations, read_answer, scan_answer
from tabletdb.replica.wire import (
    VERB_APPLY,
    VERB_MUTATIONS,
    VERB_READ,
    VERB_SCAN,
    apply_payload,
    digest_of,
    mutations_from_plain,
    partition_from_plain,
    position_from_plain,
    position_to_plain,
    slice_to_plain,
)
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import ClusteringSlice
from tabletdb.storage.reconcile import PartitionData
from tabletdb.storage.tablet_store import ScanPage, ScanPosition, TabletCorrupt, TabletUnavailable

REPAIR_ROUNDS = 3
"""Reads repeated after a repair before the data answer is returned as is (concurrent writes)."""


@dataclass(frozen=True)
class ReadSpec:
    """One read, however it is carried out: the verb and request, and how to digest and repair it."""

    table: TableDef
    verb: str
    request: list[Any]
    local: Callable[[], tuple[Any, bytes]]
    digest: Callable[[Any], bytes]
    repair: Callable[[Any], list[Any]]
    """The ``export_mutations`` request covering what a data answer covers."""
    timeout: float


class _Failed(Exception):
    def __init__(self, failed: list[Replica], answered: int, data_present: bool, note: str = "") -> None:
        super().__init__(f"{len(failed)} replicas failed")
        self.failed = failed
        self.answered = answered
        self.data_present = data_present
        self.note = note
        """Why this node's own replica failed, when it is a reason the client can act on."""


LOCAL_DAMAGED = (
    "; this node's replica refused the read: its data file was found damaged and awaits repair "
    "from the other replicas (the node's log names the file and what to do)"
)


class ReadCoordinator:
    def __init__(self, replicas: Replicas) -> None:
        self.replicas = replicas

    async def read_partition(
        self,
        table: TableDef,
        key: bytes,
        token: int,
        now: int,
        clustering: ClusteringSlice,
        reverse: bool,
        cl: int,
    ) -> PartitionData | None:
        if self.reads_locally(table, token, cl):
            trace("read_data: querying locally %s.%s (token %d)", table.keyspace, table.name, token)
            try:
                return self.replicas.local.read_partition(table, key, token, now, clustering, reverse)
            except (TabletCorrupt, TabletUnavailable):
                pass  # damaged or being repaired: the read below skips this replica as any failing one

        replicas = self.replicas.placement.replicas(table, token)
        local = self.replicas.local
        request = [key, token, slice_to_plain(clustering), now, reverse]
        spec = ReadSpec(
            table,
            VERB_READ,
            request,
            lambda: read_answer(local, table, request),
            lambda answer: digest_of(answer, None),
            lambda answer: ["p", key, token],
            self.replicas.timeouts.read,
        )
        answer = await self._digest_read(spec, replicas, cl)
        return partition_from_plain(answer[0]) if answer else None

    async def scan(
        self,
        table: TableDef,
        where: ReplicatedRange,
        piece: TokenRange,
        now: int,
        limit: int,
        after: ScanPosition | None,
        cl: int,
    ) -> ScanPage:
        """Up to ``limit`` rows of ``piece`` (inside ``where``) after ``after``, at ``cl``."""
        if self.replicas.placement.only_local(where.replicas) or self._local_suffices(where.replicas, cl):
            trace("read_data: scanning locally %s.%s %s", table.keyspace, table.name, piece)
            try:
                return self.replicas.local.scan(table, piece, now, limit, after)
            except (TabletCorrupt, TabletUnavailable):
                pass  # damaged or being repaired: the read below skips this replica as any failing one

        local = self.replicas.local
        request = [piece.start, piece.end, now, limit, position_to_plain(after)]
        start = piece.start if after is None else max(piece.start, after.token - 1)

        def repair(answer: Any) -> list[Any]:
            nxt = answer[1]
            return ["r", start, piece.end if nxt is None else nxt[0]]

        spec = ReadSpec(
            table,
            VERB_SCAN,
            request,
            lambda: scan_answer(local, table, request),
            lambda answer: digest_of(answer[0], answer[1]),
            repair,
            self.replicas.timeouts.range,
        )
        parts, nxt = await self._digest_read(spec, where.replicas, cl)
        return ScanPage(tuple(partition_from_plain(p) for p in parts), position_from_plain(nxt))

    def reads_locally(self, table: TableDef, token: int, cl: int) -> bool:
        """Whether a read of ``token`` at ``cl`` is answered by this node's stores alone (it is the
        only replica, or a replica whose answer meets ``cl``): ``read_partition``'s decision, also
        asked by the direct point read (``query.point_select``) before it reads the store itself."""
        replicas = self.replicas.placement.replicas(table, token)
        return self.replicas.placement.only_local(replicas) or self._local_suffices(replicas, cl)

    def _local_suffices(self, replicas: ReplicaSet, cl: int) -> bool:
        """This node is a replica and its answer alone meets ``cl`` (ONE, LOCAL_ONE here): no
        digest, no RPC, the same cost as an unreplicated read."""
        if cl not in (ONE, LOCAL_ONE):
            return False
        ctx = self.replicas
        return any(ctx.is_local(r) and (cl != LOCAL_ONE or r.dc == ctx.local_dc) for r in replicas)

    async def _digest_read(self, spec: ReadSpec, replicas: ReplicaSet, cl: int) -> Any:
        excluded: set[Replica] = set()
        note = ""
        answer: Any = None
        targets = self._targets(replicas, cl, excluded)
        if tracing_on():
            trace(
                "Sending a read of %s.%s to replicas %s",
                spec.table.keyspace,
                spec.table.name,
                replica_names(targets),
            )
        for _ in range(REPAIR_ROUNDS + 1):
            try:
                answer, digests = await self._ask(spec, targets, cl, replicas)
            except _Failed as failure:
                excluded.update(failure.failed)
                note = note or failure.note
                retry = self._retry_targets(replicas, cl, excluded)
                if retry is None:
                    failure.note = failure.note or note
                    raise self._failure(spec, replicas, cl, failure) from None
                targets = retry
                continue
            if len(set(digests)) <= 1:
                return answer
            await self._repair(spec, targets, spec.repair(answer), cl, replicas)
        return answer

    def _targets(self, replicas: ReplicaSet, cl: int, excluded: set[Replica]) -> list[Replica]:
        ctx = self.replicas
        alive = check_available(
            cl, replicas, ctx.local_dc, lambda r: r not in excluded and ctx.is_up(r), write=False
        )
        return read_targets(cl, replicas, ctx.local_dc, alive, ctx.prefer)

    def _retry_targets(self, replicas: ReplicaSet, cl: int, excluded: set[Replica]) -> list[Replica] | None:
        """Targets after failures: every replica not failed yet, those the failure detector calls
        up first (it lags a restart by a ping); None if they cannot meet ``cl``."""
        ctx = self.replicas
        left = [r for r in replicas if r not in excluded]
        tracker = ResponseTracker(cl, replicas, ctx.local_dc, write=False)
        for r in left:
            tracker.ack(r)
        if not tracker.satisfied:
            return None
        return read_targets(
            cl, replicas, ctx.local_dc, left, lambda r: (0 if ctx.is_up(r) else 3) + ctx.prefer(r)
        )

    def _failure(self, spec: ReadSpec, replicas: ReplicaSet, cl: int, failure: _Failed) -> ReadFailure:
        block_for = ResponseTracker(cl, replicas, self.replicas.local_dc, write=False).block_for
        return ReadFailure(
            f"Operation failed for {spec.table.keyspace}.{spec.table.name} - received {failure.answered} "
            f"responses and {len(failure.failed)} failures from {block_for} CL={NAMES.get(cl, cl)}"
            f"{failure.note}",
            cl,
            failure.answered,
            block_for,
            len(failure.failed),
            failure.data_present,
        )

    async def _ask(
        self, spec: ReadSpec, targets: list[Replica], cl: int, replicas: ReplicaSet
    ) -> tuple[Any, list[bytes]]:
        """The data answer from ``targets[0]`` and every target's digest."""
        ctx = self.replicas
        answers: dict[Replica, Any] = {}
        failed: list[Replica] = []
        note = ""

        async def one(replica: Replica, digest_only: bool) -> None:
            nonlocal note
            try:
                if ctx.is_local(replica):
                    try:
                        answer, digest = spec.local()
                    except (TabletCorrupt, TabletUnavailable):
                        note = LOCAL_DAMAGED
                        raise
                    answers[replica] = digest if digest_only else answer
                    return
                payload = [spec.table.id.bytes, digest_only, spec.request]
                answers[replica] = await ctx.call(replica, spec.verb, payload, spec.timeout)
            except Exception:
                failed.append(replica)

        try:
            async with asyncio.timeout(spec.timeout):
                await asyncio.gather(*(one(r, i > 0) for i, r in enumerate(targets)))
        except TimeoutError:
            block_for = ResponseTracker(cl, replicas, ctx.local_dc, write=False).block_for
            raise ReadTimeout(
                f"Operation timed out for {spec.table.keyspace}.{spec.table.name} - received only "
                f"{len(answers)} responses from {block_for} CL={NAMES.get(cl, cl)}.",
                cl,
                len(answers),
                block_for,
                targets[0] in answers,
            ) from None
        if failed:
            raise _Failed(failed, len(answers), targets[0] in answers, note)
        data = answers[targets[0]]
        return data, [spec.digest(data), *(answers[r] for r in targets[1:])]

    async def _repair(
        self, spec: ReadSpec, targets: list[Replica], request: list[Any], cl: int, replicas: ReplicaSet
    ) -> None:
        """Write the union of every target's data for ``request``'s span back to every target."""
        ctx = self.replicas
        table = spec.table

        async def fetch(replica: Replica) -> list[Any]:
            if ctx.is_local(replica):
                return export_mutations(ctx.local, table, request)
            result: list[Any] = await ctx.call(
                replica, VERB_MUTATIONS, [table.id.bytes, request], spec.timeout
            )
            return result

        async def push(replica: Replica, plain: list[Any]) -> None:
            if ctx.is_local(replica):  # repaired data was logged when written: no CDC rows again
                await ctx.local.apply(table, mutations_from_plain(plain), log=False)
            else:
                version = ctx.placement.topology_version()
                payload = apply_payload(table.id.bytes, plain, version, log=False)  # already logged
                await ctx.call(replica, VERB_APPLY, payload, spec.timeout)

        try:
            async with asyncio.timeout(spec.timeout):
                exported = await asyncio.gather(*(fetch(r) for r in targets))
                union = [m for plain in exported for m in plain]
                await asyncio.gather(*(push(r, union) for r in targets))
        except TimeoutError:
            block_for = ResponseTracker(cl, replicas, ctx.local_dc, write=False).block_for
            raise ReadTimeout(
                f"Read repair of {table.keyspace}.{table.name} timed out CL={NAMES.get(cl, cl)}",
                cl,
                len(targets),
                block_for,
                True,
            ) from None
        except ReadTimeout:
            raise
        except Exception as exc:
            raise self._failure(spec, replicas, cl, _Failed(targets, 0, True)) from exc


class ConsistentReads:
    """A ``coordinator.rows.PartitionSource`` reading through the coordinator at one consistency level."""

    def __init__(self, reads: ReadCoordinator, cl: int) -> None:
        if cl == ANY:
            raise InvalidRequest("ANY ConsistencyLevel is only supported for writes")
        self._reads = reads
        self._cl = cl

    async def read_partition(
        self, table: TableDef, key: bytes, token: int, now: int, clustering: ClusteringSlice, reverse: bool
    ) -> PartitionData | None:
        return await self._reads.read_partition(table, key, token, now, clustering, reverse, self._cl)

    def ranges(self, table: TableDef) -> Sequence[ReplicatedRange]:
        return self._reads.replicas.placement.ranges(table)

    async def scan(
        self,
        table: TableDef,
        where: ReplicatedRange,
        piece: TokenRange,
        now: int,
        limit: int,
        after: ScanPosition | None,
    ) -> ScanPage:
        return await self._reads.scan(table, where, piece, now, limit, after, self._cl)
