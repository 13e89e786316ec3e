"""Which nodes take part in a partition's Paxos: the replicas of (table, token), as RPC node ids.

Tablet tables: the tablet's replicas from group0's tablet map. Vnode tables: the token ring of
all members walked with the keyspace's strategy (SimpleStrategy's ``replication_factor``, or
NetworkTopologyStrategy's per-DC factors), cached per group0 state.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from tabletdb.dht.ring import Location, ReplicaTable, TokenRing
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import raft_id_of
from tabletdb.schema.model import TableDef


class ReplicaLookup:
    def __init__(self, state: Callable[[], ClusterState]) -> None:
        self._state = state
        self._rings: dict[str, tuple[object, ReplicaTable[uuid.UUID]]] = {}

    def __call__(self, table: TableDef, token: int) -> tuple[int, ...]:
        state = self._state()
        tablet_map = state.metadata.tablets.get(table.id)
        if tablet_map is not None:
            hosts = tablet_map.tablet_for(token).replica_hosts()
        else:
            hosts = self._vnode_table(state, table.keyspace).for_token(token)
        return tuple(raft_id_of(h) for h in hosts)

    def _vnode_table(self, state: ClusterState, keyspace: str) -> ReplicaTable[uuid.UUID]:
        cached = self._rings.get(keyspace)
        if cached is not None and cached[0] == state.state_id:
            return cached[1]
        members = list(state.topology.members.values())
        owned = sorted((t, m.host_id) for m in members for t in m.tokens)
        ring = TokenRing(tuple(t for t, _ in owned), tuple(h for _, h in owned))
        ks = state.metadata.catalog.keyspace(keyspace)
        if ks is None:
            raise ValueError(f"keyspace {keyspace} is not in the schema")
        replication = ks.definition.replication
        if replication.strategy_class.endswith("SimpleStrategy"):
            table = ReplicaTable.simple(ring, replication.factor("replication_factor"))
        else:
            factors = {dc: replication.factor(dc) for dc, _ in replication.options if dc != "class"}
            locations = {m.host_id: Location(m.datacenter, m.rack) for m in members}
            table = ReplicaTable.network_topology(ring, factors, locations)
        self._rings[keyspace] = (state.state_id, table)
        return table
