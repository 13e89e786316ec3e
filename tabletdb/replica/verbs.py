"""The replica side of the data RPC verbs: what a node answers when another node coordinates.

Payloads are plain lists (``replica.wire``) that name the table by id. A replica whose schema
has not caught up with the coordinator's yet (a write right after CREATE TABLE: the coordinator
answered DDL once *it* applied it) waits a little for its group0 to deliver the table, then
fails the request, and the coordinator counts that as one replica failing. Handlers run the
same ``LocalReplica`` code the coordinator uses for its own replica, so local and remote
answers (and digests) are computed identically.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from tabletdb.cql.errors import InvalidRequest
from tabletdb.dht.token import TokenRange
from tabletdb.replica.fencing import check_fence
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.range_reads import count_rows, live_values
from tabletdb.replica.wire import (
    VERB_APPLY,
    VERB_COUNT,
    VERB_MUTATIONS,
    VERB_READ,
    VERB_SCAN,
    VERB_TRUNCATE,
    VERB_VALUES,
    digest_of,
    mutations_from_plain,
    mutations_to_plain,
    partition_to_plain,
    position_from_plain,
    position_to_plain,
    slice_from_plain,
)
from tabletdb.schema.model import TableDef

Handler = Callable[[int, Any], Awaitable[Any]]
TableOf = Callable[[uuid.UUID], TableDef | None]

SCHEMA_WAIT = 2.0
"""Seconds a replica waits for an unknown table to arrive through group0."""
SCHEMA_POLL = 0.01


async def wait_for_table(table_of: TableOf, raw_id: bytes, wait: float = SCHEMA_WAIT) -> TableDef:
    """The table with id ``raw_id``, waiting up to ``wait`` seconds for the schema to catch up."""
    table_id = uuid.UUID(bytes=raw_id)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        table = table_of(table_id)
        if table is not None:
            return table
        if loop.time() >= deadline:
            raise InvalidRequest(
                f"unknown table id {table_id} on this replica (schema not caught up in {wait}s)"
            )
        await asyncio.sleep(SCHEMA_POLL)


def read_answer(local: LocalReplica, table: TableDef, request: list[Any]) -> tuple[list[Any], bytes]:
    """(answer, digest) of a partition read ``[key, token, slice, now, reverse]``."""
    key, token, slice_plain, now, reverse = request
    data = local.read_partition(table, key, token, now, slice_from_plain(slice_plain), reverse)
    parts = [] if data is None else [partition_to_plain(data)]
    return parts, digest_of(parts, None)


def scan_answer(local: LocalReplica, table: TableDef, request: list[Any]) -> tuple[list[Any], bytes]:
    """(answer, digest) of a range scan ``[start, end, now, limit, after]``: ``[partitions, next]``."""
    start, end, now, limit, after = request
    page = local.scan(table, TokenRange(start, end), now, limit, position_from_plain(after))
    parts = [partition_to_plain(d) for d in page.partitions]
    nxt = position_to_plain(page.next_position)
    return [parts, nxt], digest_of(parts, nxt)


def export_mutations(local: LocalReplica, table: TableDef, request: list[Any]) -> list[Any]:
    """Full-fidelity data for read repair: ``["p", key, token]`` or ``["r", start, end]``."""
    if request[0] == "p":
        return mutations_to_plain(local.partition_mutations(table, request[1], request[2]))
    return mutations_to_plain(local.range_mutations(table, TokenRange(request[1], request[2])))


class ReplicaVerbs:
    """Handlers for the data verbs, to register on the node's RPC endpoint."""

    def __init__(self, local: LocalReplica, table_of: TableOf, fence: Callable[[], int] = lambda: 0) -> None:
        """``fence``: the topology fence version this node last applied from group0
        (``replica.fencing``); writes routed by an older version are refused."""
        self.local = local
        self.table_of = table_of
        self.fence = fence

    def handlers(self) -> dict[str, Handler]:
        return {
            VERB_APPLY: self._apply,
            VERB_READ: self._read,
            VERB_SCAN: self._scan,
            VERB_MUTATIONS: self._mutations,
            VERB_TRUNCATE: self._truncate,
            VERB_COUNT: self._count,
            VERB_VALUES: self._values,
        }

    async def _table(self, raw_id: bytes) -> TableDef:
        return await wait_for_table(self.table_of, raw_id)

    async def _apply(self, src: int, payload: list[Any]) -> None:
        table_id, mutations, version, log = payload
        check_fence(version, self.fence(), src)
        table = await self._table(table_id)
        await self.local.apply(table, mutations_from_plain(mutations), log=bool(log))

    async def _read(self, src: int, payload: list[Any]) -> Any:
        table_id, digest_only, request = payload
        answer, digest = read_answer(self.local, await self._table(table_id), request)
        return digest if digest_only else answer

    async def _scan(self, src: int, payload: list[Any]) -> Any:
        table_id, digest_only, request = payload
        answer, digest = scan_answer(self.local, await self._table(table_id), request)
        return digest if digest_only else answer

    async def _mutations(self, src: int, payload: list[Any]) -> list[Any]:
        table_id, request = payload
        return export_mutations(self.local, await self._table(table_id), request)

    async def _count(self, src: int, payload: list[Any]) -> int:
        table_id, (start, end, now) = payload
        return await count_rows(self.local.stores, await self._table(table_id), TokenRange(start, end), now)

    async def _values(self, src: int, payload: list[Any]) -> list[Any]:
        table_id, (start, end, now, columns, limit, after) = payload
        table = await self._table(table_id)
        rows, nxt = live_values(
            self.local.stores, table, TokenRange(start, end), now, columns, limit, position_from_plain(after)
        )
        return [rows, position_to_plain(nxt)]

    async def _truncate(self, src: int, payload: list[Any]) -> None:
        self.local.stores.truncate(await self._table(payload[0]))
