"""The REST API's access table against the routes the app really registers, and basic-auth parsing."""

from __future__ import annotations

import base64
import uuid

from tabletdb.group0.cluster_state import ClusterState
from tabletdb.node.admin.metrics import NodeMetrics
from tabletdb.node.admin.rest_api import ApiContext, build_app
from tabletdb.node.admin.rest_auth import ACCESS, Access, credentials, required_access


def registered_routes() -> set[tuple[str, str]]:
    metrics = NodeMetrics(dict, None)
    app = build_app(ApiContext(uuid.uuid4(), "127.0.0.1", ClusterState, None, metrics=metrics))
    routes = app.router.routes()
    # aiohttp adds a HEAD route beside each GET; HEAD is judged as its GET
    return {(r.method, r.resource.canonical) for r in routes if r.resource is not None and r.method != "HEAD"}


def test_every_login_level_entry_names_a_real_read_only_route() -> None:
    routes = registered_routes()
    assert set(ACCESS) <= routes  # a renamed route would silently fall back to superuser
    assert all(method == "GET" for method, _ in ACCESS)


def test_everything_that_changes_state_or_reads_data_needs_a_superuser() -> None:
    routes = registered_routes()
    for method, path in routes - set(ACCESS):
        assert required_access(method, path) is Access.SUPERUSER, (method, path)
    assert required_access("HEAD", "/cluster/status") is Access.LOGIN
    assert {p for m, p in routes if m != "GET"} >= {
        "/storage_service/snapshots",
        "/storage_service/tablets/load",
        "/storage_service/tablets/balancing",
        "/raft/trigger_snapshot",
    }
    assert required_access("GET", "/storage_service/snapshots/file") is Access.SUPERUSER
    assert required_access("GET", None) is Access.SUPERUSER  # unmatched paths fail closed


def test_basic_credentials_parse_and_anything_else_is_none() -> None:
    token = base64.b64encode("user:pa:ss wörd".encode()).decode()
    assert credentials(f"Basic {token}") == ("user", "pa:ss wörd")
    assert credentials(None) is None
    assert credentials("Bearer abc") is None
    assert credentials("Basic !!!") is None
