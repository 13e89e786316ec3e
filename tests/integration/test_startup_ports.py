"""A node whose CQL port is taken says so in one line and exits 1 before it joins: no member,
no Raft voter that never serves is left behind, and once the port is free the same node joins."""

from __future__ import annotations

import json
import socket
import urllib.request
from typing import Any

from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for


def rest(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def test_a_busy_port_stops_the_node_before_it_joins(node_factory: NodeFactory) -> None:
    (first,) = node_factory.start_cluster(1, options=OPTIONS)
    second = node_factory.create(seeds=[first.host], options=OPTIONS)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind((second.host, second.port))
        squatter.listen()
        second.start(wait=False)
        wait_for(lambda: not second.running, "the node with a busy CQL port to exit")
    assert second.process.returncode == 1
    output = second.log_tail()
    expected = (
        f"tabletdb: cannot start: cannot listen on CQL (native_transport_port) {second.host}:{second.port}"
    )
    assert expected in output, output
    assert "Traceback" not in output, output
    assert [e["key"] for e in rest(first.api_url + "/storage_service/host_id")] == [first.host]
    assert len(rest(first.api_url + "/raft/state")["voters"]) == 1
    with pinned(first) as s:
        assert run(s, "SELECT peer FROM system.peers", "ONE") == []

    second.start()  # the port is free now: the same node joins
    with pinned(first) as s:
        wait_for(lambda: len(run(s, "SELECT peer FROM system.peers", "ONE")) == 1, "the node to join")
