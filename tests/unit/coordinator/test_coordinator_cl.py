"""Consistency-level counting against a direct model of each level's rule."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.coordinator.consistency import (
    ALL,
    ANY,
    EACH_QUORUM,
    LOCAL_ONE,
    LOCAL_QUORUM,
    LOCAL_SERIAL,
    ONE,
    QUORUM,
    SERIAL,
    THREE,
    TWO,
    ResponseTracker,
    check_available,
    read_targets,
)
from tabletdb.coordinator.placement import Replica
from tabletdb.cql.errors import InvalidRequest, Unavailable

LEVELS = [ANY, ONE, TWO, THREE, QUORUM, ALL, LOCAL_QUORUM, EACH_QUORUM, LOCAL_ONE]
LOCAL_DC = "dc1"


def model_met(cl: int, replicas: tuple[Replica, ...], acked: set[Replica]) -> bool:
    """Each level's rule written out plainly (Cassandra's definitions, RF = the replica set)."""
    per_dc_total: dict[str, int] = {}
    per_dc_acked: dict[str, int] = {}
    for r in replicas:
        per_dc_total[r.dc] = per_dc_total.get(r.dc, 0) + 1
        if r in acked:
            per_dc_acked[r.dc] = per_dc_acked.get(r.dc, 0) + 1
    n = len(acked)
    if cl in (ANY, ONE):
        return n >= 1
    if cl == TWO:
        return n >= 2
    if cl == THREE:
        return n >= 3
    if cl == QUORUM:
        return n > len(replicas) / 2
    if cl == ALL:
        return n == len(replicas)
    if cl == LOCAL_ONE:
        return per_dc_acked.get(LOCAL_DC, 0) >= 1
    if cl == LOCAL_QUORUM:
        return per_dc_acked.get(LOCAL_DC, 0) > per_dc_total.get(LOCAL_DC, 0) / 2
    assert cl == EACH_QUORUM
    return all(per_dc_acked.get(dc, 0) > total / 2 for dc, total in per_dc_total.items())


replica_sets = st.lists(st.sampled_from(["dc1", "dc2", "dc3"]), min_size=1, max_size=7).map(
    lambda dcs: tuple(Replica(uuid.UUID(int=i + 1), None, dc) for i, dc in enumerate(dcs))
)


@settings(max_examples=400, deadline=None)
@given(replica_sets, st.sampled_from(LEVELS), st.data())
def test_tracker_agrees_with_the_model(replicas: tuple[Replica, ...], cl: int, data: st.DataObject) -> None:
    tracker = ResponseTracker(cl, replicas, LOCAL_DC, write=True)
    order = data.draw(st.permutations(replicas))
    outcomes = data.draw(st.lists(st.booleans(), min_size=len(order), max_size=len(order)))
    acked: set[Replica] = set()
    failed: set[Replica] = set()
    for replica, ok in zip(order, outcomes):
        if ok:
            acked.add(replica)
            tracker.ack(replica)
        else:
            failed.add(replica)
            tracker.fail(replica)
        assert tracker.satisfied == model_met(cl, replicas, acked)
        assert tracker.impossible == (not model_met(cl, replicas, set(replicas) - failed))
        assert tracker.received <= tracker.block_for


@settings(max_examples=300, deadline=None)
@given(replica_sets, st.sampled_from(LEVELS), st.data())
def test_unavailable_exactly_when_the_live_replicas_cannot_meet_the_level(
    replicas: tuple[Replica, ...], cl: int, data: st.DataObject
) -> None:
    up = set(data.draw(st.lists(st.sampled_from(replicas), unique=True)))
    if model_met(cl, replicas, up):
        alive = check_available(cl, replicas, LOCAL_DC, lambda r: r in up, write=True)
        assert set(alive) == up
        if cl == ANY:
            return
        targets = read_targets(cl, replicas, LOCAL_DC, alive, lambda r: 0)
        assert model_met(cl, replicas, set(targets))
        for dropped in targets:  # minimal: no target is superfluous
            assert not model_met(cl, replicas, set(targets) - {dropped})
    else:
        with pytest.raises(Unavailable) as info:
            check_available(cl, replicas, LOCAL_DC, lambda r: r in up, write=True)
        assert info.value.required == ResponseTracker(cl, replicas, LOCAL_DC, write=True).block_for
        assert info.value.alive < info.value.required
        assert info.value.consistency == cl


def test_serial_is_for_reads_only_and_any_for_writes_only() -> None:
    replicas = tuple(Replica(uuid.UUID(int=i + 1), None, LOCAL_DC) for i in range(3))
    with pytest.raises(InvalidRequest, match="conditional updates"):
        ResponseTracker(SERIAL, replicas, LOCAL_DC, write=True)
    assert ResponseTracker(SERIAL, replicas, LOCAL_DC, write=False).block_for == 2
    assert ResponseTracker(LOCAL_SERIAL, replicas, LOCAL_DC, write=False).block_for == 2
    with pytest.raises(InvalidRequest, match="ANY ConsistencyLevel is only supported for writes"):
        ResponseTracker(ANY, replicas, LOCAL_DC, write=False)


def test_read_targets_prefer_the_most_preferred_replicas() -> None:
    replicas = tuple(Replica(uuid.UUID(int=i + 1), None, LOCAL_DC) for i in range(3))
    targets = read_targets(QUORUM, replicas, LOCAL_DC, list(replicas), lambda r: -r.host_id.int)
    assert targets == [replicas[2], replicas[1]]
