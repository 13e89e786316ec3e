"""Choosing replicas for the tablets of a new table (pure: nodes and loads in, replicas out).

Each tablet gets, per DC, its RF replicas on distinct hosts, spread over as many racks as the DC
has (a rack list pins one replica to each listed rack), and each replica goes to the least-loaded
shard available. Loads are updated as replicas are placed, so one table's tablets spread evenly
and later tables fill the shards earlier ones left light. Ties break on host id and shard so the
result is deterministic for a given input.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tabletdb.cql.errors import ConfigurationError
from tabletdb.tablets.count import DcReplication
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """A node that can hold tablet replicas, with the number of replicas each shard holds now."""

    host_id: uuid.UUID
    dc: str
    rack: str
    shard_count: int
    shard_load: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.shard_count < 1:
            raise ValueError(f"node {self.host_id} must have at least one shard, has {self.shard_count}")
        if self.shard_load and len(self.shard_load) != self.shard_count:
            raise ValueError(
                f"node {self.host_id} has {self.shard_count} shards but {len(self.shard_load)} load values"
            )


class _Loads:
    """Mutable per-shard loads while a table's tablets are being placed."""

    def __init__(self, nodes: Sequence[NodeCapacity]) -> None:
        self.shards: dict[uuid.UUID, list[int]] = {
            n.host_id: list(n.shard_load) if n.shard_load else [0] * n.shard_count for n in nodes
        }

    def best_shard(self, host: uuid.UUID) -> int:
        loads = self.shards[host]
        return min(range(len(loads)), key=lambda s: (loads[s], s))

    def rank(self, node: NodeCapacity) -> tuple[int, float, uuid.UUID]:
        """Least-loaded shard first, then the node with the lower average load per shard."""
        loads = self.shards[node.host_id]
        return (min(loads), sum(loads) / len(loads), node.host_id)

    def place(self, node: NodeCapacity) -> TabletReplica:
        shard = self.best_shard(node.host_id)
        self.shards[node.host_id][shard] += 1
        return TabletReplica(node.host_id, shard)


def _place_in_dc(
    dc: str, replication: DcReplication, dc_nodes: Sequence[NodeCapacity], loads: _Loads
) -> list[TabletReplica]:
    if isinstance(replication, tuple):
        if len(set(replication)) != len(replication):
            raise ConfigurationError(f"Datacenter {dc} lists a rack more than once: {list(replication)}")
        chosen: list[TabletReplica] = []
        for rack in replication:
            in_rack = [n for n in dc_nodes if n.rack == rack]
            if not in_rack:
                raise ConfigurationError(
                    f"Datacenter {dc} has no nodes in rack {rack} listed in the replication"
                )
            chosen.append(loads.place(min(in_rack, key=loads.rank)))
        return chosen
    if replication > len(dc_nodes):  # ScyllaDB's text, which clients match
        raise ConfigurationError(
            f"Datacenter {dc} doesn't have enough token-owning nodes for replication_factor={replication}"
        )
    replicas: list[TabletReplica] = []
    used_hosts: set[uuid.UUID] = set()
    rack_use: dict[str, int] = {}
    for _ in range(replication):
        candidates = [n for n in dc_nodes if n.host_id not in used_hosts]
        node = min(candidates, key=lambda n: (rack_use.get(n.rack, 0), *loads.rank(n)))
        used_hosts.add(node.host_id)
        rack_use[node.rack] = rack_use.get(node.rack, 0) + 1
        replicas.append(loads.place(node))
    return replicas


def allocate_replicas(
    tablet_count: int, replication: Mapping[str, DcReplication], nodes: Sequence[NodeCapacity]
) -> tuple[tuple[tuple[TabletReplica, ...], ...], dict[uuid.UUID, tuple[int, ...]]]:
    """Replicas for ``tablet_count`` new tablets, and the per-shard loads after placing them."""
    if tablet_count < 1:
        raise ValueError(f"a table needs at least one tablet, got {tablet_count}")
    seen: set[uuid.UUID] = set()
    for node in nodes:
        if node.host_id in seen:
            raise ValueError(f"node {node.host_id} is listed twice")
        seen.add(node.host_id)
    by_dc: dict[str, list[NodeCapacity]] = {}
    for node in nodes:
        by_dc.setdefault(node.dc, []).append(node)
    loads = _Loads(nodes)
    tablets: list[tuple[TabletReplica, ...]] = []
    for _ in range(tablet_count):
        replicas: list[TabletReplica] = []
        for dc in sorted(replication):
            rf = replication[dc]
            if isinstance(rf, int) and rf <= 0:
                continue
            replicas.extend(_place_in_dc(dc, rf, by_dc.get(dc, []), loads))
        tablets.append(tuple(replicas))
    return tuple(tablets), {host: tuple(shards) for host, shards in loads.shards.items()}


def new_tablet_map(
    table_id: uuid.UUID,
    tablet_count: int,
    replication: Mapping[str, DcReplication],
    nodes: Sequence[NodeCapacity],
) -> TabletMap:
    """A fresh, evenly split tablet map for a new table."""
    replicas, _ = allocate_replicas(tablet_count, replication, nodes)
    return TabletMap.even(table_id, replicas)
