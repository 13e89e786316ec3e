"""What the query layer knows about this node and its peers (rendered into system.local/peers).

The node layer fills these from configuration and, in a cluster, from group0's topology; the
query layer only reads them. Values are what ScyllaDB reports so drivers take their Scylla code
paths (spec/clients.md 3.1): release_version 3.0.8, cql_version 3.3.1, protocol 4.
"""

from __future__ import annotations

import ipaddress
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tabletdb.systables.topology import ClusterTopology

RELEASE_VERSION = "3.0.8"
CQL_VERSION = "3.3.1"
NATIVE_PROTOCOL_VERSION = "4"
PARTITIONER = "org.apache.cassandra.dht.Murmur3Partitioner"
SNITCH = "org.apache.cassandra.locator.GossipingPropertyFileSnitch"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class PeerInfo:
    """Another member of the cluster, as system.peers shows it."""

    address: Address
    host_id: uuid.UUID
    data_center: str
    rack: str
    rpc_address: Address
    tokens: tuple[int, ...]
    schema_version: uuid.UUID | None
    supported_features: str = ""
    release_version: str = RELEASE_VERSION


@dataclass(frozen=True)
class RaftMember:
    server_id: uuid.UUID
    can_vote: bool


@dataclass(frozen=True)
class RaftInfo:
    """This node's view of group0's Raft (system.raft_state); server ids are host ids."""

    group_id: uuid.UUID
    server_id: uuid.UUID
    role: str
    term: int
    commit_index: int
    leader: uuid.UUID | None
    members: tuple[RaftMember, ...]


@dataclass(frozen=True)
class NodeInfo:
    host_id: uuid.UUID
    cluster_name: str
    data_center: str
    rack: str
    listen_address: Address
    rpc_address: Address
    broadcast_address: Address
    native_port: int
    tokens: tuple[int, ...]
    smp: int
    ignore_msb: int
    product_version: str
    supported_features: tuple[str, ...] = ()
    peers: tuple[PeerInfo, ...] = field(default=())
    bootstrapped: str = "COMPLETED"
    raft: RaftInfo | None = None
    topology: ClusterTopology | None = None
    """group0's topology (system.topology); None without group0."""
