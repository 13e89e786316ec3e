"""Compaction never changes what reads return, now or after later writes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tablet_store_model import ModelStore
from tablet_store_strategies import KEYS, NOW, SETTINGS, all_reads, mutations

from tabletdb.dht import FULL_RING, token_of
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
