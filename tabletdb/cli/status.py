"""``tabletdb status``: the cluster as group0 sees it (nodes, host ids, DC/rack, leader).

Reads one node's REST API (`/cluster/status`), then asks every member's API whether it answers,
so a node that is down shows as D (like nodetool's UN/DN).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import click

DEFAULT_API_PORT = 10000


def fetch(address: str, port: int, path: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(f"http://{address}:{port}{path}", timeout=timeout) as response:
        return json.loads(response.read())


def is_up(address: str, port: int) -> bool:
    try:
        fetch(address, port, "/storage_service/hostid/local", timeout=1.0)
        return True
    except (OSError, urllib.error.URLError, ValueError):
        return False


def render(status: dict[str, Any], up: dict[str, bool]) -> str:
    lines = [
        f"Cluster: {status['cluster_name']}",
        f"Schema version: {status['schema_version']}",
        f"Enabled features: {', '.join(status['enabled_features']) or '-'}",
        "",
        f"{'St':<3} {'Address':<16} {'Host ID':<37} {'DC':<14} {'Rack':<8} {'Raft':<7} Leader",
    ]
    for node in status["nodes"]:
        state = ("U" if up.get(node["address"]) else "D") + ("N" if node["state"] == "normal" else "J")
        raft = "voter" if node["voter"] else "learner"
        leader = "*" if node["leader"] else ""
        lines.append(
            f"{state:<3} {node['address']:<16} {node['host_id']:<37} {node['datacenter']:<14} "
            f"{node['rack']:<8} {raft:<7} {leader}"
        )
    return "\n".join(lines)


@click.command("status")
@click.option("--host", default="127.0.0.1", show_default=True, help="Any node's REST API address.")
@click.option("--api-port", type=int, default=DEFAULT_API_PORT, show_default=True)
def status_command(host: str, api_port: int) -> None:
    """Show the cluster's nodes, their state, host ids, DC/rack and the group0 leader."""
    try:
        status = fetch(host, api_port, "/cluster/status")
    except (OSError, urllib.error.URLError, ValueError) as exc:
        raise click.ClickException(f"cannot reach the REST API at {host}:{api_port}: {exc}") from None
    up = {node["address"]: is_up(node["address"], api_port) for node in status["nodes"]}
    click.echo(render(status, up))
