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
