"""The node's REST admin API (aiohttp), on api_address:api_port like Scylla's (default 10000).

Paths that test tools and operators already probe on Scylla keep Scylla's shapes
(`/storage_service/keyspaces`, `/storage_service/hostid/local`, `/storage_service/host_id`,
`/raft/leader_host`, `/raft/trigger_snapshot`). `/raft/state` and `/cluster/status` are
tabletdb's own: the group0 view `tabletdb status` prints. `/metrics` is the Prometheus scrape
(Scylla serves it on its own port 9180; here it shares the API port). Who may call what:
`node.admin.rest_auth`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from tabletdb.node.admin import (
    rest_auth,
    rest_column_family,
    rest_compaction,
    rest_faults,
    rest_ring,
    rest_snapshots,
    rest_switches,
    rest_tablets,
    rest_topology,
)
from tabletdb.node.admin.api_context import ApiContext
from tabletdb.node.admin.metrics import NodeMetrics
from tabletdb.node.group0_shell.service import Group0Service

log = logging.getLogger(__name__)

SYSTEM_KEYSPACES = ("system", "system_schema")


def build_app(ctx: ApiContext) -> web.Application:
    middlewares: list[Middleware] = []
    if ctx.auth is not None and ctx.auth.config.uses_passwords:
        middlewares.append(rest_auth.middleware(ctx.auth))
    app = web.Application(middlewares=middlewares)
    routes = [
        web.get("/storage_service/hostid/local", _handler(ctx, _local_host_id)),
        web.get("/storage_service/host_id", _handler(ctx, _host_ids)),
        web.get("/storage_service/keyspaces", _handler(ctx, _keyspaces)),
        web.get("/raft/leader_host", _handler(ctx, _leader_host)),
        web.get("/raft/state", _handler(ctx, _raft_state)),
        web.post("/raft/trigger_snapshot", _handler(ctx, _trigger_snapshot)),
        web.post("/raft/trigger_snapshot/{group_id}", _handler(ctx, _trigger_snapshot)),
        web.get("/cluster/status", _handler(ctx, _cluster_status)),
    ]
    if ctx.metrics is not None:
        routes.append(web.get("/metrics", _metrics_handler(ctx.metrics)))
    app.add_routes(routes)
    rest_snapshots.add_routes(app, ctx)
    rest_faults.add_routes(app, ctx)
    rest_topology.add_routes(app, ctx)
    rest_ring.add_routes(app, ctx)
    rest_tablets.add_routes(app, ctx)
    rest_column_family.add_routes(app, ctx)
    rest_compaction.add_routes(app, ctx)
    rest_switches.add_routes(app, ctx)
    return app


Route = Callable[[ApiContext, web.Request], Any]


def _handler(ctx: ApiContext, route: Route) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(route(ctx, request))

    return handle


def _metrics_handler(metrics: NodeMetrics) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(body=metrics.render(), headers={"Content-Type": metrics.content_type})

    return handle


def _local_host_id(ctx: ApiContext, request: web.Request) -> str:
    return str(ctx.host_id)


def _host_ids(ctx: ApiContext, request: web.Request) -> list[dict[str, str]]:
    members = ctx.state().topology.members.values()
    return [{"key": r.address, "value": str(r.host_id)} for r in sorted(members, key=lambda r: r.address)]


def _keyspaces(ctx: ApiContext, request: web.Request) -> list[str]:
    """ScyllaDB's ``type`` (all, user, non_local_strategy) and ``replication`` (tablets, vnodes)."""
    keyspaces = ctx.state().metadata.catalog.keyspaces
    user = sorted(keyspaces.keys())
    replication = request.query.get("replication")
    if replication in ("tablets", "vnodes"):
        tablets = replication == "tablets"
        user = [name for name in user if keyspaces[name].definition.uses_tablets == tablets]
    elif replication is not None:
        raise web.HTTPBadRequest(text=f"replication must be tablets or vnodes, got {replication!r}")
    kind = request.query.get("type", "all")
    if kind == "user":
        return user
    if kind == "non_local_strategy":
        return user
    return sorted([*user, *SYSTEM_KEYSPACES])


def _require_group0(ctx: ApiContext) -> Group0Service:
    if ctx.group0 is None:
        raise web.HTTPServiceUnavailable(text="node is in maintenance mode: group0 is not running")
    return ctx.group0


def _leader_host(ctx: ApiContext, request: web.Request) -> str | None:
    leader_host_id: str | None = _require_group0(ctx).status()["leader_host_id"]
    return leader_host_id


def _raft_state(ctx: ApiContext, request: web.Request) -> dict[str, Any]:
    return _require_group0(ctx).status()


def _trigger_snapshot(ctx: ApiContext, request: web.Request) -> dict[str, int]:
    return {"snapshot_index": _require_group0(ctx).driver.trigger_snapshot()}


def _cluster_status(ctx: ApiContext, request: web.Request) -> dict[str, Any]:
    state = ctx.state()
    status = ctx.group0.status() if ctx.group0 is not None else {"role": "maintenance"}
    voters = set(status.get("voters", []))
    nodes = [
        {
            "address": r.address,
            "host_id": str(r.host_id),
            "datacenter": r.datacenter,
            "rack": r.rack,
            "state": r.state.value,
            "voter": r.raft_id in voters,
            "leader": str(r.host_id) == status.get("leader_host_id"),
        }
        for r in sorted(state.topology.members.values(), key=lambda r: r.address)
    ]
    return {
        "cluster_name": state.topology.cluster_name,
        "schema_version": str(state.state_id),
        "enabled_features": sorted(state.topology.enabled_features),
        "tablet_balancing": state.balancing_enabled,
        "local": {"address": ctx.address, "host_id": str(ctx.host_id), **status},
        "nodes": nodes,
    }


class RestApi:
    def __init__(self, ctx: ApiContext, address: str, port: int) -> None:
        self.app = build_app(ctx)
        self.address = address
        self.port = port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.address, self.port, reuse_address=True)
        await site.start()
        log.info("REST API listening address=%s port=%d", self.address, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


# The runner builds the context through this module (it imports it off the event loop).
__all__ = ["ApiContext", "RestApi", "build_app"]
