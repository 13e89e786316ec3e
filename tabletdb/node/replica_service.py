"""Wiring of the replicated data path on a node: placement, liveness, transport and replica verbs.

The coordinator and the layers above it define what they need as constructor parameters and
protocols; this module builds them bottom-up from the node's pieces: group0's topology, catalog
and tablet maps for placement, the failure detector for liveness, the internode RPC endpoint as
transport (registering the replica verbs on it so other nodes can coordinate through this one),
then the coordinators, the counter coordinator and the data path the query processor is handed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tabletdb.coordinator.context import Replicas, Timeouts, Transport
from tabletdb.coordinator.executor import PartitionLocks, ServerClock, WriteExecutor
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import Topology
from tabletdb.net.rpc import RpcNode
from tabletdb.node.config import NodeConfig
from tabletdb.paxos.counters import CounterCoordinator
from tabletdb.paxos.rounds import PaxosRounds
from tabletdb.query.data_path import DataPath, ViewsOf
from tabletdb.replica.cdc_log import CdcLog
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.stores import DataStores
from tabletdb.replica.verbs import ReplicaVerbs, TableOf
from tabletdb.schema.model import Catalog
from tabletdb.views.backfill import Backfill
from tabletdb.views.updates import ViewUpdates


def timeouts_of(config: NodeConfig) -> Timeouts:
    return Timeouts(
        write=config.write_request_timeout_in_ms / 1000,
        read=config.read_request_timeout_in_ms / 1000,
        range=config.range_request_timeout_in_ms / 1000,
        counter_write=config.counter_write_request_timeout_in_ms / 1000,
        truncate=config.truncate_request_timeout_in_ms / 1000,
    )


@dataclass(frozen=True)
class ViewMaintenance:
    """What a node's base replicas maintain views and indexes with (``ViewUpdates``), and what
    the rest of its data plane shares with them: the clock, and the locks the fill of new views
    and indexes (``Backfill``) holds against their derived writes."""

    views_of: ViewsOf
    clock: ServerClock
    locks: DerivedLocks


def single_node_replicas(stores: StorageService, views: ViewMaintenance) -> Replicas:
    """A cluster of one: every token is on this node (in-process tests, tools)."""
    placement = ReplicaPlacement(uuid.UUID(int=0), "", Topology, Catalog, stores.tablet_maps)
    return build_replicas(placement, stores, views, None, None, Timeouts())


def cluster_placement(
    host_id: uuid.UUID, datacenter: str, state: Callable[[], ClusterState]
) -> ReplicaPlacement:
    """Replicas placed by group0's topology, catalog and tablet maps, as this node last applied them."""
    return ReplicaPlacement(
        host_id,
        datacenter,
        lambda: state().topology,
        lambda: state().metadata.catalog,
        lambda: state().metadata.tablets,
        topology_version=lambda: state().topology_state.version,
        cdc_generations=lambda: state().metadata.cdc_generations,
        topology_state=lambda: state().topology_state,
        cdc_stream_sets=lambda: state().metadata.cdc_stream_sets,
    )


def build_replicas(
    placement: ReplicaPlacement,
    stores: StorageService,
    views: ViewMaintenance,
    transport: Transport | None,
    is_up: Callable[[int], bool] | None,
    timeouts: Timeouts,
) -> Replicas:
    """Bottom-up: the replicas view updates go to (their local one applies directly), the view
    updates over them, then the local replica that applies base writes with their view updates."""
    direct = Replicas(placement, LocalReplica(stores), transport, is_up, timeouts)
    updates = ViewUpdates(direct, views.views_of, views.clock.now_seconds, views.locks)
    cdc = CdcLog(
        placement.catalog,
        placement.tablet_map,
        placement.cdc_generations,
        views.locks,
        views.clock.now_seconds,
    )
    return Replicas(placement, LocalReplica(stores, updates, cdc), transport, is_up, timeouts)


def register_replica_verbs(
    rpc: RpcNode, local: LocalReplica, tables: TableOf, fence: Callable[[], int] = lambda: 0
) -> None:
    """Serve ``local`` to other nodes' coordinators over ``rpc``, refusing writes routed by a
    topology version below ``fence`` (group0's ``fence_version``)."""
    verbs = ReplicaVerbs(local, tables, fence)
    for verb, handler in verbs.handlers().items():
        rpc.register(verb, handler)


@dataclass(frozen=True)
class DataPlane:
    """What the query processor is handed: the data path, and the fill of new views and indexes."""

    data: DataPath
    backfill: Backfill


def build_data_plane(
    stores: DataStores, replicas: Replicas, views: ViewMaintenance, paxos: PaxosRounds | None
) -> DataPlane:
    """The coordinators over ``replicas`` and everything built on them, each given what it uses.

    ``paxos`` None: a node without Paxos (maintenance mode, in-process tests) runs conditional
    and read-before-write statements under local locks where it is the only replica.
    """
    clock = views.clock
    writes = WriteCoordinator(replicas)
    reads = ReadCoordinator(replicas)
    writer = WriteExecutor(stores, clock)
    locks = PartitionLocks()
    counters = CounterCoordinator(
        replicas, writes, writer.current_cells, locks.lock, clock.timestamp, clock.now_seconds
    )
    data = DataPath(
        writer=writer,
        clock=clock,
        locks=locks,
        stores=stores,
        replicas=replicas,
        writes=writes,
        reads=reads,
        counters=counters,
        views_of=views.views_of,
        paxos=paxos,
    )
    backfill = Backfill(replicas.placement, views.locks, reads, writes, clock)
    return DataPlane(data, backfill)
