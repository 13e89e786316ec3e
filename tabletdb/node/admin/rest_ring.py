"""REST routes nodetool reads the ring and the nodes through, under ScyllaDB's paths and shapes.

Maps are lists of ``{"key": ..., "value": ...}`` and tokens are strings, as ScyllaDB answers.
Everything about ownership and placement comes from group0's state (`node.admin.ring_info`,
pure), so any node answers the same; liveness, load and uptime come from the running node
(`node.operator_view`). A request naming what does not exist answers 400 with the reason.

``POST /storage_service/keyspace_cleanup/{keyspace}``: a tablets keyspace never needs one (a
replica that moves away deletes its file as the migration's last stage), so it answers 0 at
once; for a vnode keyspace the node's cleanup is asked of the topology coordinator and the
answer waits until it ran (``node.range_streaming.request_cleanup``: the node drops the ranges
it does not replicate, of every vnode keyspace).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from tabletdb.node.admin import ring_info
from tabletdb.node.admin.api_context import ApiContext
from tabletdb.node.operator_view import NodeOps
from tabletdb.node.range_streaming import CLEANUP_WAIT, request_cleanup
from tabletdb.schema.model import LOCAL
from tabletdb.topology.states import NodeState

READ_BARRIER_TIMEOUT = 30.0
JOINING = frozenset({NodeState.BOOTSTRAPPING, NodeState.REPLACING})
LEAVING = frozenset({NodeState.DECOMMISSIONING, NodeState.REMOVING})

Route = Callable[[ApiContext, web.Request], Awaitable[Any]]

# (method, path) -> what the route needs (`node.admin.rest_auth.ACCESS` lists the GETs as LOGIN).
GET_PATHS = (
    "/storage_service/tokens_endpoint",
    "/storage_service/tokens",
    "/storage_service/tokens/{endpoint}",
    "/storage_service/ownership/",
    "/storage_service/ownership/{keyspace}",
    "/storage_service/describe_ring/{keyspace}",
    "/storage_service/natural_endpoints/{keyspace}",
    "/storage_service/load",
    "/storage_service/load_map",
    "/storage_service/nodes/joining",
    "/storage_service/nodes/leaving",
    "/storage_service/nodes/moving",
    "/storage_service/native_transport",
    "/storage_service/gossiping",
    "/storage_service/generation_number",
    "/gossiper/endpoint/live",
    "/gossiper/endpoint/down",
    "/snitch/datacenter",
    "/snitch/rack",
    "/system/uptime_ms",
    "/storage_service/schema_version",
)


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    gets: dict[str, Route] = {
        "/storage_service/tokens_endpoint": _tokens_endpoint,
        "/storage_service/tokens": _all_tokens,
        "/storage_service/tokens/{endpoint}": _node_tokens,
        "/storage_service/ownership/": _token_ownership,
        "/storage_service/ownership/{keyspace}": _effective_ownership,
        "/storage_service/describe_ring/{keyspace}": _describe_ring,
        "/storage_service/natural_endpoints/{keyspace}": _natural_endpoints,
        "/storage_service/load": _load,
        "/storage_service/load_map": _load_map,
        "/storage_service/nodes/joining": _joining,
        "/storage_service/nodes/leaving": _leaving,
        "/storage_service/nodes/moving": _moving,
        "/storage_service/native_transport": _native_transport,
        "/storage_service/gossiping": _gossiping,
        "/storage_service/generation_number": _generation_number,
        "/gossiper/endpoint/live": _live,
        "/gossiper/endpoint/down": _down,
        "/snitch/datacenter": _datacenter,
        "/snitch/rack": _rack,
        "/system/uptime_ms": _uptime_ms,
        "/storage_service/schema_version": _schema_version,
    }
    assert tuple(gets) == GET_PATHS
    routes = [web.get(path, _json(ctx, route)) for path, route in gets.items()]
    routes.append(web.post("/raft/read_barrier", _json(ctx, _read_barrier)))
    routes.append(web.post("/storage_service/keyspace_cleanup/{keyspace}", _json(ctx, _keyspace_cleanup)))
    app.add_routes(routes)


def _json(ctx: ApiContext, route: Route) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        try:
            return web.json_response(await route(ctx, request))
        except ring_info.RingQueryError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from None

    return handle


def _ops(ctx: ApiContext) -> NodeOps:
    if ctx.ops is None:
        raise web.HTTPServiceUnavailable(text="this node's operator view is not wired (no NodeOps)")
    return ctx.ops


def _pairs(mapping: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in sorted(mapping.items())]


def _query(request: web.Request, name: str) -> str:
    value = request.query.get(name)
    if not value:
        raise web.HTTPBadRequest(text=f"missing query parameter {name!r}")
    return value


async def _tokens_endpoint(ctx: ApiContext, request: web.Request) -> list[dict[str, str]]:
    return [{"key": str(t), "value": a} for t, a in ring_info.token_endpoints(ctx.state())]


async def _all_tokens(ctx: ApiContext, request: web.Request) -> list[str]:
    return [str(t) for t, _ in ring_info.token_endpoints(ctx.state())]


async def _node_tokens(ctx: ApiContext, request: web.Request) -> list[str]:
    record = ring_info.member_by_address(ctx.state().topology, request.match_info["endpoint"])
    return [str(t) for t in sorted(record.tokens)]


async def _token_ownership(ctx: ApiContext, request: web.Request) -> list[dict[str, Any]]:
    return _pairs(ring_info.token_ownership(ctx.state()))


async def _effective_ownership(ctx: ApiContext, request: web.Request) -> list[dict[str, Any]]:
    keyspace = request.match_info["keyspace"]
    return _pairs(ring_info.effective_ownership(ctx.state(), keyspace, request.query.get("cf")))


async def _describe_ring(ctx: ApiContext, request: web.Request) -> list[dict[str, Any]]:
    state = ctx.state()
    members = state.topology.members
    table = request.query.get("table") or request.query.get("cf")
    out = []
    for piece in ring_info.describe_ring(state, request.match_info["keyspace"], table):
        records = [members[h] for h in piece.replicas if h in members]
        out.append(
            {
                "start_token": str(piece.token_range.start),
                "end_token": str(piece.token_range.end),
                "endpoints": [r.address for r in records],
                "rpc_endpoints": [r.rpc_address for r in records],
                "endpoint_details": [
                    {"host": r.address, "datacenter": r.datacenter, "rack": r.rack} for r in records
                ],
            }
        )
    return out


async def _natural_endpoints(ctx: ApiContext, request: web.Request) -> list[str]:
    keyspace = request.match_info["keyspace"]
    return ring_info.natural_endpoints(ctx.state(), keyspace, _query(request, "cf"), _query(request, "key"))


async def _load(ctx: ApiContext, request: web.Request) -> float:
    return float(await _ops(ctx).loads.local())


async def _load_map(ctx: ApiContext, request: web.Request) -> list[dict[str, Any]]:
    """Members whose load is unknown (down, or silent) are left out, as ScyllaDB leaves out
    endpoints it has no load for; nodetool shows them as ``?``."""
    members = ctx.state().topology.members
    loads = await _ops(ctx).loads.load_map()
    known = {members[h].address: float(v) for h, v in loads.items() if v is not None and h in members}
    return _pairs(known)


def _addresses_in(ctx: ApiContext, states: frozenset[NodeState]) -> list[str]:
    state = ctx.state()
    members = state.topology.members
    nodes = state.topology_state.nodes
    return sorted(members[h].address for h, n in nodes.items() if n.state in states and h in members)


async def _joining(ctx: ApiContext, request: web.Request) -> list[str]:
    return _addresses_in(ctx, JOINING)


async def _leaving(ctx: ApiContext, request: web.Request) -> list[str]:
    return _addresses_in(ctx, LEAVING)


async def _moving(ctx: ApiContext, request: web.Request) -> list[str]:
    return []  # tokens never move here: nodes join and leave, tablets migrate


async def _native_transport(ctx: ApiContext, request: web.Request) -> bool:
    return _ops(ctx).cql_serving()


async def _gossiping(ctx: ApiContext, request: web.Request) -> bool:
    return _ops(ctx).group0_running


async def _generation_number(ctx: ApiContext, request: web.Request) -> int:
    return int(_ops(ctx).started_wall)


def _liveness(ctx: ApiContext, up: bool) -> list[str]:
    ops = _ops(ctx)
    members = ctx.state().topology.members.values()
    return sorted(r.address for r in members if ops.alive(r.host_id) == up)


async def _live(ctx: ApiContext, request: web.Request) -> list[str]:
    return _liveness(ctx, True)


async def _down(ctx: ApiContext, request: web.Request) -> list[str]:
    return _liveness(ctx, False)


async def _datacenter(ctx: ApiContext, request: web.Request) -> str:
    return str(_record(ctx, request).datacenter)


async def _rack(ctx: ApiContext, request: web.Request) -> str:
    return str(_record(ctx, request).rack)


def _record(ctx: ApiContext, request: web.Request) -> Any:
    topology = ctx.state().topology
    host = request.query.get("host")
    record = ring_info.member_by_address(topology, host) if host else topology.members.get(ctx.host_id)
    if record is None:
        raise web.HTTPServiceUnavailable(text="this node is not a member of the cluster yet")
    return record


async def _uptime_ms(ctx: ApiContext, request: web.Request) -> int:
    return _ops(ctx).uptime_ms()


async def _schema_version(ctx: ApiContext, request: web.Request) -> str:
    return str(ctx.state().state_id)


async def _read_barrier(ctx: ApiContext, request: web.Request) -> None:
    """Return once this node applied everything group0 committed before the call."""
    if ctx.group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    given = request.query.get("timeout")
    try:
        timeout = float(given) if given else READ_BARRIER_TIMEOUT
    except ValueError:
        raise web.HTTPBadRequest(text=f"timeout must be a number of seconds, got {given!r}") from None
    try:
        async with asyncio.timeout(timeout):
            await ctx.group0.driver.read_barrier()
    except TimeoutError:
        raise web.HTTPServiceUnavailable(text="group0 read barrier timed out: no quorum reachable") from None
    return None


async def _keyspace_cleanup(ctx: ApiContext, request: web.Request) -> int:
    keyspace = request.match_info["keyspace"]
    ks = ctx.state().metadata.catalog.keyspace(keyspace)
    if ks is None:
        raise ring_info.RingQueryError(f"keyspace {keyspace} does not exist")
    definition = ks.definition
    if definition.uses_tablets or definition.replication.strategy_class == LOCAL:
        return 0  # nothing to drop: tablet migrations delete a moved replica's file themselves
    if ctx.group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    try:
        await request_cleanup(ctx.group0, ctx.host_id)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"cleanup of keyspace {keyspace}: {exc}") from None
    except TimeoutError:
        raise web.HTTPGatewayTimeout(
            text=f"cleanup of keyspace {keyspace}: asked, not done within {CLEANUP_WAIT:.0f} s "
            "(a node down or a topology request running); it runs once they are done"
        ) from None
    return 0
