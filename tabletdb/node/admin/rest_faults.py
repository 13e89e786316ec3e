"""TEST ONLY: drive this node's internode fault injector (`net.faults`) over the REST API.

Chaos tests partition real node processes without root (no iptables) by telling each node to
stop sending to some peers: `POST /faults/block?address=A` drops every internode frame this node
would send to the member at address A (requests, responses and one-way messages, see
`net.rpc`), `POST /faults/fail?verb=V` (optionally `&address=A`; without it, towards every other
member) makes this node's requests of verb V fail at once while all else flows (a test holds a
protocol at one step: the topology coordinator's streams or resize copies, retried until healed).
A may be this node's own address for the verbs it can ask of itself without the network and
whose local path asks the injector (`SELF_FAILABLE_VERBS`: a coordinator streaming a tablet onto
itself), so failing a verb on every node towards every member, itself included, holds every
such request wherever it starts. `POST /faults/heal` (optionally `?address=A`) lifts faults,
`GET /faults` shows them.
A two-way partition is a block on both sides. The routes exist only when the node runs with
`test_fault_injection_api: true`; ScyllaDB gates its error-injection API at build time instead.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.net.faults import FaultInjector
from tabletdb.node.admin.api_context import ApiContext
from tabletdb.node.tablet_streaming import VERB_TABLET_STREAM

log = logging.getLogger(__name__)

SELF_FAILABLE_VERBS = frozenset({VERB_TABLET_STREAM})
"""Verbs whose requests to this node itself (served without the network) ask the injector
(``RpcNode.fail_if_injected``): failing another towards this node would be accepted and do
nothing, so it is refused."""


def add_routes(app: web.Application, ctx: ApiContext) -> None:
    faults = ctx.faults
    if faults is None:
        return

    async def block(request: web.Request) -> web.Response:
        peer = _peer_of(ctx.state(), request.query.get("address", ""))
        faults.block(peer)
        log.warning("fault injection: blocked internode traffic to address=%s", request.query["address"])
        return web.json_response(_describe(ctx.state(), faults))

    async def fail(request: web.Request) -> web.Response:
        verb = request.query.get("verb", "")
        if not verb:
            raise web.HTTPBadRequest(text="name the verb whose requests must fail: ?verb=")
        if ctx.group0 is not None and not ctx.group0.rpc.serves(verb):
            raise web.HTTPBadRequest(text=f"verb={verb!r} is no internode request verb of this node")
        state = ctx.state()
        address = request.query.get("address")
        peers = (
            [_peer_of(state, address)]
            if address is not None
            else [int(r.raft_id) for h, r in state.topology.members.items() if h != ctx.host_id]
        )
        if address == ctx.address and verb not in SELF_FAILABLE_VERBS:
            raise web.HTTPBadRequest(
                text=f"verb={verb!r} towards this node itself: only {sorted(SELF_FAILABLE_VERBS)} "
                "ask the injector when a node serves them itself"
            )
        for peer in peers:
            faults.fail(peer, verb)
        log.warning("fault injection: failing requests verb=%s address=%s", verb, address or "all")
        return web.json_response(_describe(state, faults))

    async def heal(request: web.Request) -> web.Response:
        address = request.query.get("address")
        faults.heal(None if address is None else _peer_of(ctx.state(), address))
        log.warning("fault injection: healed address=%s", address or "all")
        return web.json_response(_describe(ctx.state(), faults))

    async def show(request: web.Request) -> web.Response:
        return web.json_response(_describe(ctx.state(), faults))

    app.add_routes(
        [
            web.get("/faults", show),
            web.post("/faults/block", block),
            web.post("/faults/fail", fail),
            web.post("/faults/heal", heal),
        ]
    )


def _peer_of(state: ClusterState, address: str) -> int:
    """The RPC peer id (raft id) of the cluster member at `address`; 400 if there is none."""
    for record in state.topology.members.values():
        if record.address == address:
            return int(record.raft_id)
    members = sorted(r.address for r in state.topology.members.values())
    raise web.HTTPBadRequest(text=f"address={address!r} is not a cluster member; members: {members}")


def _describe(state: ClusterState, faults: FaultInjector) -> dict[str, Any]:
    addresses = {r.raft_id: r.address for r in state.topology.members.values()}
    return {
        "blocked": sorted(addresses.get(peer, str(peer)) for peer, f in faults.peers.items() if f.blocked),
        "dropped": faults.dropped,
        "failing": {
            addresses.get(peer, str(peer)): sorted(f.failed_verbs)
            for peer, f in sorted(faults.peers.items())
            if f.failed_verbs
        },
        "failed": faults.failed,
    }
