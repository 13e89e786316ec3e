"""Tablet maps survive the plain/msgpack round trip used by group0."""

from __future__ import annotations

import uuid

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage
from tabletdb.tablets.wire import tablet_map_from_plain, tablet_map_to_plain

replicas = st.lists(st.builds(TabletReplica, st.uuids(), st.integers(0, 63)), max_size=3).map(tuple)


@given(
    st.integers(0, 4),
    replicas,
    st.one_of(st.none(), replicas),
    st.sampled_from(TransitionStage),
    st.sampled_from(ResizeState),
    st.integers(0, 100),
)
def test_round_trip(
    k: int,
    current: tuple[TabletReplica, ...],
    new: tuple[TabletReplica, ...] | None,
    stage: TransitionStage,
    resize: ResizeState,
    seq: int,
) -> None:
    tm = TabletMap.even(uuid.uuid4(), [current] * (1 << k))
    if new is not None:
        tm = tm.with_tablet(0, TabletInfo(tm.last_tokens[0], current, new, stage, TransitionKind.MIGRATION))
    tm = TabletMap(tm.table_id, tm.tablets, resize, seq)
    plain = msgpack.unpackb(msgpack.packb(tablet_map_to_plain(tm)))
    assert tablet_map_from_plain(plain) == tm


def test_unknown_version_rejected() -> None:
    with pytest.raises(ValueError, match="wire version"):
        tablet_map_from_plain({"v": 99})
