"""``POST /storage_service/tablets/move``: move one tablet replica, under ScyllaDB's path and params.

``?ks=&table=&token=&src_host=&src_shard=&dst_host=&dst_shard=`` names the tablet by a token it
owns and the replica by host id and shard. The move is queued as a ``move`` topology request
(``topology.requests``) and carried out by the topology coordinator through the same migration
stages as a join or decommission (write both, stream the file, switch reads, clean up), so it
survives a coordinator crash and rolls back if a node it needs stays down. The call answers once
the request ended: 200 when the replica moved, 400 with the reason when it may not be queued or
cannot be planned (no such replica, the target already holds one, another datacenter, no such
shard), 500 if it was rolled back. A table co-located with another (a CDC log with its base,
``tablets.colocation``) has no tablets of its own to move: a move naming it moves the base's
tablet, and with it every co-located tablet, in the same migration.

A target on the source node with another shard moves the replica between shards of that node
(its file is renamed at the ``streaming`` stage, ``replica.shard_moves``). Not yet: ``force``
(rack constraints are not checked beyond the datacenter).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from aiohttp import web

from tabletdb.node.admin.api_context import ApiContext
from tabletdb.tablets.tablet_map import TabletReplica
from tabletdb.topology.requests import RequestRefused
from tabletdb.topology.state import Request, TabletMove
from tabletdb.topology.states import RequestKind

log = logging.getLogger(__name__)

PARAMS = ("ks", "table", "token", "src_host", "src_shard", "dst_host", "dst_shard")


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    async def move(request: web.Request) -> web.Response:
        return web.json_response(await _move(ctx, request.query))

    app.add_routes([web.post("/storage_service/tablets/move", move)])


Query = Mapping[str, str]


def _param(query: Query, name: str) -> str:
    value = query.get(name)
    if value is None or value == "":
        raise web.HTTPBadRequest(text=f"tablets/move: missing parameter {name} (needs {', '.join(PARAMS)})")
    return str(value)


def _int(query: Query, name: str) -> int:
    text = _param(query, name)
    try:
        return int(text)
    except ValueError:
        raise web.HTTPBadRequest(text=f"tablets/move: {name} must be an integer, got {text!r}") from None


def _host(query: Query, name: str) -> uuid.UUID:
    text = _param(query, name)
    try:
        return uuid.UUID(text)
    except ValueError:
        raise web.HTTPBadRequest(
            text=f"tablets/move: {name} must be a host id (uuid), got {text!r}"
        ) from None


def parse_move(ctx: ApiContext, query: Query) -> TabletMove:
    """The move the parameters name, checked against this node's catalog and tablet maps."""
    keyspace, table_name = _param(query, "ks"), _param(query, "table")
    metadata = ctx.state().metadata
    table = metadata.catalog.table_or_view(keyspace, table_name)
    if table is None:
        raise web.HTTPBadRequest(text=f"tablets/move: no table {keyspace}.{table_name}")
    if table.id not in metadata.tablets:
        raise web.HTTPBadRequest(text=f"tablets/move: {keyspace}.{table_name} does not use tablets")
    token = _int(query, "token")
    if not -(2**63) <= token < 2**63:
        raise web.HTTPBadRequest(text=f"tablets/move: token {token} is outside the token range")
    source = TabletReplica(_host(query, "src_host"), _int(query, "src_shard"))
    target = TabletReplica(_host(query, "dst_host"), _int(query, "dst_shard"))
    return TabletMove(table.id, token, source, target)


async def _move(ctx: ApiContext, query: Query) -> dict[str, str]:
    group0 = ctx.group0
    if group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    move = parse_move(ctx, query)
    request = Request(uuid.uuid1(), RequestKind.MOVE, move.target.host, move=move)
    try:
        await group0.queue_request(request, frozenset({ctx.host_id}))
    except RequestRefused as exc:
        raise web.HTTPBadRequest(text=str(exc)) from None
    log.info(
        "tablet move queued request_id=%s table_id=%s token=%d from=%s/%d to=%s/%d",
        request.request_id,
        move.table_id,
        move.token,
        move.source.host,
        move.source.shard,
        move.target.host,
        move.target.shard,
    )
    result = await group0.wait_request(request.request_id)
    if result.error:
        status = web.HTTPBadRequest if " refused: " in result.error else web.HTTPInternalServerError
        raise status(text=f"tablets/move failed: {result.error}")
    return {"request_id": str(request.request_id), "status": "done"}
