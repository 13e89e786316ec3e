"""The cluster-wide group0 value: entry envelopes, apply outcomes, snapshots."""

from __future__ import annotations

import uuid

from tabletdb.group0.cluster_state import (
    ClusterState,
    SchemaEntry,
    apply_entry,
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
)
from tabletdb.group0.state import SchemaCommand
from tabletdb.group0.topology import JoinCommand, NodeRecord
from tabletdb.schema.ddl_common import Change, SchemaChangeEvent, Target

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
    state, applied = apply_entry(state, first)
    assert applied.took_effect and applied.events == (EVENT,)
    assert state.state_id == first.command_id
    after, applied = apply_entry(state, second)
    assert after == state
    assert not applied.took_effect and applied.events == ()


def test_join_reports_a_new_member_once() -> None:
    state, applied = apply_entry(ClusterState(), join_entry(1))
    assert applied.joined is not None
    state, again = apply_entry(state, join_entry(1))
    assert again.took_effect and again.joined is None


def test_snapshot_round_trips_the_whole_state() -> None:
    state, _ = apply_entry(ClusterState(), join_entry(1))
    state, _ = apply_entry(state, schema_entry(state))
    assert decode_snapshot(encode_snapshot(state)) == state
    assert decode_snapshot(b"") == ClusterState()
