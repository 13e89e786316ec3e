"""The replica wire format: every mutation and read answer survives msgpack unchanged."""

from __future__ import annotations

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.wire import (
    digest_of,
    mutation_from_plain,
    mutation_to_plain,
    partition_from_plain,
    partition_to_plain,
    position_from_plain,
    position_to_plain,
)
from tabletdb.storage.mutation import (
    Bound,
    Cell,
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
)
from tabletdb.storage.tablet_store import ScanPosition, TabletStore

NOW = 1000
KEYS = [b"a", b"b", b"c"]
CLUSTERINGS = [b"", b"\x01", b"\x02", b"\xff"]
timestamps = st.integers(-(2**62), 2**62)


@st.composite
def cells(draw: st.DrawFn) -> Cell:
    column = draw(st.sampled_from(["v", "m"]))
    path = draw(st.binary(max_size=3)) if column == "m" else b""
    value = draw(st.one_of(st.none(), st.binary(max_size=8)))
    if value is not None and draw(st.booleans()):
        return Cell(column, value, draw(timestamps), path, ttl=draw(st.integers(1, 9)), expiry=NOW + 5)
    return Cell(column, value, draw(timestamps), path)


@st.composite
def rows(draw: st.DrawFn) -> RowWrite:
    if draw(st.booleans()):
        return RowWrite(static=True, cells=tuple(draw(st.lists(cells(), max_size=2))))
    marker = draw(st.one_of(st.none(), st.builds(RowMarker, timestamps)))
    return RowWrite(
        clustering=draw(st.sampled_from(CLUSTERINGS)),
        marker=marker,
        tombstone=draw(st.one_of(st.none(), timestamps)),
        cells=tuple(draw(st.lists(cells(), max_size=3))),
        collection_tombstones=tuple(draw(st.lists(st.tuples(st.just("m"), timestamps), max_size=1))),
    )


bounds = st.one_of(st.none(), st.builds(Bound, st.sampled_from(CLUSTERINGS), st.booleans()))


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    pk = draw(st.sampled_from(KEYS))
    return Mutation(
        pk,
        token_of(pk),
        partition_tombstone=draw(st.one_of(st.none(), timestamps)),
        rows=tuple(draw(st.lists(rows(), max_size=3))),
        range_tombstones=tuple(
            draw(st.lists(st.builds(RangeTombstone, st.builds(ClusteringSlice, bounds, bounds), timestamps)))
        ),
    )


def _through_msgpack(value: object) -> object:
    return msgpack.unpackb(msgpack.packb(value, use_bin_type=True), raw=False)


@settings(max_examples=200, deadline=None)
@given(mutations())
def test_mutation_round_trip(m: Mutation) -> None:
    assert mutation_from_plain(_through_msgpack(mutation_to_plain(m))) == m  # type: ignore[arg-type]


@settings(max_examples=50, deadline=None)
@given(st.lists(mutations(), max_size=6))
def test_read_answers_round_trip_and_digest_sees_versions(ms: list[Mutation]) -> None:
    with TabletStore(":memory:") as store:
        store.apply(ms)
        for data in (store.read_partition(k, NOW) for k in KEYS):
            if data is None:
                continue
            plain = partition_to_plain(data)
            assert partition_from_plain(_through_msgpack(plain)) == data  # type: ignore[arg-type]
            assert digest_of(_through_msgpack([plain]), None) == digest_of([plain], None)  # type: ignore[arg-type]


def test_digest_differs_when_only_a_write_timestamp_differs() -> None:
    a = [[b"k", 1, None, [[b"c", False, [10, None], [["v", b"", b"x", 10, None]]]]]]
    b = [[b"k", 1, None, [[b"c", False, [10, None], [["v", b"", b"x", 11, None]]]]]]
    assert digest_of(a, None) != digest_of(b, None)
    assert digest_of(a, None) != digest_of(a, [1, b"k", None, 0])


def test_scan_position_round_trip() -> None:
    for pos in (None, ScanPosition(5, b"k"), ScanPosition(-3, b"", b"\x01", 2)):
        assert position_from_plain(_through_msgpack(position_to_plain(pos))) == pos  # type: ignore[arg-type]
