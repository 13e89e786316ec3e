"""The tablet-balancing flag: applied, encoded in entries and carried by snapshots."""

from __future__ import annotations

import uuid

import msgpack

from tabletdb.group0.balancing import BalancingCommand
from tabletdb.group0.cluster_state import (
    ClusterState,
    apply_entry,
    decode_entry,
    decode_snapshot,
    encode_entry,
    encode_snapshot,
)


def test_balancing_is_enabled_until_a_command_pauses_it() -> None:
    state = ClusterState()
    assert state.balancing_enabled
    paused, (applied,) = apply_entry(state, BalancingCommand(uuid.uuid4(), False))
    assert not paused.balancing_enabled and applied.took_effect
    again, _ = apply_entry(paused, BalancingCommand(uuid.uuid4(), False))  # a repeated proposal
    assert not again.balancing_enabled
    resumed, _ = apply_entry(again, BalancingCommand(uuid.uuid4(), True))
    assert resumed.balancing_enabled


def test_balancing_entry_round_trips() -> None:
    entry = BalancingCommand(uuid.uuid4(), False)
    assert decode_entry(encode_entry(entry)) == entry


def test_snapshot_keeps_a_paused_flag() -> None:
    paused, _ = apply_entry(ClusterState(), BalancingCommand(uuid.uuid4(), False))
    assert not decode_snapshot(encode_snapshot(paused)).balancing_enabled


def test_snapshot_from_before_the_flag_existed_means_enabled() -> None:
    body = msgpack.unpackb(encode_snapshot(ClusterState()), raw=False)
    del body["balancing"]
    assert decode_snapshot(msgpack.packb(body, use_bin_type=True)).balancing_enabled


def test_view_build_entries_round_trip_and_snapshots_keep_statuses() -> None:
    """A view build status (group0.view_builds) travels in entries and snapshots like the flag."""
    from tabletdb.group0.view_builds import SUCCESS, ViewBuildCommand, ViewBuildRecord

    entry = ViewBuildCommand(uuid.uuid1(), uuid.uuid4(), SUCCESS)
    assert decode_entry(encode_entry(entry)) == entry
    record = ViewBuildRecord(uuid.uuid4(), SUCCESS, (uuid.uuid4(),))
    state = ClusterState()
    state = ClusterState(metadata=type(state.metadata)(view_builds=(record,)))
    assert decode_snapshot(encode_snapshot(state)).metadata.view_builds == (record,)
