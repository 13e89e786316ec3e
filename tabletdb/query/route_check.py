"""Was this request sent to the right (node, shard)? Counts the answer and builds routing hints.

Drivers route a prepared single-partition statement by the token of its bound partition key:
to a replica of the token's tablet (learned from `tablets-routing-v1` payloads) or of the vnode
ring, and to the replica's shard. A request that lands elsewhere still succeeds (the coordinator
forwards it), but costs a network hop; this module tells how often that happens (plain int
counters the node renders as metrics on scrape) and, for tablet tables, gives the driver the
tablet's replicas so its next request goes straight to one (spec/clients.md 2.3 and 5).

Only statements whose every partition key column is bound by a marker (``pk = ?``) are checked:
that is what drivers can route (`_may_use_token_aware_routing`), and the token comes straight
from the bound bytes, as the driver computes it, without decoding anything.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from tabletdb.cql import ast
from tabletdb.dht.murmur3 import partition_key_bytes, token_of
from tabletdb.dht.sharding import shard_of
from tabletdb.dht.token import MIN_TOKEN
from tabletdb.protocol.extensions import TABLETS_ROUTING_V1
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.routing import routing_payload
from tabletdb.protocol.wire import Value
from tabletdb.schema.model import TableDef
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap

VnodeReplicas = Callable[[TableDef, int], Collection[uuid.UUID]]
"""The host ids replicating ``token`` of a vnode table (the coordinator's replica set)."""

Payload = dict[str, bytes | None]


class Op(IntEnum):
    READ = 0
    WRITE = 1


class Target(IntEnum):
    """Where a routable request landed, relative to the token's replicas."""

    REPLICA = 0
    """A replica, on the shard that owns the token there (or a pending replica's shard)."""
    OTHER_SHARD = 1
    """A replica node, but a connection of another shard."""
    NON_REPLICA = 2
    """A node that holds no replica of the token: the request is forwarded."""


@dataclass(frozen=True, slots=True)
class RoutePlan:
    """What a prepared statement needs to be checked: its table and the markers of its key."""

    table: TableDef
    pk_indexes: tuple[int, ...]
    op: Op


def plan_route(stmt: ast.Statement, table: TableDef | None, pk_indexes: Sequence[int]) -> RoutePlan | None:
    """The route plan of a prepared statement, or None if drivers cannot route it by token."""
    if table is None or not pk_indexes:
        return None
    if isinstance(stmt, ast.SelectStatement):
        return RoutePlan(table, tuple(pk_indexes), Op.READ)
    if isinstance(stmt, ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement):
        return RoutePlan(table, tuple(pk_indexes), Op.WRITE)
    return None


def routing_token(values: Sequence[Value], pk_indexes: Sequence[int]) -> int | None:
    """The token of the bound partition key, or None when a component is null, unset or missing."""
    if len(pk_indexes) == 1:
        index = pk_indexes[0]
        if index >= len(values):
            return None
        value = values[index]
        return token_of(value) if isinstance(value, bytes) else None
    components: list[bytes] = []
    for index in pk_indexes:
        if index >= len(values):
            return None
        value = values[index]
        if not isinstance(value, bytes) or len(value) > 0xFFFF:
            return None
        components.append(value)
    return token_of(partition_key_bytes(components))


class RouteCounters:
    """Routable requests by (read or write, target); plain ints, read by the metrics scrape."""

    __slots__ = ("counts", "payloads_sent")

    def __init__(self) -> None:
        self.counts = [[0] * len(Target) for _ in Op]
        self.payloads_sent = 0

    def snapshot(self) -> dict[tuple[Op, Target], int]:
        return {(op, target): self.counts[op][target] for op in Op for target in Target}


class RouteCheck:
    """Decides the target of routable requests on this node; see the module docstring."""

    def __init__(
        self,
        host_id: uuid.UUID,
        smp: int,
        ignore_msb: int,
        tablet_maps: Callable[[], Mapping[uuid.UUID, TabletMap]],
        vnode_replicas: VnodeReplicas,
    ) -> None:
        self.host_id = host_id
        self.smp = smp
        self.ignore_msb = ignore_msb
        self._tablet_maps = tablet_maps
        self._vnode_replicas = vnode_replicas
        self.counters = RouteCounters()

    def observe(self, client: ClientState, plan: RoutePlan, values: Sequence[Value]) -> Payload | None:
        """Count where this request landed; the routing payload to attach to its result, if any."""
        token = routing_token(values, plan.pk_indexes)
        if token is None:
            return None
        table = plan.table
        tablet_map = self._tablet_maps().get(table.id)
        if tablet_map is None:
            target = self._vnode_target(table, token, client.shard)
            self.counters.counts[plan.op][target] += 1
            return None
        tablet_id = tablet_map.tablet_id_of(token)
        info = tablet_map.tablets[tablet_id]
        target = self._tablet_target(info, client.shard)
        self.counters.counts[plan.op][target] += 1
        if target is Target.REPLICA or TABLETS_ROUTING_V1 not in client.extensions:
            return None
        self.counters.payloads_sent += 1
        first = MIN_TOKEN if tablet_id == 0 else tablet_map.last_tokens[tablet_id - 1]
        return routing_payload(first, info.last_token, info.replicas)

    def _tablet_target(self, info: TabletInfo, shard: int) -> Target:
        me = self.host_id
        target = Target.NON_REPLICA
        for host, replica_shard in info.replicas:
            if host == me:
                if replica_shard == shard:
                    return Target.REPLICA
                target = Target.OTHER_SHARD
        # during a migration the pending replica on its own shard is a correct target too
        for host, replica_shard in info.new_replicas or ():
            if host == me and replica_shard == shard:
                return Target.REPLICA
        return target

    def _vnode_target(self, table: TableDef, token: int, shard: int) -> Target:
        if self.host_id not in self._vnode_replicas(table, token):
            return Target.NON_REPLICA
        if shard_of(token, self.smp, self.ignore_msb) != shard:
            return Target.OTHER_SHARD
        return Target.REPLICA
