"""``tabletdb nodetool [-h HOST] [-p API_PORT] [-u USER -pw PASSWORD] <command>``.

Talks to one node's REST API only (ScyllaDB's paths, `node.admin.rest_ring` and friends), as
ScyllaDB's nodetool does; what it prints is drawn by `cli.nodetool_format` from the answers.
A node whose authenticator takes passwords wants a role's credentials (HTTP basic auth; the
read commands need a login, decommission/removenode/cleanup a superuser). Any refusal prints
the node's own reason on one line and exits 1.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import click

from tabletdb.cli import nodetool_format as fmt
from tabletdb.spark.backup_rest import Credentials, basic_auth_headers

DEFAULT_API_PORT = 10000
READ_TIMEOUT = 30.0
OPERATION_TIMEOUT = 24 * 3600.0
"""decommission and removenode answer when the data has moved, which may take hours."""


class RestClient:
    """GET/POST against one node's REST API, JSON answers, errors as one-line ClickExceptions."""

    def __init__(self, host: str, port: int, credentials: Credentials | None) -> None:
        self.host = host
        self.port = port
        self.credentials = credentials

    def get(self, path: str, **query: str | None) -> Any:
        return self._call("GET", path, query, READ_TIMEOUT)

    def post(self, path: str, timeout: float = OPERATION_TIMEOUT, **query: str | None) -> Any:
        return self._call("POST", path, query, timeout)

    def delete(self, path: str, timeout: float = OPERATION_TIMEOUT, **query: str | None) -> Any:
        return self._call("DELETE", path, query, timeout)

    def _call(self, method: str, path: str, query: dict[str, str | None], timeout: float) -> Any:
        given = {k: v for k, v in query.items() if v is not None}
        url = f"http://{self.host}:{self.port}{urllib.parse.quote(path)}"
        if given:
            url += "?" + urllib.parse.urlencode(given)
        request = urllib.request.Request(
            url,
            method=method,
            data=b"" if method == "POST" else None,
            headers=basic_auth_headers(self.credentials),
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace").strip() or exc.reason
            raise click.ClickException(
                f"{method} {path} on {self.host}:{self.port} failed ({exc.code}): {detail}"
            ) from None
        except (OSError, urllib.error.URLError) as exc:
            raise click.ClickException(
                f"cannot reach the REST API at {self.host}:{self.port}: {exc}"
            ) from None
        return json.loads(body) if body else None


@click.group("nodetool", context_settings={"help_option_names": ["--help"]})
@click.option("-h", "--host", default="127.0.0.1", show_default=True, help="The node's REST API address.")
@click.option("-p", "--port", "api_port", type=int, default=DEFAULT_API_PORT, show_default=True)
@click.option("-u", "--username", help="Role to authenticate as (HTTP basic auth).")
@click.option("-pw", "--password", help="The role's password.")
@click.pass_context
def nodetool_group(
    ctx: click.Context, host: str, api_port: int, username: str | None, password: str | None
) -> None:
    """ScyllaDB's nodetool, over one node's REST API."""
    if password is not None and username is None:
        raise click.UsageError("-pw/--password needs -u/--username")
    ctx.obj = RestClient(host, api_port, (username, password or "") if username else None)


def _client(ctx: click.Context) -> RestClient:
    client = ctx.find_object(RestClient)
    assert client is not None, "nodetool's group sets its client before any command runs"
    return client


def _uses_tablets(client: RestClient, keyspace: str) -> bool:
    return keyspace in client.get("/storage_service/keyspaces", type="user", replication="tablets")


def gather(client: RestClient, keyspace: str | None, table: str | None) -> fmt.Cluster:
    """Everything status and ring show, from the node's REST answers."""
    host_ids = fmt.pairs(client.get("/storage_service/host_id"))
    tokens: dict[str, list[int]] = {}
    for token, address in fmt.pairs(client.get("/storage_service/tokens_endpoint")).items():
        tokens.setdefault(address, []).append(int(token))
    owns: dict[str, float] | None
    tablets = None
    if keyspace is None:
        owns = fmt.pairs(client.get("/storage_service/ownership/"))
    else:
        owns = fmt.pairs(client.get(f"/storage_service/ownership/{keyspace}", cf=table))
        if table is not None and _uses_tablets(client, keyspace):
            ranges = client.get(f"/storage_service/describe_ring/{keyspace}", table=table)
            tablets = fmt.tablets_per_node(ranges)
    return fmt.Cluster(
        host_ids=host_ids,
        datacenters={a: client.get("/snitch/datacenter", host=a) for a in host_ids},
        racks={a: client.get("/snitch/rack", host=a) for a in host_ids},
        tokens=tokens,
        loads={a: float(v) for a, v in fmt.pairs(client.get("/storage_service/load_map")).items()},
        live=frozenset(client.get("/gossiper/endpoint/live")),
        joining=frozenset(client.get("/storage_service/nodes/joining")),
        leaving=frozenset(client.get("/storage_service/nodes/leaving")),
        moving=frozenset(client.get("/storage_service/nodes/moving")),
        owns=owns,
        effective=keyspace is not None,
        tablets=tablets,
    )


def _echo(lines: list[str]) -> None:
    click.echo("\n".join(lines))


@nodetool_group.command("status")
@click.argument("keyspace", required=False)
@click.argument("table", required=False)
@click.pass_context
def status(ctx: click.Context, keyspace: str | None, table: str | None) -> None:
    """Every node: up/down, state, address, load, tokens (tablets of TABLE), ownership, host id, rack.

    Ownership is effective (counting every replica) when KEYSPACE is given; a tablets keyspace
    needs TABLE too, whose tablets then replace the token count.
    """
    _echo(fmt.status_lines(gather(_client(ctx), keyspace, table)))


@nodetool_group.command("ring")
@click.argument("keyspace", required=False)
@click.argument("table", required=False)
@click.pass_context
def ring(ctx: click.Context, keyspace: str | None, table: str | None) -> None:
    """Every token of every node, in token order."""
    _echo(fmt.ring_lines(gather(_client(ctx), keyspace, table)))


@nodetool_group.command("info")
@click.option("-T", "--tokens", "show_tokens", is_flag=True, help="List every token of the node.")
@click.pass_context
def info(ctx: click.Context, show_tokens: bool) -> None:
    """This node: host id, whether it serves CQL, load, uptime, datacenter, rack, tokens."""
    client = _client(ctx)
    host_id = client.get("/storage_service/hostid/local")
    address = {v: k for k, v in fmt.pairs(client.get("/storage_service/host_id")).items()}.get(host_id)
    answers = {
        "host_id": host_id,
        "gossiping": client.get("/storage_service/gossiping"),
        "native_transport": client.get("/storage_service/native_transport"),
        "load": client.get("/storage_service/load"),
        "generation_number": client.get("/storage_service/generation_number"),
        "uptime_ms": client.get("/system/uptime_ms"),
        "datacenter": client.get("/snitch/datacenter"),
        "rack": client.get("/snitch/rack"),
        "tokens": client.get(f"/storage_service/tokens/{address}") if address else [],
    }
    _echo(fmt.info_lines(answers, show_tokens))


@nodetool_group.command("describering")
@click.argument("keyspace")
@click.argument("table", required=False)
@click.pass_context
def describering(ctx: click.Context, keyspace: str, table: str | None) -> None:
    """Every token range of KEYSPACE (of TABLE, for a tablets keyspace) with its replicas."""
    client = _client(ctx)
    ranges = client.get(f"/storage_service/describe_ring/{keyspace}", table=table)
    _echo(fmt.describering_lines(client.get("/storage_service/schema_version"), ranges))


@nodetool_group.command("getendpoints")
@click.argument("keyspace")
@click.argument("table")
@click.argument("key")
@click.pass_context
def getendpoints(ctx: click.Context, keyspace: str, table: str, key: str) -> None:
    """The replicas of partition KEY (a composite key's components joined by ':')."""
    client = _client(ctx)
    for address in client.get(f"/storage_service/natural_endpoints/{keyspace}", cf=table, key=key):
        click.echo(address)


@nodetool_group.command("decommission")
@click.pass_context
def decommission(ctx: click.Context) -> None:
    """Move every replica of this node to the others, then remove it from the cluster."""
    _client(ctx).post("/storage_service/decommission")


@nodetool_group.command("removenode")
@click.argument("host_id")
@click.option(
    "--ignore-dead-nodes", default=None, help="Comma-separated host ids of other dead nodes to ignore."
)
@click.pass_context
def removenode(ctx: click.Context, host_id: str, ignore_dead_nodes: str | None) -> None:
    """Remove the dead node HOST_ID, rebuilding its replicas from the surviving ones."""
    _client(ctx).post("/storage_service/remove_node", host_id=host_id, ignore_nodes=ignore_dead_nodes)


@nodetool_group.command("cleanup")
@click.argument("keyspace", required=False)
@click.pass_context
def cleanup(ctx: click.Context, keyspace: str | None) -> None:
    """Drop data this node no longer owns, in KEYSPACE or every non-local keyspace."""
    client = _client(ctx)
    keyspaces = (
        [keyspace] if keyspace else client.get("/storage_service/keyspaces", type="non_local_strategy")
    )
    for name in keyspaces:
        client.post(f"/storage_service/keyspace_cleanup/{name}")


# ScyllaDB's nodetool has no tablet commands (its operators call these REST paths directly); the
# names below follow nodetool's enable*/disable*/status* pattern.


@nodetool_group.command("enablebalancing")
@click.pass_context
def enablebalancing(ctx: click.Context) -> None:
    """Let the topology coordinator move tablets to even out load (the cluster-wide flag)."""
    _client(ctx).post("/storage_service/tablets/balancing", READ_TIMEOUT, enabled="true")


@nodetool_group.command("disablebalancing")
@click.pass_context
def disablebalancing(ctx: click.Context) -> None:
    """Stop starting balancer rounds (a round in progress finishes; requests still move tablets)."""
    _client(ctx).post("/storage_service/tablets/balancing", READ_TIMEOUT, enabled="false")


@nodetool_group.command("statusbalancing")
@click.pass_context
def statusbalancing(ctx: click.Context) -> None:
    """Whether tablet load balancing is on: running or not running."""
    enabled = _client(ctx).get("/storage_service/tablets/balancing")["enabled"]
    click.echo("running" if enabled else "not running")


@nodetool_group.command("movetablet")
@click.argument("keyspace")
@click.argument("table")
@click.argument("token", type=int)
@click.argument("src_host")
@click.argument("src_shard", type=int)
@click.argument("dst_host")
@click.argument("dst_shard", type=int)
@click.pass_context
def movetablet(
    ctx: click.Context,
    keyspace: str,
    table: str,
    token: int,
    src_host: str,
    src_shard: int,
    dst_host: str,
    dst_shard: int,
) -> None:
    """Move the replica on SRC_HOST/SRC_SHARD of the tablet owning TOKEN to DST_HOST/DST_SHARD
    (another node, or another shard of the same node); answers once it moved."""
    _client(ctx).post(
        "/storage_service/tablets/move",
        ks=keyspace,
        table=table,
        token=str(token),
        src_host=src_host,
        src_shard=str(src_shard),
        dst_host=dst_host,
        dst_shard=str(dst_shard),
    )


def _keyspace_request(
    client: RestClient,
    paths: tuple[str, str],
    keyspace: str | None,
    tables: tuple[str, ...],
    **query: str | None,
) -> None:
    """ScyllaDB nodetool's shape of compact and flush: everything in one call without a keyspace,
    else a check that the keyspace exists, then one call naming it (and its tables, as ``cf``)."""
    if keyspace is None:
        client.post(paths[0], OPERATION_TIMEOUT, **query)
        return
    if keyspace not in client.get("/storage_service/keyspaces"):
        raise click.ClickException(f"keyspace {keyspace} does not exist")
    client.post(f"{paths[1]}/{keyspace}", OPERATION_TIMEOUT, cf=",".join(tables) or None, **query)


@nodetool_group.command("compact")
@click.argument("keyspace", required=False)
@click.argument("tables", nargs=-1)
@click.option(
    "--flush-memtables",
    type=click.Choice(["true", "false"]),
    default=None,
    help="Write deferred rows first (always done; 'false' is refused by the node).",
)
@click.pass_context
def compact(
    ctx: click.Context, keyspace: str | None, tables: tuple[str, ...], flush_memtables: str | None
) -> None:
    """Compact this node's files of every keyspace, of KEYSPACE, or of its TABLES: drop data
    that tombstones shadow and the tombstones past each table's tombstone_gc horizon."""
    paths = ("/storage_service/compact", "/storage_service/keyspace_compaction")
    _keyspace_request(_client(ctx), paths, keyspace, tables, flush_memtables=flush_memtables)


@nodetool_group.command("flush")
@click.argument("keyspace", required=False)
@click.argument("tables", nargs=-1)
@click.pass_context
def flush(ctx: click.Context, keyspace: str | None, tables: tuple[str, ...]) -> None:
    """Write this node's deferred rows of every keyspace, of KEYSPACE or of its TABLES into
    their files, sync them and fold their write-ahead logs in."""
    paths = ("/storage_service/flush", "/storage_service/keyspace_flush")
    _keyspace_request(_client(ctx), paths, keyspace, tables)


@nodetool_group.command("enablebinary")
@click.pass_context
def enablebinary(ctx: click.Context) -> None:
    """Start this node's CQL listeners again."""
    _client(ctx).post("/storage_service/native_transport")


@nodetool_group.command("disablebinary")
@click.pass_context
def disablebinary(ctx: click.Context) -> None:
    """Stop this node's CQL listeners; connected clients are closed once their requests finish."""
    _client(ctx).delete("/storage_service/native_transport")


@nodetool_group.command("statusbinary")
@click.pass_context
def statusbinary(ctx: click.Context) -> None:
    """Whether this node's CQL listeners accept connections: running or not running."""
    click.echo("running" if _client(ctx).get("/storage_service/native_transport") else "not running")


def _auto_compaction(ctx: click.Context, keyspace: str | None, tables: tuple[str, ...], enable: bool) -> None:
    """ScyllaDB nodetool's shape: one call per keyspace (every keyspace when none is given)."""
    client = _client(ctx)
    keyspaces = [keyspace] if keyspace is not None else list(client.get("/storage_service/keyspaces"))
    call = client.post if enable else client.delete
    for name in keyspaces:
        call(f"/storage_service/auto_compaction/{name}", cf=",".join(tables) or None)


@nodetool_group.command("enableautocompaction")
@click.argument("keyspace", required=False)
@click.argument("tables", nargs=-1)
@click.pass_context
def enableautocompaction(ctx: click.Context, keyspace: str | None, tables: tuple[str, ...]) -> None:
    """Let the background loop compact this node's files of every keyspace, KEYSPACE or its TABLES."""
    _auto_compaction(ctx, keyspace, tables, True)


@nodetool_group.command("disableautocompaction")
@click.argument("keyspace", required=False)
@click.argument("tables", nargs=-1)
@click.pass_context
def disableautocompaction(ctx: click.Context, keyspace: str | None, tables: tuple[str, ...]) -> None:
    """Stop the background loop compacting this node's files of every keyspace, KEYSPACE or its
    TABLES (manual compactions still run; a restart turns it back on)."""
    _auto_compaction(ctx, keyspace, tables, False)
