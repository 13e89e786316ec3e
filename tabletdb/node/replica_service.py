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

from tabletdb.coordinator.context import Replicas, Timeouts
from tabletdb.coordinator.executor import PartitionLocks, ServerClock, WriteExecutor
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.coordinator.writes import WriteCoordinator
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.group0.topology import Topology
from tabletdb.net.failure_detector import FailureDetector
from tabletdb.net.rpc import RpcNode
from tabletdb.node.config import NodeConfig
from tabletdb.paxos.counters import CounterCoordinator
from tabletdb.paxos.rounds import PaxosRounds
from tabletdb.query.data_path import DataPath, ViewsOf
from tabletdb.replica.derived_locks import derived_locks
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.stores import DataStores
from tabletdb.replica.verbs import ReplicaVerbs
from tabletdb.schema.model import Catalog
from tabletdb.views.backfill import Backfill


def timeouts_of(config: NodeConfig) -> Timeouts:
    return Timeouts(
        write=config.write_request_timeout_in_ms / 1000,
        read=config.read_request_timeout_in_ms / 1000,
        range=config.range_request_timeout_in_ms / 1000,
        counter_write=config.counter_write_request_timeout_in_ms / 1000,
        truncate=config.truncate_request_timeout_in_ms / 1000,
    )


def single_node_replicas(stores: StorageService) -> Replicas:
    """A cluster of one: every token is on this node (in-process tests, tools)."""
    placement = ReplicaPlacement(uuid.UUID(int=0), "", Topology, Catalog, stores.tablet_maps)
    return Replicas(placement, LocalReplica(stores))


def build_replicas(
    config: NodeConfig,
    storage: StorageService,
    state: Callable[[], ClusterState],
    rpc: RpcNode | None,
    failure_detector: FailureDetector | None,
) -> Replicas:
    """The coordinator's view of the cluster; registers the replica verbs on ``rpc`` if given."""
    placement = ReplicaPlacement(
        storage.host_id,
        config.dc,
        lambda: state().topology,
        lambda: state().metadata.catalog,
        lambda: state().metadata.tablets,
    )
    local = LocalReplica(storage)
    if rpc is not None:
        verbs = ReplicaVerbs(local, lambda table_id: state().metadata.catalog.by_id(table_id))
        for verb, handler in verbs.handlers().items():
            rpc.register(verb, handler)
    is_up = failure_detector.is_up if failure_detector is not None else None
    return Replicas(placement, local, rpc, is_up, timeouts_of(config))


@dataclass(frozen=True)
class DataPlane:
    """What the query processor is handed: the data path, and the fill of new views and indexes."""

    data: DataPath
    backfill: Backfill


def build_data_plane(
    stores: DataStores,
    replicas: Replicas,
    clock: ServerClock,
    views_of: ViewsOf,
    paxos: PaxosRounds | None,
) -> DataPlane:
    """The coordinators over ``replicas`` and everything built on them, each given what it uses.

    ``paxos`` None: a node without Paxos (maintenance mode, in-process tests) runs conditional
    and read-before-write statements under local locks where it is the only replica.
    """
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
        views_of=views_of,
        paxos=paxos,
    )
    backfill = Backfill(replicas.placement, derived_locks(replicas.local), reads, writes, clock)
    return DataPlane(data, backfill)
