"""Wiring of the replicated data path on a node: placement, liveness, transport and replica verbs.

The query layer owns the coordinator logic and defines what it needs as protocols; this module
hands it the node's pieces: group0's topology, catalog and tablet maps for placement, the
failure detector for liveness, the internode RPC endpoint as transport, and registers the
replica verbs on that endpoint so other nodes can coordinate through this one.
"""

from __future__ import annotations

from collections.abc import Callable

from tabletdb.coordinator.context import Replicas, Timeouts
from tabletdb.coordinator.placement import ReplicaPlacement
from tabletdb.group0.cluster_state import ClusterState
from tabletdb.net.failure_detector import FailureDetector
from tabletdb.net.rpc import RpcNode
from tabletdb.node.config import NodeConfig
from tabletdb.replica.local import LocalReplica
from tabletdb.replica.storage_service import StorageService
from tabletdb.replica.verbs import ReplicaVerbs


def timeouts_of(config: NodeConfig) -> Timeouts:
    return Timeouts(
        write=config.write_request_timeout_in_ms / 1000,
        read=config.read_request_timeout_in_ms / 1000,
        range=config.range_request_timeout_in_ms / 1000,
        counter_write=config.counter_write_request_timeout_in_ms / 1000,
        truncate=config.truncate_request_timeout_in_ms / 1000,
    )


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
