"""Re-copying a replica whose file was found damaged, from the other replicas (row-level).

When a data file is set aside (``replica.storage_service``), a fresh file takes its place: it
takes new writes at once but refuses reads until this has copied back everything the other
replicas hold for its range. The copy is row-level, over the read-repair verb
(``data.mutations``: full-fidelity mutations, tombstones included) from *every* other replica of
each range, applied through the ordinary durable write path. Every upsert is last-write-wins, so
the order against writes arriving meanwhile does not matter, and taking the union of all the
others covers each acknowledged write whichever quorum took it. Only then is the replica
declared repaired. That is simpler than shipping a whole-file image (a file holds one replica's
view; installing it would replace the writes taken since) and reuses code every read repair runs.

A range with another replica down or failing is retried later (``RETRY_SECONDS``); a range with
no other replica (replication factor 1) cannot be repaired here, which is logged once: the
operator restores from a backup or accepts the loss (the marker's message says how). The range
is fetched in ``REPAIR_PIECES`` slices of equal token width so no one message carries a whole
large tablet.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Callable
from pathlib import Path

from tabletdb.coordinator.context import Replicas
from tabletdb.coordinator.placement import Replica
from tabletdb.dht.token import TokenRange
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.wire import VERB_MUTATIONS, mutations_from_plain
from tabletdb.schema.model import TableDef

log = logging.getLogger(__name__)

POLL_SECONDS = 2.0
"""How often the set-aside files are looked for (a damaged file is found by a read or a write)."""
RETRY_SECONDS = 10.0
"""Wait before trying a file again after a repair could not complete."""
REPAIR_PIECES = 64
"""Slices of a range fetched one at a time (equal token width: about equal data); a 5 GB tablet
(ScyllaDB's target size) comes in messages of about 80 MB per replica."""
APPLY_BATCH = 1024
"""Partitions per local write (one commit-log record each), so no record holds a whole slice."""

TableOf = Callable[[uuid.UUID], TableDef | None]


class NotRepairable(Exception):
    """This file cannot be repaired now (no other replica, or one of them failed)."""


def table_id_of(path: Path) -> uuid.UUID | None:
    """The table id in a data file's path (``<ks>/<table>-<id hex>/shard-<n>/<file>``)."""
    try:
        return uuid.UUID(hex=path.parent.parent.name.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def slices(token_range: TokenRange, count: int) -> list[TokenRange]:
    """``token_range`` (non-wrapping) cut into up to ``count`` adjacent pieces of equal width."""
    width = token_range.end - token_range.start
    step = max(1, -(-width // count))
    bounds = [*range(token_range.start, token_range.end, step), token_range.end]
    return [TokenRange(a, b) for a, b in itertools.pairwise(bounds) if a < b]


class ReplicaRepair:
    """Repairs the node's set-aside files, one at a time, in the background (``run``)."""

    def __init__(self, replicas: Replicas, stores: StorageService, table_of: TableOf) -> None:
        self.replicas = replicas
        self.stores = stores
        self.table_of = table_of
        self._next_try: dict[Path, float] = {}
        self._told: set[Path] = set()
        """Files whose failure to repair was logged (once each, until one repair succeeds)."""

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.repair_all()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):
                    await stop.wait()

    async def repair_all(self) -> int:
        """Try every set-aside file not waiting for a retry; how many were repaired."""
        loop = asyncio.get_running_loop()
        done = 0
        for path in self.stores.unrepaired():
            if self._next_try.get(path, 0.0) > loop.time():
                continue
            try:
                await self.repair(path)
            except NotRepairable as exc:
                self._next_try[path] = loop.time() + RETRY_SECONDS
                if path not in self._told:
                    self._told.add(path)
                    log.error("cannot repair set-aside tablet file yet file=%s reason=%s", path, exc)
                continue
            except Exception as exc:  # an RPC failing or timing out: try again later
                self._next_try[path] = loop.time() + RETRY_SECONDS
                level = logging.DEBUG if path in self._told else logging.WARNING
                self._told.add(path)
                log.log(
                    level, "repair of set-aside tablet file failed, will retry file=%s error=%r", path, exc
                )
                continue
            self._next_try.pop(path, None)
            self._told.discard(path)
            done += 1
        return done

    async def repair(self, path: Path) -> None:
        """Copy everything the other replicas hold for ``path``'s ranges into it, then declare it
        repaired; ``NotRepairable`` (or the RPC's error) if that cannot be done now."""
        table_id = table_id_of(path)
        table = None if table_id is None else self.table_of(table_id)
        if table is None:
            raise NotRepairable("its table is not (or no longer) in this node's schema")
        mine = [f for f in self.stores.local_files(table) if f.path == path]
        if not mine:
            raise NotRepairable("this node no longer holds a replica of it")
        ctx = self.replicas
        for replicated in ctx.placement.ranges(table):
            if not any(ctx.is_local(r) for r in replicated.replicas):
                continue  # a vnode table's range held elsewhere: not this file's to copy
            for piece in replicated.token_range.intersect(mine[0].token_range):
                others = [r for r in replicated.replicas if not ctx.is_local(r)]
                if not others:
                    raise NotRepairable(
                        f"no other replica holds range {piece} (replication factor 1): restore the "
                        f"table from a backup, or accept the loss as the set-aside message says"
                    )
                for part in slices(piece, REPAIR_PIECES):
                    await self._copy(table, path, part, others)
        self.stores.repaired(path)

    async def _copy(self, table: TableDef, path: Path, part: TokenRange, others: list[Replica]) -> None:
        ctx = self.replicas
        request = [table.id.bytes, ["r", part.start, part.end]]
        exported = await asyncio.gather(
            *(ctx.call(r, VERB_MUTATIONS, request, ctx.timeouts.range) for r in others)
        )
        mutations = [
            m
            for plain in exported
            for m in mutations_from_plain(plain)
            if self.stores.path_of(table, m.token) == path
        ]
        for start in range(0, len(mutations), APPLY_BATCH):
            await ctx.local.apply_direct(table, mutations[start : start + APPLY_BATCH])
