"""Which local files take which part of an incoming tablet image (``replica.image_targets``)."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from tabletdb.dht.sharding import shard_of
from tabletdb.dht.token import FULL_RING, MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.replica.image_targets import MergeTarget, shard_runs, tablet_targets, vnode_targets
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica

HOST = uuid.uuid4()


def _map(count: int) -> TabletMap:
    return TabletMap.even(uuid.uuid4(), [[TabletReplica(HOST, 0)] for _ in range(count)])


def test_an_image_inside_a_local_tablet_is_taken_whole() -> None:
    tablets = _map(4)
    second = tablets.range_of(1)
    targets, covered = tablet_targets(tablets, {0, 1, 2, 3}, second)
    assert (targets, covered) == ([MergeTarget(second.end, None)], True)


def test_an_image_over_several_tablets_is_cut_and_missing_tablets_reported() -> None:
    tablets = _map(4)
    targets, covered = tablet_targets(tablets, {1, 2}, FULL_RING)
    assert not covered  # tablets 0 and 3 are not here: a load must not count this as done
    assert [t.token for t in targets] == [tablets.range_of(1).end, tablets.range_of(2).end]
    assert [t.pieces for t in targets] == [(tablets.range_of(1),), (tablets.range_of(2),)]


@pytest.mark.parametrize(("smp", "ignore_msb"), [(1, 12), (2, 0), (2, 12), (3, 3), (7, 12)])
def test_shard_runs_tile_the_range_and_each_run_is_its_shards(smp: int, ignore_msb: int) -> None:
    rnd = random.Random(smp * 100 + ignore_msb)
    for _ in range(20):
        a = rnd.randint(MIN_TOKEN, MAX_TOKEN - 1)
        b = rnd.randint(a + 1, MAX_TOKEN)
        runs = shard_runs(TokenRange(a, b), smp, ignore_msb)
        assert runs[0][1].start == a and runs[-1][1].end == b
        for (s1, r1), (s2, r2) in itertools.pairwise(runs):
            assert r1.end == r2.start and s1 != s2
        for shard, run in runs:
            for token in (run.start + 1, run.end, rnd.randint(run.start + 1, run.end)):
                assert shard_of(token, smp, ignore_msb) == shard


def test_vnode_targets_take_only_the_local_ranges_by_shard() -> None:
    local = [TokenRange(-1000, 0), TokenRange(5000, 6000)]
    targets = vnode_targets(local, FULL_RING, 2, 0)  # ignore_msb 0: shard 0 owns the negative half
    assert targets == [
        MergeTarget(-1, (TokenRange(-1000, -1),)),
        MergeTarget(0, (TokenRange(-1, 0), TokenRange(5000, 6000))),
    ]
