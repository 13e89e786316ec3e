"""TabletStore against the pure-Python model: reads, order independence, paging, copies."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterable
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tablet_store_model import ModelStore
from tablet_store_strategies import KEYS, NOW, SETTINGS, all_reads, apply_in_batches, mutations, slices

from tabletdb.dht import FULL_RING, TokenRange, token_of
from tabletdb.storage.mutation import Cell, ClusteringSlice, Mutation, RowMarker, RowWrite
from tabletdb.storage.reconcile import PartitionData
from tabletdb.storage.tablet_store import ScanPosition, TabletStore


@SETTINGS
@given(st.lists(mutations(), max_size=12), st.integers(0, 2**32), st.integers(NOW - 3, NOW + 3))
def test_reads_match_model(muts: list[Mutation], seed: int, now: int) -> None:
    model = ModelStore()
    model.apply(muts)
    with TabletStore(":memory:") as store:
        apply_in_batches(store, muts, random.Random(seed))
        assert all_reads(store, now) == all_reads(model, now)


@SETTINGS
@given(
    st.lists(mutations(), max_size=12),
    slices,
    st.booleans(),
    st.one_of(st.none(), st.integers(0, 3)),
    st.booleans(),
)
def test_slices_match_model(
    muts: list[Mutation], slice_: ClusteringSlice, reverse: bool, limit: int | None, include_static: bool
) -> None:
    model = ModelStore()
    model.apply(muts)
    with TabletStore(":memory:") as store:
        store.apply(muts)
        for pk in KEYS:
            got = store.read_partition(
                pk, NOW, slice_, reverse=reverse, limit=limit, include_static=include_static
            )
            assert got == model.read_partition(pk, NOW, slice_, reverse, limit, include_static)


@SETTINGS
@given(st.lists(mutations(), max_size=12), st.randoms(use_true_random=False))
def test_apply_order_does_not_matter(muts: list[Mutation], rnd: random.Random) -> None:
    shuffled = list(muts)
    rnd.shuffle(shuffled)
    with TabletStore(":memory:") as first, TabletStore(":memory:") as second:
        first.apply(muts)
        for m in shuffled:
            second.apply([m])
        second.apply(muts[: len(muts) // 2])  # re-delivery is harmless
        assert all_reads(first) == all_reads(second)
        assert list(first.mutations_in_range(FULL_RING)) == list(second.mutations_in_range(FULL_RING))


def _flatten(partitions: Iterable[PartitionData]) -> list[tuple[bytes, bool, bytes]]:
    rows: list[tuple[bytes, bool, bytes]] = []
    for p in partitions:
        if p.static_row is not None:
            rows.append((p.partition_key, True, b""))
        rows.extend((p.partition_key, False, r.clustering) for r in p.rows)
    return rows


@SETTINGS
@given(
    st.lists(mutations(), max_size=12),
    st.integers(1, 4),
    st.integers(-(2**63), 2**63 - 1),
    slices,
    st.one_of(st.none(), st.integers(1, 3)),
)
def test_scan_pages_concatenate_to_model_scan(
    muts: list[Mutation], page: int, split: int, slice_: ClusteringSlice, per_partition: int | None
) -> None:
    model = ModelStore()
    model.apply(muts)
    with TabletStore(":memory:") as store:
        store.apply(muts)
        for token_range in (FULL_RING, TokenRange(split, 2**63 - 1), TokenRange(split, -(2**63) + 5)):
            got: list[PartitionData] = []
            after: ScanPosition | None = None
            for _ in range(200):
                result = store.scan(
                    token_range,
                    NOW,
                    limit=page,
                    after=after,
                    clustering=slice_,
                    per_partition_limit=per_partition,
                )
                assert sum(p.row_count for p in result.partitions) <= page
                got.extend(result.partitions)
                after = result.next_position
                if after is None:
                    break
            assert after is None
            expected = model.scan_all(token_range, NOW, slice_, per_partition)
            assert _flatten(got) == _flatten(expected)


@SETTINGS
@given(st.lists(mutations(), max_size=10), st.integers(-(2**63) + 1, 2**63 - 2))
def test_copy_by_token_range_and_cleanup(muts: list[Mutation], split: int) -> None:
    low, high = TokenRange(-(2**63), split), TokenRange(split, 2**63 - 1)
    with TabletStore(":memory:") as source, TabletStore(":memory:") as left, TabletStore(":memory:") as right:
        source.apply(muts)
        left.apply(source.mutations_in_range(low))
        right.apply(source.mutations_in_range(high))
        for pk, want in zip(KEYS, all_reads(source)):
            target = left if low.contains(token_of(pk)) else right
            other = right if target is left else left
            assert target.read_partition(pk, NOW) == want
            assert other.read_partition(pk, NOW) is None
        source.delete_token_range(low)
        assert [p.partition_key for p in source.scan(low, NOW, limit=100).partitions] == []
        assert all_reads(source) == [right.read_partition(pk, NOW) for pk in KEYS]


def test_snapshot_install_and_reopen() -> None:
    muts = [
        Mutation(
            b"a", token_of(b"a"), rows=(RowWrite(b"\x01", marker=RowMarker(5), cells=(Cell("v", b"1", 5),)),)
        ),
        Mutation(b"b", token_of(b"b"), partition_tombstone=3),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tablet-0.db"
        with TabletStore(path) as store:
            store.apply(muts)
            image = store.snapshot_bytes()
            assert store.size_bytes() > 0
        with TabletStore(path) as reopened:
            expected = all_reads(reopened)
            assert expected[0] is not None
        with TabletStore.install(Path(tmp) / "copy.db", image) as copy:
            assert all_reads(copy) == expected
