"""ScyllaDB's `system.clients` and `system.versions` through the real driver: each connection
the driver opened is a row with what the connection really negotiated (its port, driver name
and version from STARTUP, protocol version, user, TLS session), rows go when connections close,
and `versions` has ScyllaDB's columns with this build's version."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import cassandra
from cassandra.auth import PlainTextAuthProvider

from tests.harness.certs import TestCA
from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode

CLIENT_COLUMNS = {
    "address",
    "port",
    "client_type",
    "client_options",
    "connection_stage",
    "driver_name",
    "driver_version",
    "hostname",
    "protocol_version",
    "shard_id",
    "ssl_cipher_suite",
    "ssl_enabled",
    "ssl_protocol",
    "username",
}


def _local_ports(cluster: Any) -> set[int]:
    """The client-side ports of every connection the driver holds (control and pools)."""
    sockets = [cluster.control_connection._connection._socket]
    for session in cluster.sessions:
        for pool in session._pools.values():
            sockets += [c._socket for c in pool._connections.values()]
    return {s.getsockname()[1] for s in sockets}


def _clients(session: Any) -> dict[int, Any]:
    return {r.port: r for r in session.execute("SELECT * FROM system.clients")}


def test_each_driver_connection_is_a_row_with_what_it_negotiated(node_factory: NodeFactory) -> None:
    node = node_factory.start_node(options={"authenticator": "PasswordAuthenticator"})
    auth = PlainTextAuthProvider("cassandra", "cassandra")
    with scylla_cluster(node, auth_provider=auth) as cluster:
        session = cluster.connect()
        rows = _clients(session)
        ports = _local_ports(cluster)
        assert ports <= set(rows), (ports, rows)
        assert set(session.execute("SELECT * FROM system.clients").column_names) == CLIENT_COLUMNS
        for port in ports:
            row = rows[port]
            assert (row.client_type, row.connection_stage, row.username) == ("cql", "READY", "cassandra")
            assert row.driver_name == "ScyllaDB Python Driver"
            assert row.driver_version == cassandra.__version__
            assert row.protocol_version == 4
            assert (row.ssl_enabled, row.ssl_protocol, row.ssl_cipher_suite) == (False, None, None)
            assert dict(row.client_options)["DRIVER_NAME"] == row.driver_name
        with scylla_cluster(node, auth_provider=auth) as second:
            second.connect()
            theirs = _local_ports(second)
            assert theirs <= set(_clients(session))
        assert not theirs & set(_clients(session))  # closed connections are gone


def test_tls_connections_show_their_protocol_and_cipher(node_factory: NodeFactory, tmp_path: Path) -> None:
    ca = TestCA(tmp_path / "certs")
    pair = ca.issue("node")
    files = f"certificate: {pair.certificate}, keyfile: {pair.keyfile}, truststore: {ca.certificate}"
    client = ca.client_context(ca.issue("client"))
    node = node_factory.create(
        options={"client_encryption_options": f"{{enabled: true, {files}, require_client_auth: true}}"},
        cql_ssl=client,
    )
    node.start()
    with scylla_cluster(node, ssl_context=client) as cluster:
        session = cluster.connect()
        rows = _clients(session)
        sock = cluster.control_connection._connection._socket
        row = rows[sock.getsockname()[1]]
        assert row.ssl_enabled is True and row.username == "anonymous"
        assert row.ssl_protocol == sock.version().replace("TLSv", "TLS")
        assert row.ssl_cipher_suite == sock.cipher()[0]


def test_versions_has_scylladb_columns_and_this_build(node: TestNode) -> None:
    with scylla_cluster(node) as cluster:
        result = cluster.connect().execute("SELECT * FROM system.versions")
        assert set(result.column_names) == {"key", "build_id", "build_mode", "version"}
        (row,) = list(result)
        assert (row.key, row.build_mode) == ("local", "release")
        assert row.version == importlib.metadata.version("tabletdb")
