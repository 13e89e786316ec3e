"""What the ring looks like to an operator, computed from group0's state alone (pure).

The REST routes nodetool reads (`node.admin.rest_ring`) answer from these functions: every
node holds the same group0 state, so any node answers the same for the whole cluster. Token
ranges are ScyllaDB's ``(start, end]``; fractions are of the whole ring (2^64 tokens).

* token ownership (no keyspace): each node's primary ranges, the ones ending at its tokens;
* effective ownership (a keyspace, and for a tablets keyspace a table): the share of the ring
  of which the node holds a replica, so RF=3 on three nodes is 1.0 each;
* describe_ring: every vnode range (or tablet) with its replicas, for a keyspace or a table;
* natural_endpoints: the replicas of one partition key given as text, as ``getendpoints``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from tabletdb.coordinator.placement import vnode_replica_table
from tabletdb.cql.codec import serialize
from tabletdb.cql.errors import CqlError
from tabletdb.cql.jsonvalues import from_json
from tabletdb.cql.types import NativeType
from tabletdb.dht.murmur3 import partition_key_bytes, token_of
from tabletdb.dht.token import TokenRange
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.schema.model import KeyspaceSchema
from tabletdb.schema.tables import TableDef
from tabletdb.tablets.migration import read_replicas
from tabletdb.topology.vnode_ranges import token_map

RING_SIZE = 1 << 64


class RingQueryError(ValueError):
    """A request naming what does not exist or is not enough; the message says what to give."""


@dataclass(frozen=True)
class RingRange:
    """One range of the ring and its replicas (host ids, placement order)."""

    token_range: TokenRange
    replicas: tuple[uuid.UUID, ...]


def token_endpoints(state: ClusterState) -> list[tuple[int, str]]:
    """(token, address) for every token of every member, each token once, in token order: a
    token a replacing node took over names the node it replaces until the replace ends
    (``vnode_ranges.token_map``)."""
    members = state.topology.members
    named = token_map(state.topology_state, {h: r.tokens for h, r in members.items()})
    return sorted((t, members[h].address) for t, h in named.items())


def member_by_address(topology: Topology, address: str) -> NodeRecord:
    for record in topology.members.values():
        if address in (record.address, record.rpc_address):
            return record
    raise RingQueryError(f"no member of the cluster has address {address}")


def token_ownership(state: ClusterState) -> dict[str, float]:
    """Address -> share of the ring in the node's primary ranges (nodetool's plain "Owns")."""
    owned: dict[str, int] = {r.address: 0 for r in state.topology.members.values()}
    tokens = token_endpoints(state)
    for i, (token, address) in enumerate(tokens):
        owned[address] += TokenRange(tokens[i - 1][0], token).width()
    return {address: width / RING_SIZE for address, width in owned.items()}


def effective_ownership(state: ClusterState, keyspace: str, table: str | None) -> dict[str, float]:
    """Address -> share of the ring the node holds a replica of (nodetool's "Owns (effective)")."""
    topology = state.topology
    held: dict[uuid.UUID, int] = {h: 0 for h in topology.members}
    for piece in describe_ring(state, keyspace, table):
        for host in set(piece.replicas):
            held[host] = held.get(host, 0) + piece.token_range.width()
    shares: dict[str, float] = {}
    for h, width in held.items():  # a node replacing another at its address shares its line
        if h in topology.members:
            address = topology.members[h].address
            shares[address] = shares.get(address, 0.0) + width / RING_SIZE
    return shares


def describe_ring(state: ClusterState, keyspace: str, table: str | None) -> list[RingRange]:
    """Every range of the keyspace's (or the table's) placement with its replicas, in token order.

    A tablets keyspace has one placement per table, so it needs ``table``; a vnode keyspace
    places every table alike and a table, if given, must exist.
    """
    ks = _keyspace(state, keyspace)
    if table is not None:
        _table(ks, table)
    if ks.definition.uses_tablets:
        if table is None:
            raise RingQueryError(
                f"keyspace {keyspace} uses tablets, whose replicas differ by table: name a table too"
            )
        return list(_tablet_ranges(state, ks, table))
    replicas = vnode_replica_table(state.topology, ks.definition.replication, state.topology_state)
    if replicas is None:
        raise RingQueryError(
            f"keyspace {keyspace} has no replicated ranges (local strategy or no token owner)"
        )
    tokens = replicas.ring.tokens
    return [
        RingRange(TokenRange(tokens[i - 1], token), replicas.replicas[i]) for i, token in enumerate(tokens)
    ]


def _tablet_ranges(state: ClusterState, ks: KeyspaceSchema, table: str) -> Iterator[RingRange]:
    definition = _table(ks, table)
    tablet_map = state.metadata.tablets.get(definition.id)
    if tablet_map is None:
        raise RingQueryError(f"table {ks.name}.{table} has no tablet map yet")
    for tablet_id, info in enumerate(tablet_map.tablets):
        hosts = tuple(dict.fromkeys(r.host for r in read_replicas(info)))
        yield RingRange(tablet_map.range_of(tablet_id), hosts)


def natural_endpoints(state: ClusterState, keyspace: str, table: str, key: str) -> list[str]:
    """Addresses of the replicas of partition ``key`` (composite keys: components joined by ':')."""
    ks = _keyspace(state, keyspace)
    definition = _table(ks, table)
    token = token_of(partition_key(definition, key))
    for piece in describe_ring(state, keyspace, table):
        if piece.token_range.contains(token):
            members = state.topology.members
            return [members[h].address for h in piece.replicas if h in members]
    return []


def partition_key(table: TableDef, key: str) -> bytes:
    """The serialized partition key of ``key`` as nodetool gives it: each component as text."""
    columns = table.partition_key
    parts = key.split(":") if len(columns) > 1 else [key]
    if len(parts) != len(columns):
        names = ":".join(c.name for c in columns)
        raise RingQueryError(f"key {key!r} has {len(parts)} component(s); {table.name} wants {names}")
    components = []
    for column, text in zip(columns, parts):
        if isinstance(column.type, NativeType) and column.type.name == "blob" and not text.startswith("0x"):
            text = "0x" + text
        try:
            components.append(serialize(column.type, from_json(column.type, text, column.name)))
        except CqlError as exc:
            raise RingQueryError(f"key component {text!r} of column {column.name}: {exc.message}") from None
    return partition_key_bytes(components)


def _keyspace(state: ClusterState, keyspace: str) -> KeyspaceSchema:
    ks = state.metadata.catalog.keyspace(keyspace)
    if ks is None:
        raise RingQueryError(f"keyspace {keyspace} does not exist")
    return ks


def _table(ks: KeyspaceSchema, table: str) -> TableDef:
    definition = ks.tables.get(table)
    if definition is None:
        raise RingQueryError(f"table {ks.name}.{table} does not exist")
    return definition
