"""A node names every port it cannot listen on before it contacts the cluster."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.node.config import load_config
from tabletdb.node.port_check import PortsBusy, check_ports, listeners


@pytest.fixture
def held() -> Iterator[tuple[int, int]]:
    """Two ports some other process listens on (here: this test)."""
    with socket.socket() as one, socket.socket() as two:
        for sock in (one, two):
            sock.bind(("127.0.0.1", 0))
            sock.listen()
        yield one.getsockname()[1], two.getsockname()[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_listeners_follow_the_configuration(tmp_path: Path) -> None:
    plain = load_config(None, {"workdir": str(tmp_path), "native_shard_aware_transport_port": 19142})
    assert [(x.what.split(" (")[1], x.port) for x in listeners(plain)] == [
        ("native_transport_port)", 9042),
        ("native_shard_aware_transport_port)", 19142),
        ("storage_port)", 7000),
        ("api_port)", 10000),
        ("prometheus_port)", 9180),
    ]
    maintenance = load_config(None, {"workdir": str(tmp_path), "maintenance_mode": "true"})
    assert "internode (storage_port)" not in {x.what for x in listeners(maintenance)}


def test_every_busy_port_is_named_with_its_setting(tmp_path: Path, held: tuple[int, int]) -> None:
    cql, api = held
    config = load_config(
        None,
        {
            "workdir": str(tmp_path),
            "listen_address": "127.0.0.1",
            "native_transport_port": cql,
            "storage_port": _free_port(),
            "api_port": api,
            "api_address": "127.0.0.1",
        },
    )
    with pytest.raises(PortsBusy) as refused:
        check_ports(config)
    message = str(refused.value)
    assert f"CQL (native_transport_port) 127.0.0.1:{cql}: Address already in use" in message
    assert f"REST API (api_port) 127.0.0.1:{api}" in message
    assert "storage_port" not in message
    assert re.search(r"stop it, or set another port", message)


def test_free_ports_pass(tmp_path: Path) -> None:
    config = load_config(
        None,
        {
            "workdir": str(tmp_path),
            "listen_address": "127.0.0.1",
            "native_transport_port": _free_port(),
            "storage_port": _free_port(),
            "api_port": _free_port(),
        },
    )
    check_ports(config)
