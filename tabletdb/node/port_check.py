"""Every port a node will listen on must be free before it asks to join.

A node binds its ports one by one as it starts: the internode port, then (after it joined
group0 as a voter) CQL, then the REST API. A clash found at the second bind used to leave the
cluster with a member that never served, a dead voter nothing could remove. So the node tries
each port it needs first (bind and release, with the SO_REUSEADDR its servers use, so a port
only in TIME_WAIT passes as it would for them) and refuses to start, naming every busy one, before it
contacts anybody. Another process can still take a port between this check and the real bind;
the check is for the common mistakes (a second node on the same address, a leftover process).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from tabletdb.node.config import NodeConfig


@dataclass(frozen=True)
class Listener:
    what: str
    """Which server and the setting that names its port, e.g. ``CQL (native_transport_port)``."""
    address: str
    port: int


class PortsBusy(Exception):
    """Ports this node needs are taken; the message names each and the setting that moves it."""


def listeners(config: NodeConfig) -> list[Listener]:
    """The sockets this node will listen on, from its configuration."""
    rpc = config.rpc_address or config.listen_address
    out = [Listener("CQL (native_transport_port)", rpc, config.native_transport_port)]
    if config.native_shard_aware_transport_port is not None:
        out.append(
            Listener(
                "shard-aware CQL (native_shard_aware_transport_port)",
                rpc,
                config.native_shard_aware_transport_port,
            )
        )
    ssl_port = config.native_transport_port_ssl
    if (
        config.client_encryption_options.enabled
        and ssl_port is not None
        and ssl_port != config.native_transport_port
    ):
        out.append(Listener("CQL over TLS (native_transport_port_ssl)", rpc, ssl_port))
    if not config.maintenance_mode:
        mode = config.server_encryption_options.internode_encryption
        if mode != "all":
            out.append(Listener("internode (storage_port)", config.listen_address, config.storage_port))
        if mode != "none":
            out.append(
                Listener("internode TLS (ssl_storage_port)", config.listen_address, config.ssl_storage_port)
            )
    out.append(Listener("REST API (api_port)", config.api_address or config.listen_address, config.api_port))
    if config.prometheus_port:
        out.append(
            Listener("Prometheus (prometheus_port)", config.prometheus_address, config.prometheus_port)
        )
    return [listener for listener in out if listener.port != 0]  # 0: any free port, never busy


def bind_error(listener: Listener) -> OSError | None:
    """Why ``listener`` could not be bound now (None: it can)."""
    try:
        family = socket.AF_INET6 if ":" in listener.address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((listener.address, listener.port))
    except OSError as exc:
        return exc
    return None


def check_ports(config: NodeConfig) -> None:
    """Raise PortsBusy naming every listener that cannot be bound."""
    problems = []
    for listener in listeners(config):
        error = bind_error(listener)
        if error is not None:
            reason = error.strerror or str(error)
            problems.append(f"{listener.what} {listener.address}:{listener.port}: {reason}")
    if problems:
        raise PortsBusy(
            "cannot listen on "
            + "; ".join(problems)
            + " (another process holds it: stop it, or set another port)"
        )
