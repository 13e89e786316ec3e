"""CqlServer over TLS: on every port, or on an extra TLS port beside plaintext ones
(native_transport_port_ssl). A plaintext client on a TLS port gets nowhere; the server stays up."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from tabletdb.net.tls import TlsFiles, server_context
from tabletdb.protocol.server import CqlServer
from tests.harness.certs import TestCA
from tests.harness.probe import ProbeError, probe_options
from tests.unit.protocol.fake_handler import FakeHandler


def _server_tls(ca: TestCA, require_client_auth: bool = False) -> ssl.SSLContext:
    pair = ca.issue("server")
    return server_context(
        TlsFiles(
            "client_encryption_options", pair.certificate, pair.keyfile, ca.certificate, require_client_auth
        )
    )


async def _probe(port: int, context: ssl.SSLContext | None) -> dict[str, list[str]]:
    return await asyncio.to_thread(probe_options, "127.0.0.1", port, 5.0, context)


def test_tls_on_every_port(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)

    async def main() -> None:
        server = CqlServer(
            FakeHandler(),
            port=0,
            shard_aware_port=0,
            nr_shards=2,
            tls=_server_tls(ca, require_client_auth=True),
        )
        await server.start()
        client = ca.client_context(ca.issue("client"))
        for port in (server.port, server.shard_aware_port):
            assert port is not None
            assert "CQL_VERSION" in await _probe(port, client)
            with pytest.raises((OSError, ProbeError)):
                await _probe(port, None)  # plaintext
            with pytest.raises((OSError, ProbeError)):
                await _probe(port, ca.client_context())  # no client certificate
        assert "CQL_VERSION" in await _probe(server.port, client)  # still serving
        await server.stop()

    asyncio.run(main())


def test_extra_tls_port_beside_plaintext(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)

    async def main() -> None:
        server = CqlServer(FakeHandler(), port=0, tls=_server_tls(ca), tls_port=0)
        await server.start()
        assert server.tls_port not in (None, 0, server.port)
        assert "CQL_VERSION" in await _probe(server.port, None)
        assert server.tls_port is not None
        assert "CQL_VERSION" in await _probe(server.tls_port, ca.client_context())
        with pytest.raises((OSError, ProbeError)):
            await _probe(server.tls_port, None)
        await server.stop()

    asyncio.run(main())


def test_a_tls_port_needs_a_context() -> None:
    with pytest.raises(ValueError, match="TLS context"):
        CqlServer(FakeHandler(), port=0, tls_port=0)
