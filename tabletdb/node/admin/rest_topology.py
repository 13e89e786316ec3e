"""REST endpoints that change the cluster's shape, under ScyllaDB's paths.

* ``POST /storage_service/decommission``: queue a ``leave`` of this node in group0's topology
  queue and answer once the topology coordinator finished it (every tablet replica of the node
  migrated away, its vnode ranges streamed to their new owners; the node then leaves the Raft
  configuration and stops). Refused, with the reason, when the request may not be queued
  (``topology.requests``).
"""

from __future__ import annotations

import logging
import uuid

from aiohttp import web

from tabletdb.node.admin.api_context import ApiContext
from tabletdb.topology.requests import RequestRefused
from tabletdb.topology.state import Request
from tabletdb.topology.states import RequestKind

log = logging.getLogger(__name__)


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    async def decommission(request: web.Request) -> web.Response:
        return web.json_response(await _decommission(ctx))

    app.add_routes([web.post("/storage_service/decommission", decommission)])


async def _decommission(ctx: ApiContext) -> dict[str, str]:
    group0 = ctx.group0
    if group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    request = Request(uuid.uuid1(), RequestKind.LEAVE, ctx.host_id)
    try:
        await group0.queue_request(request, frozenset({ctx.host_id}))
    except RequestRefused as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    log.info("decommission queued request_id=%s host_id=%s", request.request_id, ctx.host_id)
    result = await group0.wait_request(request.request_id)
    if result.error:
        raise web.HTTPInternalServerError(text=f"decommission failed: {result.error}")
    return {"request_id": str(request.request_id), "status": "done"}
