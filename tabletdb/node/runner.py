"""One tabletdb server process: wiring and lifecycle.

Start-up order matters for kill -9 safety: the node identity (host id, tokens) and the metadata
log are durable before the CQL port opens, so a client never sees a node that could forget
what it acknowledged. Shutdown on SIGTERM/SIGINT stops accepting, lets in-flight requests
finish, then syncs and closes the metadata log.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import time
from importlib import metadata as importlib_metadata

from tabletdb.cql.parser import parse_statement
from tabletdb.node.config import NodeConfig
from tabletdb.node.identity import NodeIdentity, load_or_create_identity
from tabletdb.node.metadata_local import LocalMetadataStore
from tabletdb.protocol.responses import SchemaChangeEvent as SchemaChangeEventFrame
from tabletdb.protocol.server import CqlServer
from tabletdb.query.node_info import NodeInfo
from tabletdb.query.processor import QueryProcessor
from tabletdb.schema.ddl_common import SchemaChangeEvent, SchemaConfig

log = logging.getLogger(__name__)

SUPPORTED_FEATURES: tuple[str, ...] = ()
"""Cluster features this build supports (advertised in system.local; group0 enables them)."""


def product_version() -> str:
    try:
        return importlib_metadata.version("tabletdb")
    except importlib_metadata.PackageNotFoundError:
        return "0.0.0"


class Node:
    """The running parts of one node, built from its configuration."""

    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        workdir = config.workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.identity: NodeIdentity = load_or_create_identity(workdir, config.num_tokens)
        # Build the CQL parser now, not on the first query: drivers give their first system
        # queries only a couple of seconds, and an uncached LALR build takes longer than that.
        parse_statement("SELECT key FROM system.local")
        self.metadata = LocalMetadataStore(workdir / "raft" / "group0")
        self.info = self._node_info()
        max_frame = config.native_transport_max_frame_size_in_mb * 1024 * 1024
        self.processor = QueryProcessor(
            lambda: self.info,
            self.metadata,
            SchemaConfig(
                tablets_mode_for_new_keyspaces=config.tablets_mode_for_new_keyspaces,
                datacenters=(config.dc,),
                enforce_rack_list=config.enforce_rack_list,
            ),
            lambda: self.server.clients,
            shard_aware_port=config.native_shard_aware_transport_port,
        )
        self.server = CqlServer(
            self.processor,
            self._rpc_address(),
            config.native_transport_port,
            shard_aware_port=config.native_shard_aware_transport_port,
            nr_shards=config.smp,
            max_frame_size=max_frame,
        )
        self.metadata.add_listener(self._announce_schema_changes)

    def _rpc_address(self) -> str:
        return self.config.rpc_address or self.config.listen_address

    def _node_info(self) -> NodeInfo:
        c = self.config
        listen = ipaddress.ip_address(c.listen_address)
        rpc = ipaddress.ip_address(self._rpc_address())
        broadcast = ipaddress.ip_address(c.broadcast_address or c.listen_address)
        return NodeInfo(
            host_id=self.identity.host_id,
            cluster_name=c.cluster_name,
            data_center=c.dc,
            rack=c.rack,
            listen_address=listen,
            rpc_address=rpc,
            broadcast_address=broadcast,
            native_port=c.native_transport_port,
            tokens=self.identity.tokens,
            smp=c.smp,
            ignore_msb=c.murmur3_partitioner_ignore_msb_bits,
            product_version=product_version(),
            supported_features=SUPPORTED_FEATURES,
        )

    def _announce_schema_changes(self, events: tuple[SchemaChangeEvent, ...]) -> None:
        for e in events:
            arg_types = list(e.arg_types) if e.target.value in ("FUNCTION", "AGGREGATE") else None
            frame = SchemaChangeEventFrame(
                e.change.value, e.target.value, e.keyspace, e.name or None, arg_types
            )
            self.server.broadcast(frame)

    async def run(self, stop: asyncio.Event) -> None:
        started = time.monotonic()
        await self.server.start()
        log.warning(
            "node serving CQL address=%s port=%d host_id=%s startup_ms=%.0f",
            self._rpc_address(),
            self.server.port,
            self.identity.host_id,
            (time.monotonic() - started) * 1000,
        )
        _print_how_to_connect(self._rpc_address(), self.server.port)
        try:
            await stop.wait()
        finally:
            await self.server.stop()
            self.metadata.close()
            log.warning("node stopped")


def _print_how_to_connect(address: str, port: int) -> None:
    """One human-readable line on stdout (logs go to stderr): what `make run` shows."""
    print(
        f"tabletdb is serving CQL on {address}:{port} — connect with `.venv/bin/cqlsh {address} {port}` "
        f"or `Cluster(['{address}'], port={port})`; Ctrl-C stops it.",
        flush=True,
    )


def run_server(config: NodeConfig) -> int:
    """Run one node until SIGTERM/SIGINT; the process exit code."""
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        pass
    return asyncio.run(_main(config))


async def _main(config: NodeConfig) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    node = Node(config)
    await node.run(stop)
    return 0
