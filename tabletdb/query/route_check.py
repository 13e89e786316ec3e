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
from tabletdb.cql.errors import CqlError
from tabletdb.cql.values import Value
from tabletdb.dht.murmur3 import partition_key_bytes, token_of
from tabletdb.dht.sharding import shard_of
from tabletdb.dht.token import MIN_TOKEN
from tabletdb.protocol.extensions import TABLETS_ROUTING_V1
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.routing import routing_payload
from tabletdb.schema.model import TableDef
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletMapLookup

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


# Plain ints on the request path: indexing a list with an IntEnum member costs a __index__ call.
_REPLICA, _OTHER_SHARD, _NON_REPLICA = int(Target.REPLICA), int(Target.OTHER_SHARD), int(Target.NON_REPLICA)
_READ, _WRITE = int(Op.READ), int(Op.WRITE)


@dataclass(frozen=True, slots=True)
class RoutePlan:
    """What a prepared statement needs to be checked: its table and the markers of its key."""

    table: TableDef
    pk_indexes: tuple[int, ...]
    op: int
    """An `Op` value, as a plain int (it indexes the counters)."""


def plan_route(stmt: ast.Statement, table: TableDef | None, pk_indexes: Sequence[int]) -> RoutePlan | None:
    """The route plan of a prepared statement, or None if drivers cannot route it by token."""
    if table is None or not pk_indexes:
        return None
    if isinstance(stmt, ast.SelectStatement):
        return RoutePlan(table, tuple(pk_indexes), _READ)
    if isinstance(stmt, ast.InsertStatement | ast.UpdateStatement | ast.DeleteStatement):
        return RoutePlan(table, tuple(pk_indexes), _WRITE)
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
    """Decides the target of routable requests on this node; see the module docstring.

    This runs on every routable EXECUTE, so the per-tablet answer (target for each shard of this
    node) is computed once per tablet map object and reused until group0 replaces the map.
    """

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
        self._targets: dict[uuid.UUID, tuple[TabletMap, list[tuple[int, ...]]]] = {}
        self._map_of = TabletMapLookup(tablet_maps)
        self.counters = RouteCounters()

    def observe(self, client: ClientState, plan: RoutePlan, values: Sequence[Value]) -> Payload | None:
        """Count where this request landed; the routing payload to attach to its result, if any."""
        token = routing_token(values, plan.pk_indexes)
        if token is None:
            return None
        table = plan.table
        tablet_map = self._map_of(table.id)
        if tablet_map is None:
            try:
                target = self._vnode_target(table, token, client.shard)
            except CqlError:  # the keyspace is gone: executing the statement reports it
                return None
            self.counters.counts[plan.op][target] += 1
            return None
        tablet_id = tablet_map.tablet_id_of(token)
        target = self._tablet_targets(tablet_map)[tablet_id][client.shard]
        self.counters.counts[plan.op][target] += 1
        if target == _REPLICA or TABLETS_ROUTING_V1 not in client.extensions:
            return None
        self.counters.payloads_sent += 1
        info = tablet_map.tablets[tablet_id]
        first = MIN_TOKEN if tablet_id == 0 else tablet_map.last_tokens[tablet_id - 1]
        return routing_payload(first, info.last_token, info.replicas)

    def _tablet_targets(self, tablet_map: TabletMap) -> list[tuple[int, ...]]:
        """Per tablet, the target of a request arriving on each shard of this node."""
        cached = self._targets.get(tablet_map.table_id)
        if cached is not None and cached[0] is tablet_map:
            return cached[1]
        shards = range(self.smp)
        targets = [
            tuple(int(tablet_target(info, self.host_id, s)) for s in shards) for info in tablet_map.tablets
        ]
        if len(self._targets) > 4096:  # dropped tables leave entries behind; start over now and then
            self._targets.clear()
        self._targets[tablet_map.table_id] = (tablet_map, targets)
        return targets

    def _vnode_target(self, table: TableDef, token: int, shard: int) -> int:
        if self.host_id not in self._vnode_replicas(table, token):
            return _NON_REPLICA
        if shard_of(token, self.smp, self.ignore_msb) != shard:
            return _OTHER_SHARD
        return _REPLICA


def tablet_target(info: TabletInfo, host_id: uuid.UUID, shard: int) -> Target:
    """Where a request for a token of this tablet lands when it reaches ``shard`` of ``host_id``."""
    target = Target.NON_REPLICA
    for host, replica_shard in info.replicas:
        if host == host_id:
            if replica_shard == shard:
                return Target.REPLICA
            target = Target.OTHER_SHARD
    # during a migration the pending replica on its own shard is a correct target too
    for host, replica_shard in info.new_replicas or ():
        if host == host_id and replica_shard == shard:
            return Target.REPLICA
    return target
