"""Client helpers end to end against the benchmark floor server (a real process, real clients).

This proves the harness's driver sessions (explicit v4 and negotiated v5 -> v4), both cqlsh
flavours with an isolated HOME, and Apache cassandra-driver snippets in .venv-cassandra.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.addresses import AddressAllocator, NodeEndpoints
from tests.harness.clients import (
    cassandra_driver_query,
    run_cassandra_driver,
    run_cqlsh,
    scylla_session,
)
from tests.harness.probe import wait_cql_ready
from tests.harness.process import ManagedProcess

REPO_ROOT = Path(__file__).resolve().parents[2]


class FloorEndpoint:
    def __init__(self, endpoints: NodeEndpoints) -> None:
        self.host = endpoints.address
        self.port = endpoints.native_port


@pytest.fixture(scope="module")
def floor(
    address_allocator: AddressAllocator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FloorEndpoint]:
    endpoints = address_allocator.allocate()
    argv = [sys.executable, "-m", "bench.floor_server", "--host", endpoints.address, "--port", "9042"]
    log = tmp_path_factory.mktemp("floor") / "floor.log"
    process = ManagedProcess(argv, log, name="floor-server", cwd=REPO_ROOT)
    process.start()
    try:
        wait_cql_ready(endpoints.address, endpoints.native_port, timeout=120, alive=lambda: process.running)
        yield FloorEndpoint(endpoints)
    finally:
        process.stop()


@pytest.mark.parametrize("protocol_version", [4, None], ids=["v4", "negotiated"])
def test_scylla_driver_session(floor: FloorEndpoint, protocol_version: int | None) -> None:
    with scylla_session(floor, protocol_version=protocol_version) as session:
        assert session.cluster.protocol_version == 4  # negotiated: v5 refused, downgraded to v4
        row = session.execute("SELECT k, v FROM floor.t").one()
        assert (row.k, row.v) == (1, b"floor")
        prepared = session.prepare("SELECT k, v FROM floor.t WHERE k = ?")
        assert session.execute(prepared, [1]).one().v == b"floor"


@pytest.mark.parametrize("apache", [False, True], ids=["scylla-cqlsh", "apache-cqlsh"])
def test_cqlsh(floor: FloorEndpoint, apache: bool) -> None:
    result = run_cqlsh(floor, "SELECT * FROM floor.t", apache=apache).check()
    assert "(1 rows)" in result.stdout
    assert "0x666c6f6f72" in result.stdout


def test_cqlsh_ignores_the_users_cqlshrc(
    floor: FloorEndpoint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cqlshrc in the real HOME that turns on SSL (cqlsh then refuses to start) must not be read."""
    home = tmp_path / "home"
    (home / ".cassandra").mkdir(parents=True)
    (home / ".cassandra" / "cqlshrc").write_text("[connection]\nssl = true\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSL_CERTFILE", str(home / "missing.pem"))
    assert "(1 rows)" in run_cqlsh(floor, "SELECT * FROM floor.t").check().stdout


@pytest.mark.parametrize("protocol_version", [4, None], ids=["v4", "negotiated"])
def test_apache_driver_query(floor: FloorEndpoint, protocol_version: int | None) -> None:
    (rows,) = cassandra_driver_query(floor, ["SELECT k, v FROM floor.t"], protocol_version)
    assert rows == [{"k": 1, "v": "b'floor'"}]


def test_apache_driver_snippet_runs_in_the_other_venv(floor: FloorEndpoint) -> None:
    code = """
import cassandra
cluster, session = connect()
result = {"version": cassandra.__version__, "protocol": cluster.protocol_version}
cluster.shutdown()
"""
    assert run_cassandra_driver(floor, code, protocol_version=None) == {"version": "3.30.1", "protocol": 4}
