"""The REST API of a node with PasswordAuthenticator: nothing answers without a role's
credentials, admin actions need a superuser, tampered tablet uploads are refused, our tools
pass credentials, and failed logins cost the same work whether or not the role exists."""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable
from click.testing import CliRunner

from tabletdb.cli.status import status_command
from tabletdb.spark.backup_rest import NodeApi, RestError
from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode

AUTH_OPTIONS = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer"}
NTS = "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1}"
ADMIN = ("cassandra", "cassandra")
IN_2096_US = 3_980_000_000 * 1_000_000

LOGIN_ROUTES = [
    ("GET", "/cluster/status"),
    ("GET", "/storage_service/host_id"),
    ("GET", "/raft/state"),
    ("GET", "/metrics"),
    ("GET", "/storage_service/tablets/balancing"),
]
SUPERUSER_ROUTES = [
    ("POST", "/storage_service/tablets/balancing?enabled=true"),
    ("POST", "/raft/trigger_snapshot"),
    ("POST", "/storage_service/snapshots?tag=probe"),
    ("DELETE", "/storage_service/snapshots?tag=probe"),
    ("GET", "/storage_service/snapshots/file?tag=probe&path=x"),
    (
        "POST",
        "/storage_service/tablets/load?table_id=00000000-0000-0000-0000-000000000000&first_token=0&last_token=1",
    ),
]
UNKNOWN_ROUTE = ("GET", "/no/such/path")


@contextmanager
def login(node: TestNode, user: str, password: str) -> Iterator[Any]:
    with scylla_cluster(node, auth_provider=PlainTextAuthProvider(user, password)) as cluster:
        yield cluster.connect()


def call(
    node: TestNode, method: str, path: str, credentials: tuple[str, str] | None = None, raw: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    headers = {}
    if credentials is not None:
        raw = base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()
    if raw is not None:
        headers["Authorization"] = f"Basic {raw}"
    request = urllib.request.Request(
        node.api_url + path, method=method, headers=headers, data=b"" if method == "POST" else None
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def auth_counters(node: TestNode) -> tuple[int, int]:
    """(password hashes run, failed logins) from the node's metrics, read as the superuser."""
    status, _, body = call(node, "GET", "/metrics", ADMIN)
    assert status == 200
    values = {}
    for line in body.decode().splitlines():
        for name in ("tabletdb_auth_password_hashes_total", "tabletdb_auth_failed_logins_total"):
            if line.startswith(name + " "):
                values[name] = int(float(line.split()[1]))
    return values["tabletdb_auth_password_hashes_total"], values["tabletdb_auth_failed_logins_total"]


@pytest.fixture(scope="module")
def node(address_allocator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestNode]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("restauth"))
    try:
        started = factory.start_node(options=AUTH_OPTIONS)
        with login(started, *ADMIN) as s:
            s.execute("CREATE ROLE plain WITH PASSWORD = 'pw' AND LOGIN = true")
            s.execute("CREATE ROLE nologin WITH PASSWORD = 'pw' AND LOGIN = false")
            s.execute("CREATE ROLE boss WITH SUPERUSER = true")
            s.execute("CREATE ROLE deputy WITH PASSWORD = 'pw' AND LOGIN = true")
            s.execute("GRANT boss TO deputy")
            s.execute(f"CREATE KEYSPACE ks WITH replication = {NTS}")
            s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH tablets = {'min_tablet_count': 1}")
            for k in range(20):
                s.execute("INSERT INTO ks.t (k, v) VALUES (%s, %s)", (k, f"v{k}"))
        yield started
    finally:
        assert not factory.cleanup()


@pytest.mark.parametrize("route", [*LOGIN_ROUTES, *SUPERUSER_ROUTES, UNKNOWN_ROUTE])
def test_no_credentials_get_401_with_a_challenge(node: TestNode, route: tuple[str, str]) -> None:
    status, headers, body = call(node, *route)
    assert status == 401, (route, status, body)
    assert headers["WWW-Authenticate"].startswith('Basic realm="tabletdb"')
    assert b"requires authentication" in body


@pytest.mark.parametrize(
    ("credentials", "raw", "reason"),
    [
        (("cassandra", "wrong"), None, b"Username and/or password are incorrect"),
        (("ghost", "cassandra"), None, b"Username and/or password are incorrect"),
        (("nologin", "pw"), None, b"nologin is not permitted to log in"),
        (None, "not base64!", b"requires authentication"),
    ],
)
def test_wrong_credentials_get_401(
    node: TestNode, credentials: tuple[str, str] | None, raw: str | None, reason: bytes
) -> None:
    for route in (LOGIN_ROUTES[0], SUPERUSER_ROUTES[2], UNKNOWN_ROUTE):
        status, headers, body = call(node, *route, credentials, raw)
        assert status == 401 and reason in body, (route, status, body)
        assert "WWW-Authenticate" in headers


def test_a_role_that_may_log_in_reads_state_and_only_superusers_act(node: TestNode) -> None:
    plain = ("plain", "pw")
    for route in LOGIN_ROUTES:
        assert call(node, *route, plain)[0] == 200, route
    for route in SUPERUSER_ROUTES:
        status, _, body = call(node, *route, plain)
        assert status == 403 and b"role 'plain' is not a superuser" in body, (route, status, body)
    assert call(node, *UNKNOWN_ROUTE, plain)[0] == 403
    assert call(node, *UNKNOWN_ROUTE, ADMIN)[0] == 404
    deputy = ("deputy", "pw")  # superuser through a granted role, as in CQL
    assert call(node, "POST", "/storage_service/tablets/balancing?enabled=true", deputy)[0] == 200
    status, _, body = call(node, "GET", "/cluster/status", ADMIN)
    assert status == 200 and json.loads(body)["local"]["address"] == node.host


def test_failed_logins_hash_once_whether_or_not_the_role_exists(node: TestNode) -> None:
    auth_counters(node)  # warms the login cache for the superuser who reads the metrics
    hashes, failed = auth_counters(node)
    for credentials in (("plain", "guess"), ("nobody", "guess"), ("nobody-else", "pw")):
        assert call(node, "GET", "/cluster/status", credentials)[0] == 401
        hashes, failed = (hashes + 1, failed + 1)
        assert auth_counters(node) == (hashes, failed), credentials
    for user in ("plain", "ghost-user"):  # over CQL too
        with (
            pytest.raises(NoHostAvailable, match="Username and/or password are incorrect"),
            login(node, user, "x"),
        ):
            pass
        now_hashes, now_failed = auth_counters(node)
        assert now_failed > failed and now_hashes - hashes == now_failed - failed, user
        hashes, failed = now_hashes, now_failed


def _image(node: TestNode, tmp_path: Path, tag: str) -> tuple[NodeApi, dict[str, Any], Path]:
    api = NodeApi(node.host, node.endpoints.api_port, ADMIN)
    snapshot = api.take_snapshot(tag, ["ks"])
    entry = next(f for f in snapshot["files"] if f["table"] == "t" and f["rows"] > 0)
    path = tmp_path / "image.db"
    api.download(tag, entry["path"], path, lambda _: None)
    api.delete_snapshot(tag)
    return api, entry, path


def _upload(
    api: NodeApi, entry: dict[str, Any], path: Path, first: int | None = None, last: int | None = None
) -> Any:
    from tabletdb.spark.backup_rest import file_sha256

    first = entry["first_token"] if first is None else first
    last = entry["last_token"] if last is None else last
    return api.load_tablet(entry["table_id"], first, last, path, file_sha256(path))


def _tampered(source: Path, target: Path, *sql: str) -> Path:
    target.write_bytes(source.read_bytes())
    conn = sqlite3.connect(target)
    with conn:
        for statement in sql:
            conn.execute(statement)
    conn.close()
    return target


def test_tampered_uploads_are_refused_and_change_nothing(node: TestNode, tmp_path: Path) -> None:
    api, entry, image = _image(node, tmp_path, "tamper")
    future = _tampered(image, tmp_path / "future.db", f"UPDATE cells SET ts = {IN_2096_US}")
    with pytest.raises(
        RestError, match=r"HTTP 400: tablet image for ks\.t refused: .*restrict_future_timestamp"
    ):
        _upload(api, entry, future)
    trigger = _tampered(
        image, tmp_path / "trigger.db", "CREATE TRIGGER x AFTER INSERT ON cells BEGIN SELECT 1; END"
    )
    with pytest.raises(
        RestError,
        match=r"HTTP 400: .*not a tablet file: its schema differs .*\(unexpected or altered: trigger x",
    ):
        _upload(api, entry, trigger)
    moved = _tampered(image, tmp_path / "moved.db", "UPDATE partitions SET token = token - 1")
    with pytest.raises(RestError, match=r"HTTP 400: .*not its key's token"):
        _upload(api, entry, moved)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\0" * 4096)
    with pytest.raises(RestError, match=r"HTTP 400: tablet image for ks\.t refused"):
        _upload(api, entry, junk)
    with pytest.raises(RestError, match=r"HTTP 400: .*outside the token range"):
        _upload(api, entry, image, last=entry["first_token"] + 1)
    with pytest.raises(RestError, match="HTTP 401"):
        NodeApi(node.host, node.endpoints.api_port).load_tablet(entry["table_id"], 0, 1, image, "0" * 64)
    # none of it took: a normal write still replaces every row
    with login(node, *ADMIN) as s:
        s.execute("UPDATE ks.t SET v = 'new' WHERE k = 1")
        assert s.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "new"
    assert _upload(api, entry, image)["mode"] == "rows"  # the untouched image loads


def test_status_command_passes_credentials(node: TestNode, tmp_path: Path) -> None:
    args = ["--host", node.host, "--api-port", str(node.endpoints.api_port)]
    refused = CliRunner().invoke(status_command, args)
    assert refused.exit_code == 1 and "answered 401" in refused.output
    done = CliRunner().invoke(status_command, [*args, "-u", "plain", "-p", "pw"])
    assert done.exit_code == 0, done.output
    assert f"UN  {node.host}" in done.output
    credentials = tmp_path / "credentials"
    credentials.write_text("[PlainTextAuthProvider]\nusername = plain\npassword = pw\n")
    done = CliRunner().invoke(status_command, [*args, "--credentials-file", str(credentials)])
    assert done.exit_code == 0 and f"UN  {node.host}" in done.output, done.output
