"""REST endpoints that change the cluster's shape, under ScyllaDB's paths.

* ``POST /storage_service/decommission``: queue a ``leave`` of this node in group0's topology
  queue and answer once the topology coordinator finished it (every tablet replica of the node
  migrated away, its vnode ranges streamed to their new owners; the node then leaves the Raft
  configuration and stops). Refused, with the reason, when the request may not be queued
  (``topology.requests``).
* ``POST /storage_service/remove_node?host_id=<uuid>[&ignore_nodes=<host ids or addresses>]``:
  queue a ``remove`` of a dead node (its tablet replicas rebuilt on the others from every
  surviving replica) and answer once it ended. As in ScyllaDB, a malformed parameter is a 400
  and a refused or failed operation a 500 whose JSON body ``{"message", "code"}`` carries the
  reason (removing a live node: ScyllaDB's exact words, ``topology.requests``). Vnode keyspaces'
  ranges of the removed node are streamed to their new owners from the surviving replicas
  (``topology.vnode_phase``), never from the dead node.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import NoReturn

from aiohttp import web

from tabletdb.node.admin.api_context import ApiContext
from tabletdb.node.group0_shell.service import Group0Service
from tabletdb.topology.requests import RequestRefused, enqueue
from tabletdb.topology.state import Request
from tabletdb.topology.states import RequestKind

log = logging.getLogger(__name__)


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    async def decommission(request: web.Request) -> web.Response:
        return web.json_response(await _decommission(ctx))

    async def remove_node(request: web.Request) -> web.Response:
        return web.json_response(await _remove_node(ctx, request))

    app.add_routes(
        [
            web.post("/storage_service/decommission", decommission),
            web.post("/storage_service/remove_node", remove_node),
        ]
    )


def _group0(ctx: ApiContext) -> Group0Service:
    if ctx.group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    return ctx.group0


async def _decommission(ctx: ApiContext) -> dict[str, str]:
    group0 = _group0(ctx)
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


def _fail(status: type[web.HTTPException], message: str) -> NoReturn:
    """ScyllaDB's error shape: a JSON body with the message and the status code."""
    body = json.dumps({"message": message, "code": status.status_code})
    raise status(text=body, content_type="application/json")


def _host_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        _fail(web.HTTPBadRequest, f"host_id {text!r} is not a valid host id (a UUID)")


def _ignore_nodes(ctx: ApiContext, text: str) -> frozenset[uuid.UUID]:
    """Host ids or addresses of members, comma separated (quotes and blanks ignored)."""
    by_address = {r.address: h for h, r in ctx.state().topology.members.items()}
    out = set()
    for raw in text.split(","):
        item = raw.replace('"', " ").replace("'", " ").strip()
        if not item:
            continue
        if item in by_address:
            out.add(by_address[item])
            continue
        try:
            out.add(uuid.UUID(item))
        except ValueError:
            _fail(
                web.HTTPBadRequest,
                f"Failed to parse ignore_nodes parameter: ignore_nodes={text}, node={item}: "
                "neither a host id nor the address of a member",
            )
    return frozenset(out)


async def _remove_node(ctx: ApiContext, http: web.Request) -> dict[str, str]:
    group0 = _group0(ctx)
    if "host_id" not in http.query:
        _fail(web.HTTPBadRequest, "missing mandatory parameter 'host_id'")
    host_id = _host_id(http.query["host_id"])
    ignore = _ignore_nodes(ctx, http.query.get("ignore_nodes", ""))
    state = ctx.state()
    if host_id not in state.topology_state.nodes:
        _fail(web.HTTPInternalServerError, f"removenode: Host ID {host_id} not found in the cluster")
    request = Request(uuid.uuid1(), RequestKind.REMOVE, host_id, ignore_nodes=ignore)
    alive = group0.alive_nodes()
    try:  # admission's answers first (a live node: ScyllaDB's words), as ScyllaDB checks them first
        enqueue(state.topology_state, request, alive, uuid.uuid1())
    except RequestRefused as exc:
        log.warning("removenode refused host_id=%s: %s", host_id, exc)
        _fail(web.HTTPInternalServerError, str(exc))
    try:
        await group0.queue_request(request, alive)
    except RequestRefused as exc:
        log.warning("removenode refused host_id=%s: %s", host_id, exc)
        _fail(web.HTTPInternalServerError, str(exc))
    log.info("removenode queued request_id=%s host_id=%s", request.request_id, host_id)
    result = await group0.wait_request(request.request_id)
    if result.error:
        _fail(web.HTTPInternalServerError, f"removenode failed: {result.error}")
    return {"request_id": str(request.request_id), "status": "done"}
