"""Round-trip and rejection tests for the Raft msgpack codec."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.raft import codec
from tabletdb.raft.types import (
    ConfChange,
    ConfChangeSingle,
    ConfChangeType,
    ConfState,
    Entry,
    EntryKind,
    HardState,
    Message,
    MessageType,
    Snapshot,
    SnapshotMeta,
)

u64 = st.integers(min_value=0, max_value=2**63 - 1)
ids = st.frozensets(st.integers(min_value=1, max_value=1000), max_size=5)
entries = st.builds(Entry, term=u64, index=u64, kind=st.sampled_from(EntryKind), data=st.binary(max_size=64))
conf_states = st.builds(ConfState, voters=ids, learners=ids, voters_outgoing=ids)
snapshots = st.builds(
    Snapshot, meta=st.builds(SnapshotMeta, index=u64, term=u64, conf=conf_states), data=st.binary(max_size=64)
)
messages = st.builds(
    Message,
    type=st.sampled_from(MessageType),
    src=u64,
    dst=u64,
    term=u64,
    log_term=u64,
    index=u64,
    entries=st.lists(entries, max_size=4).map(tuple),
    commit=u64,
    reject=st.booleans(),
    reject_hint=u64,
    snapshot=st.none() | snapshots,
    context=st.binary(max_size=16),
)
conf_changes = st.builds(
    ConfChange,
    changes=st.lists(
        st.builds(ConfChangeSingle, type=st.sampled_from(ConfChangeType), node=u64), max_size=4
    ).map(tuple),
    leave_joint=st.booleans(),
)
hard_states = st.builds(HardState, term=u64, vote=st.none() | u64, commit=u64)


@given(messages)
def test_message_round_trip(m: Message) -> None:
    assert codec.decode_message(codec.encode_message(m)) == m


@given(entries)
def test_entry_round_trip(e: Entry) -> None:
    assert codec.decode_entry(codec.encode_entry(e)) == e


@given(snapshots)
def test_snapshot_round_trip(s: Snapshot) -> None:
    assert codec.decode_snapshot(codec.encode_snapshot(s)) == s


@given(conf_changes)
def test_conf_change_round_trip(cc: ConfChange) -> None:
    assert codec.decode_conf_change(codec.encode_conf_change(cc)) == cc


@given(hard_states)
def test_hard_state_round_trip(hs: HardState) -> None:
    assert codec.decode_hard_state(codec.encode_hard_state(hs)) == hs


@given(conf_states)
def test_conf_state_round_trip(cs: ConfState) -> None:
    assert codec.decode_conf_state(codec.encode_conf_state(cs)) == cs


def test_encoding_is_deterministic_for_sets() -> None:
    a = ConfState(voters=frozenset([3, 1, 2]))
    b = ConfState(voters=frozenset([2, 3, 1]))
    assert codec.encode_conf_state(a) == codec.encode_conf_state(b)


@pytest.mark.parametrize(
    "data",
    [
        b"\xc1",  # reserved msgpack byte
        msgpack.packb([1, 2]),  # too short
        msgpack.packb([99, 1, 2, 3, 0, 0, [], 0, False, 0, None, b""]),  # unknown message type
        msgpack.packb([4, 1, 2, 3, 0, 0, [[1, 1, 0, "text"]], 0, False, 0, None, b""]),  # str data
        msgpack.packb([4, 1, 2, 3, 0, 0, [], 0, 1, 0, None, b""]),  # reject not a bool
    ],
)
def test_malformed_messages_raise_codec_error(data: bytes) -> None:
    with pytest.raises(codec.CodecError):
        codec.decode_message(data)


def test_codec_error_names_the_field() -> None:
    with pytest.raises(codec.CodecError, match=r"Entry\.kind"):
        codec.decode_entry(msgpack.packb([1, 1, 42, b""]))
