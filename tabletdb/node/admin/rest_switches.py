"""REST switches ScyllaDB's tools flip, under ScyllaDB's paths.

* ``/storage_service/native_transport``: GET whether the CQL listeners accept connections,
  POST starts them (``nodetool enablebinary``), DELETE stops them and closes the client
  connections after their requests in flight finish (``nodetool disablebinary``).
* ``/storage_service/auto_compaction/{keyspace}[?cf=t1,t2]``: POST lets the background loop
  compact the keyspace's (or the named tables') files again, DELETE stops it
  (``nodetool enable/disableautocompaction``); ``/column_family/autocompaction/{ks}:{table}``
  does the same for one table and answers GET with whether it is on. Manual compactions run
  either way; the switch is this node's and is forgotten on restart, as in ScyllaDB.

Each answers ScyllaDB's ``void`` (``null``) or the boolean asked for; unknown keyspaces and
tables answer 400.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web

from tabletdb.node.admin.api_context import ApiContext
from tabletdb.node.admin.rest_compaction import NO_DATA_KEYSPACES
from tabletdb.node.compaction_manager import CompactionManager, UnknownTable
from tabletdb.schema.model import TableDef

log = logging.getLogger(__name__)


class NativeTransport(Protocol):
    """The CQL server as these routes drive it (`protocol.server.CqlServer`)."""

    @property
    def serving(self) -> bool: ...

    async def start(self) -> None: ...

    async def stop(self, grace: float = ...) -> None: ...


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    app.add_routes(
        [
            web.get("/storage_service/native_transport", lambda r: _native(ctx, r)),
            web.post("/storage_service/native_transport", lambda r: _native(ctx, r)),
            web.delete("/storage_service/native_transport", lambda r: _native(ctx, r)),
            web.post("/storage_service/auto_compaction/{keyspace}", _compaction(ctx, _keyspace_tables, True)),
            web.delete(
                "/storage_service/auto_compaction/{keyspace}", _compaction(ctx, _keyspace_tables, False)
            ),
            web.get("/column_family/autocompaction/{name}", _compaction(ctx, _one_table, None)),
            web.post("/column_family/autocompaction/{name}", _compaction(ctx, _one_table, True)),
            web.delete("/column_family/autocompaction/{name}", _compaction(ctx, _one_table, False)),
        ]
    )


async def _native(ctx: ApiContext, request: web.Request) -> web.Response:
    cql: NativeTransport | None = ctx.cql
    if cql is None:
        raise web.HTTPServiceUnavailable(text="this node runs no CQL server")
    if request.method == "POST" and not cql.serving:
        await cql.start()
        log.info("native transport started over REST")
    elif request.method == "DELETE" and cql.serving:
        await cql.stop()
        log.info("native transport stopped over REST")
    elif request.method == "GET":
        return web.json_response(cql.serving)
    return web.json_response(None)


Tables = Callable[[CompactionManager, web.Request], list[TableDef]]


def _keyspace_tables(manager: CompactionManager, request: web.Request) -> list[TableDef]:
    names = [n for n in request.query.get("cf", "").split(",") if n]
    keyspace = request.match_info["keyspace"]
    if keyspace in NO_DATA_KEYSPACES and manager.catalog().keyspace(keyspace) is None:
        return []  # listed by /storage_service/keyspaces, but holds no files here
    return manager.tables(keyspace, names)


def _one_table(manager: CompactionManager, request: web.Request) -> list[TableDef]:
    keyspace, sep, table = request.match_info["name"].partition(":")
    if not sep or not keyspace or not table:
        raise web.HTTPBadRequest(
            text=f"column family name must be keyspace:table, got {request.match_info['name']!r}"
        )
    return manager.tables(keyspace, [table])


def _compaction(
    ctx: ApiContext, tables: Tables, enable: bool | None
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A route: set the switch on ``tables`` (``enable`` None: say whether the first one's is on)."""

    async def handle(request: web.Request) -> web.Response:
        manager = ctx.compaction
        if manager is None:
            raise web.HTTPServiceUnavailable(text="this node has no storage service")
        try:
            chosen = tables(manager, request)
        except UnknownTable as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None
        if enable is None:
            return web.json_response(manager.auto_compaction(chosen[0]))
        manager.set_auto_compaction(chosen, enable)
        return web.json_response(None)

    return handle
