"""The cluster-wide group0 value: entry envelopes, apply outcomes, snapshots."""

from __future__ import annotations

import uuid
from dataclasses import replace

from tabletdb.group0.cluster_state import (
    BatchEntry,
    ClusterState,
    SchemaEntry,
    TopologyEntry,
    apply_entry,
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
)
from tabletdb.group0.state import SchemaCommand
from tabletdb.group0.topology import JoinCommand, NodeRecord
from tabletdb.schema.ddl_common import Change, SchemaChangeEvent, Target
from tabletdb.topology.commands import TopologyCommand
from tabletdb.topology.state import TopoNode
from tabletdb.topology.states import NodeState

EVENT = SchemaChangeEvent(Change.CREATED, Target.TABLE, "ks", "t")


def schema_entry(state: ClusterState) -> SchemaEntry:
    return SchemaEntry(SchemaCommand(state.state_id, uuid.uuid1(), ()), (EVENT,))


def join_entry(n: int) -> JoinCommand:
    r = NodeRecord(uuid.UUID(int=n << 90), f"10.0.0.{n}", f"10.0.0.{n}", "dc", "r", (1,), frozenset({"F"}))
    return JoinCommand(uuid.uuid4(), "c", r)


def test_schema_entry_round_trips_with_its_events() -> None:
    entry = schema_entry(ClusterState())
    assert decode_entry(encode_entry(entry)) == entry


def test_join_entry_round_trips() -> None:
    entry = join_entry(1)
    assert decode_entry(encode_entry(entry)) == entry


def test_schema_command_on_a_stale_state_is_a_noop_without_events() -> None:
    state = ClusterState()
    first, second = schema_entry(state), schema_entry(state)
    state, (applied,) = apply_entry(state, first)
    assert applied.took_effect and applied.events == (EVENT,)
    assert state.state_id == first.command_id
    after, (applied,) = apply_entry(state, second)
    assert after == state
    assert not applied.took_effect and applied.events == ()


def test_join_reports_a_new_member_once() -> None:
    state, (applied,) = apply_entry(ClusterState(), join_entry(1))
    assert applied.joined is not None
    state, (again,) = apply_entry(state, join_entry(1))
    assert again.took_effect and again.joined is None


def test_snapshot_round_trips_the_whole_state() -> None:
    state, _ = apply_entry(ClusterState(), join_entry(1))
    state, _ = apply_entry(state, schema_entry(state))
    assert decode_snapshot(encode_snapshot(state)) == state
    assert decode_snapshot(b"") == ClusterState()


def test_batch_applies_chained_commands_in_order_and_round_trips() -> None:
    state = ClusterState()
    first = schema_entry(state)
    second = SchemaEntry(SchemaCommand(first.command_id, uuid.uuid1(), ()), (EVENT,))
    batch = BatchEntry((first, second))
    assert decode_entry(encode_entry(batch)) == batch
    after, outcomes = apply_entry(state, batch)
    assert [a.took_effect for a in outcomes] == [True, True]
    assert after.state_id == second.command_id


def test_batch_built_on_a_stale_state_takes_no_effect_from_the_stale_command_on() -> None:
    state = ClusterState()
    winner = schema_entry(state)
    state, _ = apply_entry(state, winner)
    fresh = schema_entry(state)
    stale = SchemaEntry(SchemaCommand(uuid.uuid1(), uuid.uuid1(), ()), (EVENT,))
    chained = SchemaEntry(SchemaCommand(stale.command_id, uuid.uuid1(), ()), (EVENT,))
    after, outcomes = apply_entry(state, BatchEntry((fresh, stale, chained)))
    assert [a.took_effect for a in outcomes] == [True, False, False]
    assert after.state_id == fresh.command_id
    assert outcomes[2].events == ()


def test_a_node_that_left_is_no_member_any_more() -> None:
    state = ClusterState()
    for n in (1, 2):
        state, _ = apply_entry(state, join_entry(n))
    gone = join_entry(2).record.host_id
    topo = state.topology_state
    after = replace(topo.with_node(TopoNode(gone, NodeState.LEFT)), state_id=uuid.uuid1())
    state, (applied,) = apply_entry(
        state, TopologyEntry(TopologyCommand(topo.state_id, after, reason="left"))
    )
    assert applied.took_effect
    assert list(state.topology.members) == [join_entry(1).record.host_id]
    assert state.topology_state.state_of(gone) is NodeState.LEFT  # system.topology still shows it
    after_join, (rejoin,) = apply_entry(state, join_entry(2))  # a node that left never comes back
    assert not rejoin.took_effect and after_join == state
