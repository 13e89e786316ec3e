"""TabletMap: lookup by token, ranges, split/merge, replacement of one tablet."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.dht import MAX_TOKEN, MIN_TOKEN, TokenRange, tablet_id_of, tablet_last_tokens
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage

TABLE = uuid.UUID(int=7)
H1, H2, H3 = (uuid.UUID(int=i) for i in (1, 2, 3))
tokens = st.integers(MIN_TOKEN, MAX_TOKEN)


def even_map(count: int) -> TabletMap:
    return TabletMap.even(TABLE, [(TabletReplica(H1, i % 2), TabletReplica(H2, 0)) for i in range(count)])


def test_even_map_boundaries_and_lookup() -> None:
    tm = even_map(4)
    assert tm.tablet_count == 4
    assert list(tm.last_tokens) == tablet_last_tokens(4)
    assert tm.tablet_id_of(MIN_TOKEN) == 0
    assert tm.tablet_id_of(-1) == 1
    assert tm.tablet_id_of(0) == 2
    assert tm.tablet_for(MAX_TOKEN) is tm.tablets[3]
    assert tm.range_of(0) == TokenRange(MIN_TOKEN, tm.last_tokens[0])
    assert tm.range_of(2) == TokenRange(-1, tm.last_tokens[2])


@given(tokens, st.integers(0, 10))
def test_fast_lookup_agrees_with_dht(token: int, k: int) -> None:
    assert even_map(1 << k).tablet_id_of(token) == tablet_id_of(token, 1 << k)


@given(tokens)
def test_irregular_map_uses_search(token: int) -> None:
    tm = TabletMap(TABLE, (TabletInfo(-5, ()), TabletInfo(100, ()), TabletInfo(MAX_TOKEN, ())))
    tid = tm.tablet_id_of(token)
    assert tm.range_of(tid).contains(token) or (tid == 0 and token == MIN_TOKEN)


@pytest.mark.parametrize(
    ("tablets", "message"),
    [
        ((), "no tablets"),
        ((TabletInfo(5, ()), TabletInfo(5, ()), TabletInfo(MAX_TOKEN, ())), "must increase"),
        ((TabletInfo(5, ()),), "must end at"),
    ],
)
def test_invalid_maps(tablets: tuple[TabletInfo, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TabletMap(TABLE, tablets)


@given(st.integers(0, 8), tokens)
def test_split_matches_the_next_power_of_two(k: int, token: int) -> None:
    tm = even_map(1 << k)
    split = tm.split()
    assert list(split.last_tokens) == tablet_last_tokens(2 << k)
    assert split.resize_seq_number == tm.resize_seq_number + 1
    parent = tm.tablet_id_of(token)
    child = split.tablet_id_of(token)
    assert child // 2 == parent
    assert split.tablets[child].replicas == tm.tablets[parent].replicas


@given(st.integers(0, 8))
def test_merge_inverts_split(k: int) -> None:
    tm = even_map(1 << k)
    assert tm.split().merge().tablets == tm.tablets


def test_split_of_irregular_map_halves_each_range() -> None:
    tm = TabletMap(TABLE, (TabletInfo(-5, ()), TabletInfo(MAX_TOKEN, ())))
    split = tm.split()
    assert split.tablet_count == 4
    for i in range(2):
        parent = tm.range_of(i)
        left, right = split.range_of(2 * i), split.range_of(2 * i + 1)
        assert left.start == parent.start and right.end == parent.end and left.end == right.start
        assert abs(left.width() - right.width()) <= 1


def test_merge_requires_colocated_siblings_and_even_count() -> None:
    tm = TabletMap.even(TABLE, [(TabletReplica(H1, 0),), (TabletReplica(H2, 0),)])
    with pytest.raises(ValueError, match="not co-located"):
        tm.merge()
    with pytest.raises(ValueError, match="even count"):
        even_map(1).merge()


def test_split_and_merge_refused_during_migration() -> None:
    tm = even_map(2)
    moving = TabletInfo(
        tm.last_tokens[0],
        tm.tablets[0].replicas,
        new_replicas=(TabletReplica(H3, 1), TabletReplica(H2, 0)),
        stage=TransitionStage.STREAMING,
        transition=TransitionKind.MIGRATION,
    )
    migrating = tm.with_tablet(0, moving)
    assert migrating.tablets[0].in_transition
    assert migrating.replica_load()[TabletReplica(H3, 1)] == 1
    with pytest.raises(ValueError, match=r"tablets \[0\] are in transition"):
        migrating.split()
    with pytest.raises(ValueError, match="in transition"):
        migrating.merge()


def test_with_tablet_keeps_boundaries() -> None:
    tm = even_map(2)
    with pytest.raises(ValueError, match="move the boundary"):
        tm.with_tablet(0, TabletInfo(0, ()))
    with pytest.raises(ValueError, match="out of range"):
        tm.with_tablet(2, TabletInfo(MAX_TOKEN, ()))


def test_maps_are_values() -> None:
    assert even_map(4) == even_map(4)
    assert even_map(4) != even_map(2)
    assert even_map(2).tablets[0].replica_hosts() == (H1, H2)
