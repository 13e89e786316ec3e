"""``system.topology`` and ``system.topology_requests``: the topology coordinator's state
(`topology.state`) joined with group0's membership records, with ScyllaDB's column names and
values (spec/topology.md), never stored.

One partition (key ``'topology'``), one row per node by host id; cluster-wide values are static
columns. Members that joined before the coordinator existed have no state-machine record yet and
show as ``normal``. Columns about CDC generations and upgrade are null: nothing here produces them
yet. The only global request is a keyspace RF change (``keyspace_rf_change``): it is no node's
request, and its keyspace and new replication show in ``system.topology_requests``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tabletdb.cql.types import (
    BIGINT,
    BOOLEAN,
    INT,
    TEXT,
    TIMESTAMP,
    TIMEUUID,
    UUID,
    MapType,
    SetType,
    TupleType,
)
from tabletdb.group0.topology import NodeRecord
from tabletdb.schema.model import ClusteringOrder, ColumnDef, ColumnKind, KeyspaceDef, TableDef, order_columns
from tabletdb.schema.options import TableOptions
from tabletdb.schema.system_schema import legacy_table_id
from tabletdb.topology.state import Request, TopologyState
from tabletdb.topology.states import NodeState

_TEXT_SET = SetType(TEXT)
_GENERATIONS = SetType(TupleType((TIMESTAMP, TIMEUUID)))
_P, _C, _S, _R = ColumnKind.PARTITION_KEY, ColumnKind.CLUSTERING, ColumnKind.STATIC, ColumnKind.REGULAR

_TOPOLOGY_COLUMNS = [
    ("key", TEXT, _P),
    ("host_id", UUID, _C),
    ("datacenter", TEXT, _R),
    ("rack", TEXT, _R),
    ("tokens", _TEXT_SET, _R),
    ("node_state", TEXT, _R),
    ("release_version", TEXT, _R),
    ("topology_request", TEXT, _R),
    ("replaced_id", UUID, _R),
    ("rebuild_option", TEXT, _R),
    ("num_tokens", INT, _R),
    ("tokens_string", TEXT, _R),
    ("shard_count", INT, _R),
    ("ignore_msb", INT, _R),
    ("cleanup_status", TEXT, _R),
    ("supported_features", _TEXT_SET, _R),
    ("request_id", TIMEUUID, _R),
    ("ignore_nodes", SetType(UUID), _S),
    ("new_cdc_generation_data_uuid", TIMEUUID, _S),
    ("version", BIGINT, _S),
    ("fence_version", BIGINT, _S),
    ("transition_state", TEXT, _S),
    ("committed_cdc_generations", _GENERATIONS, _S),
    ("unpublished_cdc_generations", _GENERATIONS, _S),
    ("global_topology_request", TEXT, _S),
    ("global_topology_request_id", TIMEUUID, _S),
    ("enabled_features", _TEXT_SET, _S),
    ("session", UUID, _S),
    ("tablet_balancing_enabled", BOOLEAN, _S),
    ("upgrade_state", TEXT, _S),
    ("global_requests", SetType(TIMEUUID), _S),
]

_REQUESTS_COLUMNS = [
    ("id", TIMEUUID, _P),
    ("initiating_host", UUID, _R),
    ("target_host", UUID, _R),
    ("request_type", TEXT, _R),
    ("start_time", TIMESTAMP, _R),
    ("done", BOOLEAN, _R),
    ("error", TEXT, _R),
    ("end_time", TIMESTAMP, _R),
    ("new_keyspace_rf_change_ks_name", TEXT, _R),
    ("new_keyspace_rf_change_data", MapType(TEXT, TEXT), _R),
]


def _table(name: str, columns: list[tuple[str, Any, ColumnKind]], comment: str) -> TableDef:
    cols = [
        ColumnDef(
            n,
            t,
            kind,
            0 if kind in (_P, _C) else -1,
            ClusteringOrder.ASC if kind is _C else ClusteringOrder.NONE,
        )
        for n, t, kind in columns
    ]
    return TableDef(
        "system", name, legacy_table_id("system", name), order_columns(cols), TableOptions(comment=comment)
    )


TOPOLOGY_TABLE = _table("topology", _TOPOLOGY_COLUMNS, "Current state of topology change machine")
TOPOLOGY_REQUESTS_TABLE = _table("topology_requests", _REQUESTS_COLUMNS, "Topology request tracking")


@dataclass(frozen=True)
class ClusterTopology:
    """group0's view of the cluster's shape, as the node hands it to the system tables."""

    state: TopologyState
    members: Mapping[uuid.UUID, NodeRecord]
    enabled_features: frozenset[str]
    balancing_enabled: bool


def _pending(state: TopologyState) -> dict[uuid.UUID, Request]:
    """Each node's own request (a global one, an RF change, belongs to no node)."""
    out = {r.host_id: r for r in state.queue if r.rf_change is None}
    running = None if state.transition is None else state.transition.request
    if running is not None and running.rf_change is None:
        out[running.host_id] = running
    return out


def topology_rows(
    cluster: ClusterTopology | None, ignore_msb: int, release_version: str
) -> list[dict[str, Any]]:
    """No rows on a node without group0 (maintenance mode)."""
    if cluster is None:
        return []
    state, members = cluster.state, cluster.members
    pending = _pending(state)
    running = state.transition.request if state.transition and state.transition.request.rf_change else None
    static = {
        "key": "topology",
        "ignore_nodes": frozenset(state.ignored) or None,
        "new_cdc_generation_data_uuid": None,
        "version": state.version,
        "fence_version": state.fence_version,
        "transition_state": None if state.transition is None else state.transition.state.value,
        "committed_cdc_generations": None,
        "unpublished_cdc_generations": None,
        "global_topology_request": None if running is None else running.kind.value,
        "global_topology_request_id": None if running is None else running.request_id,
        "enabled_features": frozenset(cluster.enabled_features) or None,
        "session": None,
        "tablet_balancing_enabled": cluster.balancing_enabled,
        "upgrade_state": "done",
        "global_requests": None,
    }
    rows = []
    for host_id in sorted(set(members) | set(state.nodes), key=lambda h: h.bytes):
        record = members.get(host_id)
        node = state.nodes.get(host_id)
        request = pending.get(host_id)
        tokens = tuple(str(t) for t in sorted(record.tokens)) if record else ()
        rows.append(
            {
                **static,
                "host_id": host_id,
                "datacenter": record.datacenter if record else None,
                "rack": record.rack if record else None,
                "tokens": frozenset(tokens) or None,
                "node_state": (node.state if node else NodeState.NORMAL).value,
                "release_version": release_version,
                "topology_request": None if request is None else request.kind.value,
                "replaced_id": node.replaced_id if node else None,
                "rebuild_option": None,
                "num_tokens": len(tokens),
                "tokens_string": " ".join(tokens) or None,
                "shard_count": record.shard_count if record else None,
                "ignore_msb": ignore_msb,
                "cleanup_status": (node.cleanup.value if node else "clean"),
                "supported_features": frozenset(record.supported_features) or None if record else None,
                "request_id": None if request is None else request.request_id,
            }
        )
    return rows


def topology_requests_rows(cluster: ClusterTopology | None) -> list[dict[str, Any]]:
    """Finished, running and queued requests; times are not recorded yet (null)."""
    if cluster is None:
        return []
    state = cluster.state
    rows = []
    running = [state.transition.request] if state.transition is not None else []
    for request, done, error in [
        *((r.request, True, r.error) for r in state.results),
        *((r, False, None) for r in (*running, *state.queue)),
    ]:
        change = request.rf_change
        rows.append(
            {
                "id": request.request_id,
                "initiating_host": None if change is None else request.host_id,
                "target_host": None if change else request.replaced_id or request.host_id,
                "request_type": request.kind.value,
                "start_time": None,
                "done": done,
                "error": error or None,
                "end_time": None,
                "new_keyspace_rf_change_ks_name": None if change is None else change.keyspace,
                "new_keyspace_rf_change_data": None if change is None else _replication_data(change.after),
            }
        )
    return rows


def _replication_data(keyspace: KeyspaceDef) -> dict[str, str]:
    """The new replication as ScyllaDB shows it: class and each datacenter's RF (a rack list as
    its racks joined by commas)."""
    data = {"class": keyspace.replication.strategy_class}
    for dc, value in keyspace.replication.options:
        data[dc] = ",".join(value) if isinstance(value, tuple) else value
    return data
