"""`tabletdb nodetool` against real nodes: every command reads or acts through one node's REST API.

Three nodes, a tablets keyspace and a vnode keyspace at RF=3: status shows every node UN with
its host id, load and ownership (effective with a keyspace, tablets with a table), a killed node
DN with an unknown load; describering and getendpoints name the replicas the cluster uses (the
tablets' from system.tablets); refusals print the node's reason and exit 1.
"""

from __future__ import annotations

from typing import Any

from click.testing import CliRunner, Result

from tabletdb.cli.main import cli
from tests.harness.node import NodeFactory, TestNode
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for


def nodetool(node: TestNode, *args: str, auth: tuple[str, str] | None = None) -> Result:
    argv = ["nodetool", "-h", node.host, "-p", str(node.endpoints.api_port)]
    if auth is not None:
        argv += ["-u", auth[0], "-pw", auth[1]]
    return CliRunner().invoke(cli, [*argv, *args], catch_exceptions=False)


def ok(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def node_rows(lines: list[str]) -> dict[str, list[str]]:
    """status lines of nodes, by address."""
    return {line.split()[1]: line.split() for line in lines if line[:2] in ("UN", "DN", "UJ", "UL")}


def test_nodetool_reads_the_cluster_and_refuses_with_the_nodes_reason(node_factory: NodeFactory) -> None:
    nodes = node_factory.start_cluster(3, options=OPTIONS)
    with pinned(nodes[0]) as s:
        run(
            s,
            "CREATE KEYSPACE tk WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 3} AND tablets = {'enabled': true}",
            "ONE",
        )
        run(
            s,
            "CREATE KEYSPACE vk WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 3} AND tablets = {'enabled': false}",
            "ONE",
        )
        for ks in ("tk", "vk"):
            run(s, f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)", "ONE")
            for k in range(20):
                run(s, f"INSERT INTO {ks}.t (k, v) VALUES (%s, %s)", "QUORUM", (k, "x" * 100))
        host_ids = {
            n.host: str(run(p, "SELECT host_id FROM system.local", "ONE")[0].host_id) for n, p in _each(nodes)
        }
        tablets = run(
            s,
            "SELECT last_token, replicas FROM system.tablets WHERE keyspace_name = 'tk' ALLOW FILTERING",
            "ONE",
        )

    lines = ok(nodetool(nodes[1], "status"))
    assert lines[0] == "Datacenter: datacenter1" and lines[3].startswith("|/ State=Normal")
    rows = node_rows(lines)
    assert set(rows) == set(host_ids)
    for address, row in rows.items():
        assert row[0] == "UN" and host_ids[address] in row and row[-1] == "rack1"
        assert row[2] != "?", row  # every live node reported its load
    owns = [float(row[-3].rstrip("%")) for row in rows.values()]
    assert abs(sum(owns) - 100) < 0.5, lines  # primary ranges: the ring once

    rows = node_rows(ok(nodetool(nodes[2], "status", "vk")))
    assert {row[-3] for row in rows.values()} == {"100.0%"}  # RF=3 on three nodes
    lines = ok(nodetool(nodes[2], "status", "tk", "t"))
    assert "Tablets" in lines[4] and "Owns (effective)" in lines[4]
    counts = {address: int(row[4]) for address, row in node_rows(lines).items()}
    assert counts == {address: len(tablets) for address in host_ids}

    info = ok(nodetool(nodes[0], "info"))
    assert info[0].split(":", 1)[1].strip() == host_ids[nodes[0].host]
    assert "Native Transport active: true" in info and "Data Center            : datacenter1" in info

    ring = ok(nodetool(nodes[0], "describering", "vk"))
    assert ring[0].startswith("Schema Version:") and len(ring) > 3
    assert all(line.count("EndpointDetails(") == 3 for line in ring[2:])
    assert "name a table" in _fails(nodetool(nodes[0], "describering", "tk"))
    per_tablet = ok(nodetool(nodes[0], "describering", "tk", "t"))
    assert len(per_tablet) == 2 + len(tablets)

    by_host = {v: k for k, v in host_ids.items()}
    with pinned(nodes[0]) as s:
        token = run(s, "SELECT token(k) AS t FROM tk.t WHERE k = 7", "ONE")[0].t
    holding = next(r for r in sorted(tablets, key=lambda r: r.last_token) if token <= r.last_token)
    expected = {by_host[str(h)] for h, _ in holding.replicas}
    assert set(ok(nodetool(nodes[1], "getendpoints", "tk", "t", "7"))) == expected
    assert sorted(ok(nodetool(nodes[1], "getendpoints", "vk", "t", "7"))) == sorted(host_ids)
    assert "key component 'seven' of column k" in _fails(
        nodetool(nodes[1], "getendpoints", "vk", "t", "seven")
    )

    assert ok(nodetool(nodes[0], "cleanup", "tk")) == []  # tablets keyspaces need no cleanup
    assert "nothing was dropped" in _fails(nodetool(nodes[0], "cleanup", "vk"))
    refused = _fails(nodetool(nodes[0], "removenode", host_ids[nodes[1].host]))
    # s7remove's endpoint refuses a live node; until it is merged the node has no such route
    assert "the node being removed is alive" in refused or "(404)" in refused, refused

    nodes[2].kill()
    wait_for(
        lambda: node_rows(ok(nodetool(nodes[0], "status"))).get(nodes[2].host, [""])[0] == "DN",
        "nodetool status to show the killed node down",
    )
    row = node_rows(ok(nodetool(nodes[0], "status")))[nodes[2].host]
    assert row[2] == "?" and host_ids[nodes[2].host] in row


def test_nodetool_needs_credentials_when_the_node_takes_passwords(node_factory: NodeFactory) -> None:
    (node,) = node_factory.start_cluster(
        1, options={"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer"}
    )
    assert "failed (401)" in _fails(nodetool(node, "status"))
    assert "failed (401)" in _fails(nodetool(node, "status", auth=("cassandra", "wrong")))
    rows = node_rows(ok(nodetool(node, "status", auth=("cassandra", "cassandra"))))
    assert list(rows) == [node.host] and rows[node.host][0] == "UN"


def _fails(result: Result) -> str:
    assert result.exit_code == 1, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    return result.output


def _each(nodes: list[TestNode]) -> Any:
    for node in nodes:
        with pinned(node) as session:
            yield node, session
