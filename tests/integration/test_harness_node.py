"""The harness against a real tabletdb node: readiness, clients, stop/kill/restart on one workdir.

These need tabletdb.node.runner (the integrator's). Until it exists they are skipped with that
reason shown in the summary, never silently.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from tests.harness.clients import cassandra_driver_query, run_cqlsh, scylla_session
from tests.harness.node import NodeFactory, TestNode

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tabletdb.node.runner") is None,
    reason="tabletdb.node.runner (the server) is not written yet",
)


def local_row(node: TestNode, protocol_version: int | None = 4) -> Any:
    with scylla_session(node, protocol_version=protocol_version) as session:
        return session.execute("SELECT * FROM system.local WHERE key = 'local'").one()


def test_node_is_cql_ready_and_looks_like_scylla(node: TestNode) -> None:
    assert node.supported["CQL_VERSION"] == ["3.3.1"]
    assert "COMPRESSION" in node.supported
    assert node.config_path.exists()
    assert node.api_url == f"http://{node.host}:{node.endpoints.api_port}"


def test_session_fixture_reads_system_local(session: Any, node: TestNode) -> None:
    row = session.execute("SELECT rpc_address, cluster_name FROM system.local WHERE key = 'local'").one()
    assert str(row.rpc_address) == node.host


def test_negotiated_protocol_downgrades_to_v4(node: TestNode) -> None:
    with scylla_session(node, protocol_version=None) as session:
        assert session.cluster.protocol_version == 4


@pytest.mark.parametrize("apache", [False, True], ids=["scylla-cqlsh", "apache-cqlsh"])
def test_cqlsh_runs_a_query(node: TestNode, apache: bool) -> None:
    out = run_cqlsh(node, "SELECT cluster_name FROM system.local", apache=apache).check().stdout
    assert "(1 rows)" in out


def test_apache_driver_reads_system_local(node: TestNode) -> None:
    ((row,),) = cassandra_driver_query(node, ["SELECT cluster_name FROM system.local WHERE key='local'"])
    assert row["cluster_name"]


def test_sigterm_stop_is_clean_and_restart_keeps_identity(node_factory: NodeFactory) -> None:
    node = node_factory.start_node()
    host_id = local_row(node).host_id
    assert node.stop() == 0
    node.start()
    assert local_row(node).host_id == host_id


def test_kill_9_then_restart_on_the_same_workdir(node_factory: NodeFactory) -> None:
    node = node_factory.start_node()
    host_id = local_row(node).host_id
    node.kill()
    node.start()
    assert local_row(node).host_id == host_id
