"""Compaction never changes what reads return, now or after later writes."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tablet_store_model import ModelStore
from tablet_store_strategies import KEYS, NOW, SETTINGS, all_reads, mutations

from tabletdb.dht import FULL_RING, token_of
from tabletdb.replica.load_stats import file_bytes
from tabletdb.storage.compaction import Garbage
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.tablet_store import TabletStore


@SETTINGS
@given(st.lists(mutations(), max_size=10), st.lists(mutations(), max_size=6), st.integers(NOW - 3, NOW + 3))
def test_purging_shadowed_data_is_invisible(before: list[Mutation], after: list[Mutation], now: int) -> None:
    model = ModelStore()
    model.apply(before + after)
    with TabletStore(":memory:") as store:
        store.apply(before)
        store.compact(NOW)
        store.apply(after)
        assert all_reads(store, now) == all_reads(model, now)


@SETTINGS
@given(st.lists(mutations(), max_size=10), st.integers(NOW, NOW + 3))
def test_gc_drops_tombstones_without_resurrection(muts: list[Mutation], now: int) -> None:
    model = ModelStore()
    model.apply(muts)
    with TabletStore(":memory:") as store:
        store.apply(muts)
        store.compact(NOW, gc_before_ts=10**6)
        assert all_reads(store, now) == all_reads(model, now)
        for m in store.mutations_in_range(FULL_RING):
            assert m.partition_tombstone is None and not m.range_tombstones
            for row in m.rows:
                assert row.tombstone is None and not row.collection_tombstones
                assert all(c.value is not None and (c.expiry == 0 or c.expiry > NOW) for c in row.cells)


def test_compaction_shrinks_deleted_partitions() -> None:
    with TabletStore(":memory:") as store:
        rows = tuple(
            RowWrite(bytes([i]), marker=RowMarker(1), cells=(Cell("v", b"x" * 100, 1),)) for i in range(50)
        )
        store.apply([Mutation(pk, token_of(pk), rows=rows) for pk in KEYS])
        store.apply([Mutation(pk, token_of(pk), partition_tombstone=2) for pk in KEYS])
        store.compact(NOW)
        exported = list(store.mutations_in_range(FULL_RING))
        assert [m.partition_tombstone for m in exported] == [2] * len(KEYS)
        assert all(m.rows == () for m in exported)
        store.compact(NOW, gc_before_ts=3)
        assert list(store.mutations_in_range(FULL_RING)) == []


@SETTINGS
@given(
    st.lists(mutations(), max_size=10),
    st.integers(1, 3),
    st.sampled_from([None, 2, 10**6]),
    st.integers(NOW, NOW + 3),
)
def test_compaction_in_chunks_equals_compaction_of_the_whole(
    muts: list[Mutation], chunk: int, gc_before_ts: int | None, now: int
) -> None:
    """A chunk of partitions per transaction drops exactly what one transaction drops."""
    with TabletStore(":memory:") as whole, TabletStore(":memory:") as chunked:
        whole.apply(muts)
        chunked.apply(muts)
        whole.compact(NOW, gc_before_ts)
        chunked.compact_written(NOW, gc_before_ts, chunk_partitions=chunk)
        assert list(chunked.mutations_in_range(FULL_RING)) == list(whole.mutations_in_range(FULL_RING))
        assert all_reads(chunked, now) == all_reads(whole, now)


def test_garbage_counts_tombstones_and_what_gc_may_drop(tmp_path: Path) -> None:
    with TabletStore(tmp_path / "t.db") as store:
        live = (RowWrite(b"r", marker=RowMarker(1), cells=(Cell("v", b"x", 1),)),)
        store.apply([Mutation(pk, token_of(pk), rows=live) for pk in KEYS])
        assert store.measure_garbage(NOW, 10**6) == Garbage(entries=3 * len(KEYS), tombstones=0, purgeable=0)
        store.apply([Mutation(KEYS[0], token_of(KEYS[0]), partition_tombstone=5)])
        assert store.measure_garbage(NOW, 3) == Garbage(3 * len(KEYS), tombstones=1, purgeable=0)
        assert store.measure_garbage(NOW, 6).purgeable == 1
        store.compact_written(NOW, 6)
        assert store.measure_garbage(NOW, 6) == Garbage(3 * (len(KEYS) - 1), 0, 0)


def test_compaction_frees_pages_the_size_measure_excludes(tmp_path: Path) -> None:
    """Deleted and compacted rows leave free pages: the tablet's measured bytes drop."""
    path = tmp_path / "t.db"
    with TabletStore(path) as store:
        for batch in range(20):
            store.apply(
                [
                    Mutation(
                        k,
                        token_of(k),
                        rows=(RowWrite(b"r", marker=RowMarker(1), cells=(Cell("v", b"x" * 500, 1),)),),
                    )
                    for k in (f"{batch}-{i}".encode() for i in range(50))
                ]
            )
        full = file_bytes(path)
        keys = [f"{batch}-{i}".encode() for batch in range(20) for i in range(50)]
        store.apply([Mutation(k, token_of(k), partition_tombstone=2) for k in keys])
        store.compact_written(NOW, gc_before_ts=3, chunk_partitions=64)
        store.checkpoint()
        assert file_bytes(path) < full // 10
        assert list(store.mutations_in_range(FULL_RING)) == []
