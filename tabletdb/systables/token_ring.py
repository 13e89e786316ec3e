"""``system.token_ring``: every keyspace's ranges and their replicas, as ScyllaDB shows them
(``nodetool describering`` for every keyspace at once).

One partition per replicated keyspace (local ones have no ring). A vnode keyspace places all of
its tables alike and shows them under the table name ``<ALL>``; a tablets keyspace shows each
table (and view) with its own tablets. A range is ``(start_token, end_token]``, one row per
replica, tokens as text. Rows come in clustering order: table name, then start token compared
as text (the column is text), then the replica's address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from typing import Any

from tabletdb.coordinator.placement import vnode_replica_table
from tabletdb.cql.types import INET, TEXT
from tabletdb.dht.murmur3 import token_of
from tabletdb.dht.token import TokenRange
from tabletdb.group0.topology import NodeRecord, Topology
from tabletdb.schema.model import (
    Catalog,
    ClusteringOrder,
    ColumnDef,
    ColumnKind,
    KeyspaceSchema,
    TableDef,
    order_columns,
)
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema import legacy_table_id
from tabletdb.systables.topology import ClusterTopology
from tabletdb.tablets.migration import read_replicas
from tabletdb.tablets.tablet_map import TabletMap

Row = dict[str, Any]
ALL_TABLES = "<ALL>"
"""The table name a vnode keyspace's ranges are shown under."""

_P, _C, _R = ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING, ColumnKind.REGULAR
TOKEN_RING_TABLE = TableDef(
    "system",
    "token_ring",
    legacy_table_id("system", "token_ring"),
    order_columns(
        [
            ColumnDef("keyspace_name", TEXT, _P, 0),
            ColumnDef("table_name", TEXT, _C, 0, ClusteringOrder.ASC),
            ColumnDef("start_token", TEXT, _C, 1, ClusteringOrder.ASC),
            ColumnDef("endpoint", INET, _C, 2, ClusteringOrder.ASC),
            ColumnDef("end_token", TEXT, _R),
            ColumnDef("dc", TEXT, _R),
            ColumnDef("rack", TEXT, _R),
        ]
    ),
    TableOptions(),
)


def token_ring_rows(
    catalog: Catalog, tablets: Mapping[Any, TabletMap], cluster: ClusterTopology | None
) -> list[Row]:
    """No rows without group0's membership (maintenance mode has no ring to show)."""
    if cluster is None:
        return []
    members = dict(cluster.members)
    keyspaces = sorted(catalog.keyspaces.values(), key=lambda ks: token_of(ks.name.encode()))
    rows: list[Row] = []
    for ks in keyspaces:
        pieces = _tablet_pieces(ks, tablets) if ks.definition.uses_tablets else _vnode_pieces(ks, cluster)
        rows += _rows(ks.name, pieces, members)
    return rows


def range_ownership(ks: KeyspaceSchema, cluster: ClusterTopology | None) -> list[tuple[str, tuple[str, ...]]]:
    """A vnode keyspace's ranges as DESC CLUSTER shows them: (end token as text, replica
    addresses in replica order), sorted by the token's text; empty for a tablets keyspace."""
    if cluster is None or ks.definition.uses_tablets:
        return []
    members = dict(cluster.members)
    owned = [
        (str(token_range.end), tuple(members[h].address for h in hosts if h in members))
        for _, token_range, hosts in _vnode_pieces(ks, cluster)
    ]
    return sorted(owned)


Piece = tuple[str, TokenRange, tuple[Any, ...]]
"""(table name, range, replica host ids)."""


def _vnode_pieces(ks: KeyspaceSchema, cluster: ClusterTopology) -> Iterator[Piece]:
    topology = Topology(members=dict(cluster.members))
    replicas = vnode_replica_table(topology, ks.definition.replication, cluster.state)
    if replicas is None:
        return
    tokens = replicas.ring.tokens
    for i, token in enumerate(tokens):
        yield ALL_TABLES, TokenRange(tokens[i - 1], token), tuple(replicas.replicas[i])


def _tablet_pieces(ks: KeyspaceSchema, tablets: Mapping[Any, TabletMap]) -> Iterator[Piece]:
    tables: list[TableDef] = [*ks.tables.values(), *(v.table for v in ks.views.values())]
    for table in tables:
        tablet_map = tablets.get(table.id)
        if tablet_map is None:
            continue
        for tablet_id, info in enumerate(tablet_map.tablets):
            hosts = tuple(dict.fromkeys(r.host for r in read_replicas(info)))
            yield table.name, tablet_map.range_of(tablet_id), hosts


def _rows(keyspace: str, pieces: Iterator[Piece], members: Mapping[Any, NodeRecord]) -> list[Row]:
    rows: list[Row] = []
    for table, token_range, hosts in pieces:
        for host in hosts:
            record = members.get(host)
            if record is None:
                continue  # a replica whose member record is gone has no address to show
            rows.append(
                {
                    "keyspace_name": keyspace,
                    "table_name": table,
                    "start_token": str(token_range.start),
                    "endpoint": ipaddress.ip_address(record.address),
                    "end_token": str(token_range.end),
                    "dc": record.datacenter,
                    "rack": record.rack,
                }
            )
    rows.sort(key=lambda r: (r["table_name"], r["start_token"], ipaddress.ip_address(r["endpoint"]).packed))
    return rows
