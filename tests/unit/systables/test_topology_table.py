"""system.topology and system.topology_requests rendered from group0 (ScyllaDB's columns)."""

from __future__ import annotations

import uuid

from tabletdb.group0.topology import NodeRecord
from tabletdb.systables.tables import RENDERERS
from tabletdb.systables.topology import ClusterTopology, topology_requests_rows, topology_rows
from tabletdb.topology.state import Request, RequestResult, TopologyState, TopoNode, Transition
from tabletdb.topology.states import NodeState, RequestKind, TransitionState

SPEC_COLUMNS = """key host_id datacenter rack tokens node_state release_version topology_request replaced_id
rebuild_option num_tokens tokens_string shard_count ignore_msb cleanup_status supported_features request_id
ignore_nodes new_cdc_generation_data_uuid version fence_version transition_state committed_cdc_generations
unpublished_cdc_generations global_topology_request global_topology_request_id enabled_features session
tablet_balancing_enabled upgrade_state global_requests""".split()

A, B, C = (uuid.UUID(int=i) for i in (1, 2, 3))


def record(h: uuid.UUID) -> NodeRecord:
    return NodeRecord(h, f"10.0.0.{h.int}", f"10.0.0.{h.int}", "dc1", "r1", (-5, 7), frozenset({"TABLETS"}))


def test_columns_are_scyllas() -> None:
    table, _ = RENDERERS["topology"]
    assert {c.name for c in table.columns} == set(SPEC_COLUMNS)
    assert [c.name for c in table.partition_key] == ["key"]
    assert [c.name for c in table.clustering_key] == ["host_id"]
    assert table.options.comment == "Current state of topology change machine"
    requests, _ = RENDERERS["topology_requests"]
    assert {c.name for c in requests.columns} == {
        "id",
        "initiating_host",
        "target_host",
        "request_type",
        "start_time",
        "done",
        "error",
        "end_time",
        "new_keyspace_rf_change_ks_name",
        "new_keyspace_rf_change_data",
    }


def test_rows_show_node_states_requests_and_the_transition() -> None:
    leave = Request(uuid.UUID(int=10), RequestKind.LEAVE, B)
    join = Request(uuid.UUID(int=11), RequestKind.JOIN, C)
    failed = Request(uuid.UUID(int=9), RequestKind.REMOVE, A)
    state = TopologyState(
        state_id=uuid.UUID(int=99),
        nodes={B: TopoNode(B, NodeState.DECOMMISSIONING, leave.request_id), C: TopoNode(C, NodeState.NONE)},
        queue=(join,),
        transition=Transition(leave, TransitionState.TABLET_DRAINING),
        version=7,
        fence_version=6,
        results=(RequestResult(failed, "removenode: no"),),
    )
    cluster = ClusterTopology(state, {A: record(A), B: record(B)}, frozenset({"TABLETS"}), True)
    rows = {r["host_id"]: r for r in topology_rows(cluster, 12, "3.0.8")}
    assert set(rows) == {A, B, C}
    assert (
        rows[A]["node_state"] == "normal" and rows[A]["topology_request"] is None
    )  # joined before the coordinator
    assert rows[A]["tokens"] == frozenset({"-5", "7"}) and rows[A]["tokens_string"] == "-5 7"
    assert rows[A]["num_tokens"] == 2 and rows[A]["shard_count"] == 2 and rows[A]["ignore_msb"] == 12
    assert rows[B]["node_state"] == "decommissioning" and rows[B]["topology_request"] == "leave"
    assert rows[B]["request_id"] == leave.request_id
    assert (
        rows[C]["node_state"] == "none"
        and rows[C]["topology_request"] == "join"
        and rows[C]["datacenter"] is None
    )
    assert all(
        r["transition_state"] == "tablet draining" and r["version"] == 7 and r["fence_version"] == 6
        for r in rows.values()
    )
    requests = {r["id"]: r for r in topology_requests_rows(cluster)}
    assert requests[failed.request_id]["done"] and requests[failed.request_id]["error"] == "removenode: no"
    assert not requests[leave.request_id]["done"] and requests[join.request_id]["request_type"] == "join"


def test_no_rows_without_group0() -> None:
    assert topology_rows(None, 12, "3.0.8") == [] and topology_requests_rows(None) == []


def test_a_running_rf_change_is_the_global_request_and_no_nodes_own() -> None:
    from dataclasses import replace

    from tabletdb.schema.model import NTS, KeyspaceDef, KeyspaceTablets, Replication
    from tabletdb.topology.rf_request import KeyspaceRfChange

    before = KeyspaceDef("ks", Replication(NTS, (("dc1", "1"),)), tablets=KeyspaceTablets(True))
    after = replace(before, replication=Replication(NTS, (("dc1", "2"),)))
    change = Request(
        uuid.UUID(int=12), RequestKind.KEYSPACE_RF_CHANGE, A, rf_change=KeyspaceRfChange(before, after)
    )
    state = TopologyState(
        state_id=uuid.UUID(int=99),
        nodes={A: TopoNode(A, NodeState.NORMAL)},
        transition=Transition(change, TransitionState.TABLET_MIGRATION),
    )
    cluster = ClusterTopology(state, {A: record(A)}, frozenset({"TABLETS"}), True)
    (row,) = topology_rows(cluster, 12, "3.0.8")
    assert row["topology_request"] is None and row["request_id"] is None
    assert row["global_topology_request"] == "keyspace_rf_change"
    assert row["global_topology_request_id"] == change.request_id
    (req,) = topology_requests_rows(cluster)
    assert (
        req["request_type"] == "keyspace_rf_change"
        and req["initiating_host"] == A
        and req["target_host"] is None
    )
    assert req["new_keyspace_rf_change_ks_name"] == "ks"
    assert req["new_keyspace_rf_change_data"] == {"class": NTS, "dc1": "2"}
