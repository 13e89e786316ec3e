"""Hypothesis strategies and helpers shared by the TabletStore tests (small domains, many ties)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from tablet_store_model import ModelStore

from tabletdb.dht import token_of
from tabletdb.storage.mutation import (
    Bound,
    Cell,
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
)
from tabletdb.storage.reconcile import PartitionData
from tabletdb.storage.tablet_store import TabletStore

NOW = 1000
KEYS = [b"a", b"b", b"c", b"d"]
CLUSTERINGS = [b"", b"\x01", b"\x01\x00", b"\x02", b"\xff"]
timestamps = st.integers(1, 6)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cells(draw: st.DrawFn) -> Cell:
    column = draw(st.sampled_from(["v", "w", "m"]))
    path = draw(st.sampled_from([b"k1", b"k2"])) if column == "m" else b""
    value = draw(st.one_of(st.none(), st.sampled_from([b"", b"x", b"y"])))
    ts = draw(timestamps)
    if value is not None and draw(st.booleans()):
        expiry = draw(st.integers(NOW - 2, NOW + 2))
        return Cell(column, value, ts, path, ttl=draw(st.integers(1, 3)), expiry=expiry)
    return Cell(column, value, ts, path)


@st.composite
def row_writes(draw: st.DrawFn) -> RowWrite:
    if draw(st.integers(0, 5)) == 0:
        return RowWrite(static=True, cells=tuple(draw(st.lists(cells(), max_size=2))))
    marker = None
    if draw(st.booleans()):
        ts = draw(timestamps)
        marker = RowMarker(ts, 2, NOW + draw(st.integers(-1, 1))) if draw(st.booleans()) else RowMarker(ts)
    return RowWrite(
        clustering=draw(st.sampled_from(CLUSTERINGS)),
        marker=marker,
        tombstone=draw(st.one_of(st.none(), timestamps)) if draw(st.integers(0, 4)) == 0 else None,
        cells=tuple(draw(st.lists(cells(), max_size=3))),
        collection_tombstones=(("m", draw(timestamps)),) if draw(st.integers(0, 4)) == 0 else (),
    )


bounds = st.one_of(st.none(), st.builds(Bound, st.sampled_from(CLUSTERINGS), st.booleans()))
slices = st.builds(ClusteringSlice, bounds, bounds)


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    pk = draw(st.sampled_from(KEYS))
    return Mutation(
        pk,
        token_of(pk),
        partition_tombstone=draw(timestamps) if draw(st.integers(0, 6)) == 0 else None,
        rows=tuple(draw(st.lists(row_writes(), max_size=3))),
        range_tombstones=tuple(
            RangeTombstone(draw(slices), draw(timestamps)) for _ in range(draw(st.integers(0, 1)))
        ),
    )


def all_reads(store: TabletStore | ModelStore, now: int = NOW) -> list[PartitionData | None]:
    if isinstance(store, ModelStore):
        return [store.read_partition(pk, now, ClusteringSlice()) for pk in KEYS]
    return [store.read_partition(pk, now) for pk in KEYS]


def apply_in_batches(store: TabletStore, muts: list[Mutation], rnd: random.Random) -> None:
    i = 0
    while i < len(muts):
        size = rnd.randint(1, 4)
        store.apply(muts[i : i + size])
        i += size
