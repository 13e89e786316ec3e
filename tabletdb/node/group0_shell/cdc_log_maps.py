"""The group0 leader's adoption of CDC log maps made before maps could name a base (issue 16).

On each idle turn of its topology task the leader looks for a log map of a tablets keyspace
that does not name its base (``group0.cdc_log_maps.unnamed_logs``) and takes one step for one
of them: if the log's tablets already equal the base's, a schema command that puts the base
again, unchanged, in which the planner names the base in the log's map; otherwise one tablet
move request that takes a log replica onto the base tablet's replica it lacks. The moves run
through the topology coordinator like any ``tablets/move``. A log whose tablet count differs
from its base's (the base was split or merged while the log was planned apart) cannot be
matched by moves; it is logged once and left planning on its own.
"""

from __future__ import annotations

import logging
import uuid
from typing import Protocol

from tabletdb.group0.cdc_log_maps import unnamed_logs
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.query.metadata_store import Decision
from tabletdb.schema.ddl_common import NOOP, DdlOutcome
from tabletdb.schema.model import Catalog
from tabletdb.schema.mutations import PutTable
from tabletdb.tablets.colocation import adoptable, adoption_move
from tabletdb.topology.requests import RequestRefused
from tabletdb.topology.state import Request, TabletMove
from tabletdb.topology.states import RequestKind

log = logging.getLogger(__name__)


class _Group0(Protocol):
    @property
    def state(self) -> ClusterState: ...

    async def change_schema(self, decide: Decision) -> DdlOutcome: ...

    async def queue_request(self, request: Request, alive: frozenset[uuid.UUID]) -> None: ...


class LogMapAdoption:
    """The leader's adoption steps; remembers the state it last found nothing to do in, so an
    idle turn costs a scan of the catalog only after the catalog or the maps changed."""

    def __init__(self, host_id: uuid.UUID) -> None:
        self._host_id = host_id
        self._settled: tuple[object, object] | None = None
        self._reported: set[uuid.UUID] = set()

    async def step(self, group0: _Group0) -> None:
        metadata = group0.state.metadata
        seen = (metadata.catalog, metadata.tablets)
        if self._settled is not None and all(a is b for a, b in zip(self._settled, seen)):
            return
        for found in unnamed_logs(metadata.catalog, metadata.tablets):
            where = f"{found.log.keyspace}.{found.log.name}"
            if adoptable(found.base_map, found.log_map):
                log.info("CDC log map co-located with its base; naming the base table=%s", where)
                await group0.change_schema(_touch(found.base.keyspace, found.base.name))
                return
            move = adoption_move(found.base_map, found.log_map)
            if move is not None:
                request = Request(
                    uuid.uuid1(),
                    RequestKind.MOVE,
                    move.target.host,
                    move=TabletMove(found.log.id, move.last_token, move.source, move.target),
                )
                try:
                    await group0.queue_request(request, frozenset({self._host_id}))
                except RequestRefused as exc:
                    log.debug("CDC log tablet move not queued now table=%s why=%s", where, exc)
                    return
                log.info(
                    "moving a CDC log tablet onto its base tablet's replica table=%s tablet=%d "
                    "from=%s/%d to=%s/%d",
                    where,
                    move.tablet_id,
                    move.source.host,
                    move.source.shard,
                    move.target.host,
                    move.target.shard,
                )
                return
            counts_differ = found.log_map.tablet_count != found.base_map.tablet_count
            if counts_differ and found.log.id not in self._reported:
                self._reported.add(found.log.id)
                log.warning(
                    "CDC log map cannot be co-located with its base: %d tablets vs the base's %d; "
                    "it keeps planning on its own table=%s",
                    found.log_map.tablet_count,
                    found.base_map.tablet_count,
                    where,
                )
            elif not counts_differ:
                return  # a migration or resize is under way: a later turn looks again
        self._settled = seen


def _touch(keyspace: str, name: str) -> Decision:
    def decide(catalog: Catalog) -> DdlOutcome:
        current = catalog.table(keyspace, name)
        return NOOP if current is None else DdlOutcome((PutTable(current),))

    return decide
