"""``tabletdb status``: the cluster as group0 sees it (nodes, host ids, DC/rack, leader).

Reads one node's REST API (`/cluster/status`), then asks every member's API whether it answers,
so a node that is down shows as D (like nodetool's UN/DN). A node whose authenticator takes
passwords wants a role's credentials (`-u`/`-p` or `--credentials-file`, sent as HTTP basic
auth); any HTTP answer, even a refusal, counts as "up".
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import click

from tabletdb.cli.credentials import read_credentials
from tabletdb.spark.backup_rest import Credentials, basic_auth_headers

DEFAULT_API_PORT = 10000


def fetch(address: str, port: int, path: str, credentials: Credentials | None, timeout: float = 5.0) -> Any:
    request = urllib.request.Request(
        f"http://{address}:{port}{path}", headers=basic_auth_headers(credentials)
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def is_up(address: str, port: int, credentials: Credentials | None) -> bool:
    try:
        fetch(address, port, "/storage_service/hostid/local", credentials, timeout=1.0)
        return True
    except urllib.error.HTTPError:
        return True  # it answered HTTP: the process is up, whatever it thinks of the request
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
@click.option("-u", "--username", help="Role to authenticate as (HTTP basic auth).")
@click.option("-p", "--password")
@click.option(
    "--credentials-file",
    type=click.Path(exists=True, dir_okay=False),
    help="cqlsh-style file: username and password under [PlainTextAuthProvider].",
)
def status_command(
    host: str, api_port: int, username: str | None, password: str | None, credentials_file: str | None
) -> None:
    """Show the cluster's nodes, their state, host ids, DC/rack and the group0 leader."""
    if credentials_file:
        username, password = read_credentials(credentials_file)
    credentials = (username, password or "") if username else None
    try:
        status = fetch(host, api_port, "/cluster/status", credentials)
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace").strip()
        raise click.ClickException(
            f"the REST API at {host}:{api_port} answered {exc.code}: {detail}"
        ) from None
    except (OSError, urllib.error.URLError, ValueError) as exc:
        raise click.ClickException(f"cannot reach the REST API at {host}:{api_port}: {exc}") from None
    up = {node["address"]: is_up(node["address"], api_port, credentials) for node in status["nodes"]}
    click.echo(render(status, up))
