"""``/column_family/name`` and ``/column_family/name/keyspace``: the table and keyspace lists of
ScyllaDB's REST API.

ScyllaDB's own test tools (cqlpy's and alternator's ``nodetool.py``) GET
``/column_family/name/keyspace`` to find out whether a node's REST API answers before they use it
(flush, compaction, snapshots), because the API has no ping: a node that 404s there is treated as
having no REST API at all. Both lists are read from group0's catalog, as every other path here.
"""

from __future__ import annotations

from aiohttp import web

from tabletdb.node.admin.api_context import ApiContext
from tabletdb.schema.ddl_common import SYSTEM_KEYSPACES


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    async def keyspaces(request: web.Request) -> web.Response:
        """Every keyspace name, system keyspaces included."""
        user = ctx.state().metadata.catalog.keyspaces.keys()
        return web.json_response(sorted({*user, *SYSTEM_KEYSPACES}))

    async def tables(request: web.Request) -> web.Response:
        """``keyspace:table`` of every table and materialized view."""
        catalog = ctx.state().metadata.catalog
        names = [
            f"{ks.name}:{name}"
            for ks in catalog.keyspaces.values()
            for name in (*ks.tables.keys(), *ks.views.keys())
        ]
        return web.json_response(sorted(names))

    app.add_routes(
        [web.get("/column_family/name/keyspace", keyspaces), web.get("/column_family/name", tables)]
    )
