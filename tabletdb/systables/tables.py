"""The `system` keyspace's virtual tables: system.local, peers, versions, scylla_local, clients.

Like system_schema (rendered by `tabletdb.schema.system_schema`), these tables store nothing:
each SELECT renders rows from the node's state (DESIGN.md decision 2). There is deliberately no
`system.peers_v2` — ScyllaDB has none, and drivers fall back to `system.peers` when the query
fails with "unconfigured table peers_v2" (spec/clients.md 3.3).
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tabletdb.auth import system_tables as auth_tables
from tabletdb.auth.model import AuthState
from tabletdb.cdc.generation import Generations
from tabletdb.cdc.tablet_streams import StreamSets
from tabletdb.cql.types import (
    BIGINT,
    BLOB,
    BOOLEAN,
    INET,
    INT,
    TEXT,
    UUID,
    MapType,
    SetType,
)
from tabletdb.group0.view_builds import ViewBuilds
from tabletdb.qos.model import QosState
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import (
    LOCAL,
    Catalog,
    KeyspaceDef,
    KeyspaceSchema,
    Replication,
    TableDef,
)
from tabletdb.systables.cdc import (
    CDC_LOCAL_TABLE,
    CDC_STREAMS_TABLE,
    CDC_TIMESTAMPS_TABLE,
    cdc_local_rows,
    cdc_streams_rows,
    cdc_timestamps_rows,
)
from tabletdb.systables.definitions import system_table
from tabletdb.systables.local_tables import LOCAL_RENDERERS, LocalNode
from tabletdb.systables.node_info import (
    CQL_VERSION,
    NATIVE_PROTOCOL_VERSION,
    PARTITIONER,
    RELEASE_VERSION,
    NodeInfo,
)
from tabletdb.systables.tablets import TABLETS_TABLE, tablets_rows
from tabletdb.systables.token_ring import TOKEN_RING_TABLE, token_ring_rows
from tabletdb.systables.topology import (
    TOPOLOGY_REQUESTS_TABLE,
    TOPOLOGY_TABLE,
    topology_requests_rows,
    topology_rows,
)
from tabletdb.systables.view_builds import (
    BUILT_VIEWS_TABLE,
    INDEX_INFO_TABLE,
    VIEWS_BUILDS_IN_PROGRESS_TABLE,
    builds_in_progress_rows,
    built_views_rows,
    index_info_rows,
)
from tabletdb.tablets.tablet_map import TabletMap

SYSTEM = "system"
Row = dict[str, Any]


class ClientInfo(Protocol):
    """A client connection as `system.clients` shows it: the server's connection state
    (`protocol.handler.ClientState`) is one. Named here, as what this table reads, so that the
    system tables do not depend on the wire protocol."""

    @property
    def peer(self) -> tuple[str, int]: ...
    @property
    def startup_options(self) -> Mapping[str, str]: ...
    @property
    def ready(self) -> bool: ...
    @property
    def driver_name(self) -> str | None: ...
    @property
    def driver_version(self) -> str | None: ...
    @property
    def protocol_version(self) -> int: ...
    @property
    def shard(self) -> int: ...
    @property
    def ssl_protocol(self) -> str | None: ...
    @property
    def ssl_cipher_suite(self) -> str | None: ...
    @property
    def user(self) -> str | None: ...


@dataclass(frozen=True)
class SystemState:
    """Everything system tables are rendered from, captured once per request."""

    node: NodeInfo
    catalog: Catalog
    clients: tuple[ClientInfo, ...]
    group0_id: str | None = None
    auth: AuthState = field(default_factory=AuthState)
    qos: QosState = field(default_factory=QosState)
    tablets: Mapping[uuid.UUID, TabletMap] = field(default_factory=dict)
    cdc_generations: Generations = ()
    cdc_stream_sets: StreamSets = ()
    now_micros: int = 0
    """When the state was captured (the CDC tables show what operates and what expired by then)."""
    view_builds: Mapping[tuple[str, str], int | None] = field(default_factory=dict)
    """The fills of views and indexes this node runs now (`views.build_progress`)."""
    view_build_status: ViewBuilds = ()
    """Build statuses recorded in group0 (`group0.view_builds`)."""
    local: LocalNode | None = None
    """This process's settings, listeners and files (`systables.local_tables`); None in tools
    and tests that build a processor without a node."""


_TEXT_SET = SetType(TEXT)
_FROZEN_TEXT_MAP = MapType(TEXT, TEXT, frozen=True)

LOCAL_TABLE = system_table(
    "local",
    ["key"],
    [],
    {
        "key": TEXT,
        "bootstrapped": TEXT,
        "broadcast_address": INET,
        "cluster_name": TEXT,
        "cql_version": TEXT,
        "data_center": TEXT,
        "gossip_generation": INT,
        "host_id": UUID,
        "listen_address": INET,
        "native_protocol_version": TEXT,
        "partitioner": TEXT,
        "rack": TEXT,
        "release_version": TEXT,
        "rpc_address": INET,
        "schema_version": UUID,
        "supported_features": TEXT,
        "tokens": _TEXT_SET,
        "truncated_at": MapType(UUID, BLOB),
    },
    "information about the local node",
)

PEERS_TABLE = system_table(
    "peers",
    ["peer"],
    [],
    {
        "peer": INET,
        "data_center": TEXT,
        "host_id": UUID,
        "preferred_ip": INET,
        "rack": TEXT,
        "release_version": TEXT,
        "rpc_address": INET,
        "schema_version": UUID,
        "supported_features": TEXT,
        "tokens": _TEXT_SET,
    },
    "information about known peers in the cluster",
)

VERSIONS_TABLE = system_table(
    "versions",
    ["key"],
    [],
    {"key": TEXT, "build_id": TEXT, "build_mode": TEXT, "version": TEXT},
    "Version information",
)

SCYLLA_LOCAL_TABLE = system_table(
    "scylla_local",
    ["key"],
    [],
    {"key": TEXT, "value": TEXT},
    "Scylla specific information about the local node",
)

CLIENTS_TABLE = system_table(
    "clients",
    ["address"],
    ["port", "client_type"],
    {
        "address": INET,
        "port": INT,
        "client_type": TEXT,
        "client_options": _FROZEN_TEXT_MAP,
        "connection_stage": TEXT,
        "driver_name": TEXT,
        "driver_version": TEXT,
        "hostname": TEXT,
        "protocol_version": INT,
        "shard_id": INT,
        "ssl_cipher_suite": TEXT,
        "ssl_enabled": BOOLEAN,
        "ssl_protocol": TEXT,
        "username": TEXT,
    },
    "list of connected clients",
)


def _tokens(tokens: Iterable[int]) -> tuple[str, ...]:
    return tuple(sorted(str(t) for t in tokens))


def _local_rows(state: SystemState) -> list[Row]:
    node = state.node
    return [
        {
            "key": "local",
            "bootstrapped": node.bootstrapped,
            "broadcast_address": node.broadcast_address,
            "cluster_name": node.cluster_name,
            "cql_version": CQL_VERSION,
            "data_center": node.data_center,
            "gossip_generation": None,
            "host_id": node.host_id,
            "listen_address": node.listen_address,
            "native_protocol_version": NATIVE_PROTOCOL_VERSION,
            "partitioner": PARTITIONER,
            "rack": node.rack,
            "release_version": RELEASE_VERSION,
            "rpc_address": node.rpc_address,
            "schema_version": state.catalog.version,
            "supported_features": ",".join(node.supported_features),
            "tokens": _tokens(node.tokens),
            "truncated_at": None,
        }
    ]


def _peer_rows(state: SystemState) -> list[Row]:
    peers = sorted(state.node.peers, key=lambda p: p.address.packed)
    return [
        {
            "peer": p.address,
            "data_center": p.data_center,
            "host_id": p.host_id,
            "preferred_ip": None,
            "rack": p.rack,
            "release_version": p.release_version,
            "rpc_address": p.rpc_address,
            "schema_version": p.schema_version,
            "supported_features": p.supported_features,
            "tokens": _tokens(p.tokens),
        }
        for p in peers
    ]


def _versions_rows(state: SystemState) -> list[Row]:
    return [{"key": "local", "build_id": "", "build_mode": "release", "version": state.node.product_version}]


def _scylla_local_rows(state: SystemState) -> list[Row]:
    values = {
        "enabled_features": ",".join(state.node.supported_features),
        "raft_group0_id": state.group0_id,
    }
    return [{"key": k, "value": v} for k, v in sorted(values.items()) if v is not None]


def _clients_rows(state: SystemState) -> list[Row]:
    rows = []
    for c in sorted(state.clients, key=lambda c: (ipaddress.ip_address(c.peer[0]).packed, c.peer[1])):
        rows.append(
            {
                "address": ipaddress.ip_address(c.peer[0]),
                "port": c.peer[1],
                "client_type": "cql",
                "client_options": tuple(sorted(c.startup_options.items())),
                "connection_stage": "READY" if c.ready else "ESTABLISHED",
                "driver_name": c.driver_name,
                "driver_version": c.driver_version,
                "hostname": None,
                "protocol_version": c.protocol_version,
                "shard_id": c.shard,
                "ssl_cipher_suite": c.ssl_cipher_suite,
                "ssl_enabled": c.ssl_protocol is not None,
                "ssl_protocol": c.ssl_protocol,
                "username": c.user or "anonymous",
            }
        )
    return rows


RAFT_STATE_TABLE = system_table(
    "raft_state",
    ["group_id"],
    ["disposition", "server_id"],
    {
        "group_id": UUID,
        "disposition": TEXT,
        "server_id": UUID,
        "can_vote": BOOLEAN,
        "is_leader": BOOLEAN,
        "is_local": BOOLEAN,
        "local_role": TEXT,
        "term": BIGINT,
        "commit_index": BIGINT,
    },
    "group0 Raft membership (Scylla's columns) and this node's role, term and commit index",
)


def _raft_state_rows(state: SystemState) -> list[Row]:
    raft = state.node.raft
    if raft is None:
        return []
    return [
        {
            "group_id": raft.group_id,
            "disposition": "CURRENT",
            "server_id": m.server_id,
            "can_vote": m.can_vote,
            "is_leader": m.server_id == raft.leader,
            "is_local": m.server_id == raft.server_id,
            "local_role": raft.role,
            "term": raft.term,
            "commit_index": raft.commit_index,
        }
        for m in sorted(raft.members, key=lambda m: m.server_id.bytes)
    ]


RENDERERS: dict[str, tuple[TableDef, Callable[[SystemState], list[Row]]]] = {
    "local": (LOCAL_TABLE, _local_rows),
    "peers": (PEERS_TABLE, _peer_rows),
    "versions": (VERSIONS_TABLE, _versions_rows),
    "scylla_local": (SCYLLA_LOCAL_TABLE, _scylla_local_rows),
    "clients": (CLIENTS_TABLE, _clients_rows),
    "tablets": (TABLETS_TABLE, lambda state: tablets_rows(state.catalog, state.tablets)),
    "raft_state": (RAFT_STATE_TABLE, _raft_state_rows),
    "topology": (
        TOPOLOGY_TABLE,
        lambda state: topology_rows(state.node.topology, state.node.ignore_msb, RELEASE_VERSION),
    ),
    "topology_requests": (TOPOLOGY_REQUESTS_TABLE, lambda state: topology_requests_rows(state.node.topology)),
    "cdc_local": (CDC_LOCAL_TABLE, lambda state: cdc_local_rows(state.cdc_generations, state.now_micros)),
    "cdc_timestamps": (
        CDC_TIMESTAMPS_TABLE,
        lambda state: cdc_timestamps_rows(state.catalog, state.cdc_stream_sets),
    ),
    "cdc_streams": (CDC_STREAMS_TABLE, lambda state: cdc_streams_rows(state.catalog, state.cdc_stream_sets)),
    "token_ring": (
        TOKEN_RING_TABLE,
        lambda state: token_ring_rows(state.catalog, state.tablets, state.node.topology),
    ),
    "built_views": (
        BUILT_VIEWS_TABLE,
        lambda state: built_views_rows(state.catalog, state.view_build_status, state.view_builds),
    ),
    "views_builds_in_progress": (
        VIEWS_BUILDS_IN_PROGRESS_TABLE,
        lambda state: builds_in_progress_rows(state.catalog, state.view_build_status, state.view_builds),
    ),
    "IndexInfo": (
        INDEX_INFO_TABLE,
        lambda state: index_info_rows(state.catalog, state.view_build_status, state.view_builds),
    ),
}


def _auth_renderer(name: str) -> Callable[[SystemState], list[Row]]:
    def render(state: SystemState) -> list[Row]:
        return auth_tables.render(name, state.auth, state.qos) or []

    return render


RENDERERS.update({t.name: (t, _auth_renderer(t.name)) for t in auth_tables.AUTH_TABLES})


def system_keyspace() -> KeyspaceSchema:
    """The `system` keyspace as drivers see it in system_schema (LocalStrategy)."""
    definition = KeyspaceDef(SYSTEM, Replication(LOCAL), durable_writes=True)
    tables = {name: t for name, (t, _) in RENDERERS.items()}
    tables.update({name: t for name, (t, _) in LOCAL_RENDERERS.items()})
    return KeyspaceSchema(definition, tables=FrozenMap(tables))


AUTH_KEYSPACE = "system_auth"


AUTH_RENDERERS: dict[str, tuple[TableDef, Callable[[SystemState], list[Row]]]] = {
    t.name: (t, _auth_renderer(t.name)) for t in auth_tables.LEGACY_TABLES
}
"""`system_auth`'s read-only views of the auth state (`auth.system_tables.LEGACY_TABLES`)."""


def system_auth_keyspace() -> KeyspaceSchema:
    """`system_auth`: roles live in `system` (ScyllaDB's group0-managed auth), but the keyspace
    is still listed (cqlsh looks it up to print LIST ROLES/PERMISSIONS results) and holds the
    legacy layout's tables for tools that read them."""
    tables = FrozenMap({name: t for name, (t, _) in AUTH_RENDERERS.items()})
    return KeyspaceSchema(KeyspaceDef(AUTH_KEYSPACE, Replication(LOCAL), durable_writes=True), tables=tables)
