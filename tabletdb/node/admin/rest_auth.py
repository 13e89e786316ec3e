"""Who may call the REST API: HTTP basic auth checked against the node's roles.

With AllowAllAuthenticator nothing is checked (ScyllaDB's REST API has no authentication at
all). With any authenticator that takes passwords, *every* request — on whichever address the
API listens — must carry ``Authorization: Basic`` credentials that would log in over CQL (same
password check, same cache, same throttling of failures: `AuthService.verify`); otherwise it is
answered 401 with a ``WWW-Authenticate`` challenge. Nothing stays open, not even unknown paths
(they answer 401 rather than 404, so paths cannot be probed): a 401 already tells a liveness
probe that the process serves HTTP.

Two levels, by route (`ACCESS`):

* ``LOGIN`` — reads of cluster state that CQL's system tables show any logged-in role anyway
  (host ids, keyspace names, Raft and cluster status, the balancing flag, metrics);
* ``SUPERUSER`` — everything that reads table data or changes data or cluster state (snapshots
  and their files, tablet loads, the balancing switch, Raft snapshots). Superuser status is
  inherited through granted roles, as in CQL. Routes not listed need it too (fail closed).

An authenticated role lacking superuser gets 403 naming the role and what it lacks.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Awaitable, Callable

from aiohttp import BasicAuth, hdrs, web
from aiohttp.typedefs import Middleware

from tabletdb.cql.errors import BadCredentials
from tabletdb.node.admin.rest_ring import GET_PATHS as RING_READS
from tabletdb.query.auth_check import AuthService

log = logging.getLogger(__name__)

REALM = "tabletdb"


class Access(enum.Enum):
    LOGIN = "login"
    SUPERUSER = "superuser"


ACCESS: dict[tuple[str, str], Access] = {
    ("GET", "/storage_service/hostid/local"): Access.LOGIN,
    ("GET", "/storage_service/host_id"): Access.LOGIN,
    ("GET", "/storage_service/keyspaces"): Access.LOGIN,
    ("GET", "/raft/leader_host"): Access.LOGIN,
    ("GET", "/raft/state"): Access.LOGIN,
    ("GET", "/cluster/status"): Access.LOGIN,
    ("GET", "/metrics"): Access.LOGIN,
    ("GET", "/storage_service/tablets/balancing"): Access.LOGIN,
    # what nodetool status/info/ring/describering/getendpoints read (node.admin.rest_ring)
    **{("GET", path): Access.LOGIN for path in RING_READS},
}
"""(method, route path) -> what it needs; any route not here needs SUPERUSER."""


def required_access(method: str, route_path: str | None) -> Access:
    if method == "HEAD":
        method = "GET"
    return ACCESS.get((method, route_path or ""), Access.SUPERUSER)


def credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) from an Authorization header; None when absent or not basic auth."""
    if not header:
        return None
    try:
        decoded = BasicAuth.decode(header, encoding="utf-8")
    except ValueError:
        return None
    return decoded.login, decoded.password


def _challenge(reason: str) -> web.HTTPUnauthorized:
    return web.HTTPUnauthorized(
        text=reason, headers={hdrs.WWW_AUTHENTICATE: f'Basic realm="{REALM}", charset="UTF-8"'}
    )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def middleware(auth: AuthService) -> Middleware:
    """The aiohttp middleware enforcing the above; install only when passwords are in use."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        given = credentials(request.headers.get(hdrs.AUTHORIZATION))
        if given is None:
            raise _challenge("this node requires authentication: send HTTP basic auth credentials of a role")
        user, password = given
        try:
            await auth.verify(user, password)
        except BadCredentials as exc:
            raise _challenge(str(exc)) from None
        route = request.match_info.route.resource
        access = required_access(request.method, route.canonical if route is not None else None)
        if access is Access.SUPERUSER and not auth.is_superuser(user):
            raise web.HTTPForbidden(
                text=f"role {user!r} is not a superuser; {request.method} {request.path} needs superuser"
            )
        return await handler(request)

    return check
