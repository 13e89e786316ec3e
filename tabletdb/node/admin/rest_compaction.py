"""REST routes for compaction and flush of this node's data files, under ScyllaDB's paths.

* ``POST /storage_service/keyspace_compaction/{keyspace}?cf=t1,t2`` compacts the node's files
  of the keyspace's tables (or of the named ones, their views' and indexes' with them);
  ``POST /storage_service/compact`` of every keyspace. ScyllaDB's ``flush_memtables`` (default
  true) is accepted as true only: a file's deferred rows are always written before it is
  compacted (a compaction that drops tombstones needs them in the file), so ``false`` is refused
  rather than ignored. ``consider_only_existing_data`` is accepted either way: a tablet replica
  is one file, so garbage collection always weighs all of its data and nothing else.
* ``POST /storage_service/keyspace_flush/{keyspace}?cf=...`` and ``POST /storage_service/flush``
  write the stores' deferred rows into their files, sync them and fold their write-ahead logs in.

Each answers (ScyllaDB's ``void``: ``null``) once done. A compaction that found some file
written without a pause for seconds answers 503 naming those files (the others are compacted;
ask again). ``system`` and ``system_schema`` hold no data files here: nothing to do. Unknown
keyspaces and tables answer 400.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tabletdb.node.admin.api_context import ApiContext
from tabletdb.node.compaction_manager import CompactionManager, UnknownTable
from tabletdb.replica.compactions import Outcome
from tabletdb.schema.model import TableDef

log = logging.getLogger(__name__)

NO_DATA_KEYSPACES = frozenset({"system", "system_schema"})
"""Keyspaces `/storage_service/keyspaces` lists that keep no data files on this node."""

Route = Callable[[CompactionManager, web.Request], Awaitable[None]]


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    def bind(route: Route) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            if ctx.compaction is None:
                raise web.HTTPServiceUnavailable(text="this node has no storage service")
            try:
                await route(ctx.compaction, request)
            except UnknownTable as exc:
                raise web.HTTPBadRequest(text=str(exc)) from None
            return web.json_response(None)

        return handle

    app.add_routes(
        [
            web.post("/storage_service/keyspace_compaction/{keyspace}", bind(_compact_keyspace)),
            web.post("/storage_service/compact", bind(_compact_all)),
            web.post("/storage_service/keyspace_flush/{keyspace}", bind(_flush_keyspace)),
            web.post("/storage_service/flush", bind(_flush_all)),
        ]
    )


def _flag(request: web.Request, name: str, default: bool) -> bool:
    given = request.query.get(name)
    if given is None:
        return default
    if given.lower() not in ("true", "false"):
        raise web.HTTPBadRequest(text=f"{name} must be true or false, got {given!r}")
    return given.lower() == "true"


def _named_tables(manager: CompactionManager, request: web.Request) -> list[TableDef]:
    keyspace = request.match_info["keyspace"]
    names = [n for n in request.query.get("cf", "").split(",") if n]
    if keyspace in NO_DATA_KEYSPACES and manager.catalog().keyspace(keyspace) is None:
        return []
    return manager.tables(keyspace, names)


def _compaction_flags(request: web.Request) -> None:
    if not _flag(request, "flush_memtables", True):
        raise web.HTTPBadRequest(
            text="flush_memtables=false is not supported: a tablet file's deferred writes are always "
            "written into it before it is compacted"
        )
    _flag(request, "consider_only_existing_data", False)  # either way: see the module docstring


async def _compact(manager: CompactionManager, tables: list[TableDef], what: str) -> None:
    results = await manager.compact(tables)
    busy = [str(r.path) for r in results if r.outcome is Outcome.BUSY]
    counts: dict[str, Any] = {o.value: sum(r.outcome is o for r in results) for o in Outcome}
    log.info("compaction asked for: %s files=%s", what, counts)
    if busy:
        raise web.HTTPServiceUnavailable(
            text=f"compaction of {what}: {len(busy)} file(s) had writes in flight without a pause, "
            f"not compacted (the others were); retry: {', '.join(busy[:5])}"
        )


async def _compact_keyspace(manager: CompactionManager, request: web.Request) -> None:
    _compaction_flags(request)
    await _compact(manager, _named_tables(manager, request), f"keyspace {request.match_info['keyspace']}")


async def _compact_all(manager: CompactionManager, request: web.Request) -> None:
    _compaction_flags(request)
    await _compact(manager, manager.tables(None), "every keyspace")


async def _flush_keyspace(manager: CompactionManager, request: web.Request) -> None:
    flushed = await manager.flush(_named_tables(manager, request))
    log.info("flush asked for: keyspace %s stores=%d", request.match_info["keyspace"], flushed)


async def _flush_all(manager: CompactionManager, request: web.Request) -> None:
    flushed = await manager.flush(manager.tables(None))
    log.info("flush asked for: every keyspace stores=%d", flushed)
