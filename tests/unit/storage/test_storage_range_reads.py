"""Counts and value pages decided in SQL (``storage.range_reads``) against the general scan.

The general scan (``TabletStore.scan``, liveness in Python) is the reference: on random data with
tombstones of every kind, TTLs around ``now`` and ties, the SQL count must equal the rows a full
scan returns, and the value pages, concatenated from any page size, the scan's regular rows.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tablet_store_strategies import NOW, SETTINGS, mutations

from tabletdb.dht.token import FULL_RING, MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.storage.column_reads import ColumnRead, Shape
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.range_reads import ValuesRow
from tabletdb.storage.tablet_store import ScanPosition, TabletStore

COLUMNS: tuple[ColumnRead, ...] = (("v", Shape.CELL), ("w", Shape.CELL), ("m", Shape.CELL))
"""``m`` is the strategies' multi-cell column: as a single cell it has no value."""
SHAPED: tuple[ColumnRead, ...] = (
    ("m", Shape.VALUES),
    ("v", Shape.CELL),
    ("m", Shape.PATHS),
    ("m", Shape.PAIRS),
    ("m", Shape.TIMED),
)


def _plain(m: Mutation, kind: int) -> Mutation:
    """``m`` as it is (``kind`` 0: static rows, range tombstones, read by ``PartitionReader``),
    without static rows and range tombstones (1: collection tombstones, decided in SQL), or
    without all three (flags 0, decided in SQL): the partitions of each kind are common enough."""
    if kind == 0:
        return m
    rows = tuple(
        RowWrite(
            r.clustering, False, r.marker, r.tombstone, r.cells, r.collection_tombstones if kind == 1 else ()
        )
        for r in m.rows
        if not r.static
    )
    return Mutation(m.partition_key, m.token, m.partition_tombstone, rows, ())


def _store(muts: list[Mutation], kinds: list[int]) -> TabletStore:
    store = TabletStore(":memory:")
    for m, kind in zip(muts, kinds):
        store.apply([_plain(m, kind)])
    return store


def _scanned(store: TabletStore, now: int, token_range: TokenRange = FULL_RING) -> list[object]:
    page = store.scan(token_range, now, limit=10_000)
    assert page.next_position is None
    return list(page.partitions)


def _expected_values(store: TabletStore, now: int, columns: tuple[ColumnRead, ...]) -> list[ValuesRow]:
    out = []
    for data in _scanned(store, now):
        for row in data.rows:  # type: ignore[attr-defined]
            values = tuple(_expected_value(row.cells, name, shape) for name, shape in columns)
            out.append((data.token, data.partition_key, row.clustering, values))  # type: ignore[attr-defined]
    return out


def _expected_value(cells: Any, column: str, shape: Shape) -> bytes | None:
    """The general scan's live cells of ``column`` in ``column_reads``' layout, written out."""
    mine = [c for c in cells if c.column == column]
    if shape is Shape.CELL:
        return next((c.value for c in mine if c.path == b""), None)
    if not mine:
        return None

    def item(b: bytes) -> bytes:
        return len(b).to_bytes(4, "big") + b

    out = len(mine).to_bytes(4, "big")
    for c in sorted(mine, key=lambda c: c.path):
        parts = {
            Shape.VALUES: [c.value],
            Shape.PATHS: [c.path],
            Shape.PAIRS: [c.path, c.value],
            Shape.TIMED: [c.path, c.value, c.timestamp.to_bytes(8, "big", signed=True)],
        }[shape]
        out += b"".join(item(p) for p in parts)
    return out


@SETTINGS
@given(
    st.lists(st.tuples(mutations(), st.integers(0, 4)), max_size=14),
    st.integers(NOW - 3, NOW + 3),
)
def test_count_equals_full_scan(pairs: list[tuple[Mutation, int]], now: int) -> None:
    store = _store([m for m, _ in pairs], [min(r, 2) for _, r in pairs])
    with store:
        expected = sum(d.row_count for d in _scanned(store, now))  # type: ignore[attr-defined]
        assert store.count_live(FULL_RING, now) == expected


@SETTINGS
@given(
    st.lists(st.tuples(mutations(), st.integers(0, 4)), max_size=14),
    st.integers(NOW - 3, NOW + 3),
    st.integers(1, 5),
    st.sampled_from([COLUMNS, SHAPED]),
    st.booleans(),
)
def test_value_pages_concatenate_to_the_scan(
    pairs: list[tuple[Mutation, int]], now: int, page: int, columns: tuple[ColumnRead, ...], common: bool
) -> None:
    """Multi-cell columns (``SHAPED``) come back as the scan's live cells packed in path order,
    collection tombstones, deleted elements and expiring ones included. With ``common`` no
    partition is left to ``PartitionReader``: with four keys one rare write would otherwise flag
    most of them."""
    store = _store([m for m, _ in pairs], [max(int(common), min(r, 2)) for _, r in pairs])
    with store:
        expected = _expected_values(store, now, columns)
        got = []
        after: ScanPosition | None = None
        for _ in range(100):
            rows, after = store.live_values(FULL_RING, now, columns, limit=page, after=after)
            assert len(rows) <= page
            got += rows
            if after is None:
                break
        assert got == expected


def test_count_of_a_token_range_and_a_wrapping_one() -> None:
    keys = [bytes([i]) for i in range(40)]
    with TabletStore(":memory:") as store:
        store.apply([Mutation(k, _token(k), rows=(RowWrite(b"\x01", marker=RowMarker(1)),)) for k in keys])
        tokens = sorted(_token(k) for k in keys)
        mid = tokens[17]
        low, high = TokenRange(MIN_TOKEN, mid), TokenRange(mid, MAX_TOKEN)
        assert store.count_live(low, NOW) == 18
        assert store.count_live(high, NOW) == 22
        assert store.count_live(TokenRange(mid, tokens[0]), NOW) == 23  # wraps: 22 above, 1 at the start


def test_expired_and_deleted_rows_are_not_counted() -> None:
    key = b"k"
    token = _token(key)
    with TabletStore(":memory:") as store:
        store.apply(
            [
                Mutation(
                    key,
                    token,
                    rows=(
                        RowWrite(b"\x01", marker=RowMarker(5)),  # live
                        RowWrite(b"\x02", marker=RowMarker(5, 10, NOW - 1)),  # expired marker, no cells
                        RowWrite(b"\x03", cells=(Cell("v", b"x", 5, ttl=10, expiry=NOW + 1),)),  # live cell
                        RowWrite(b"\x04", cells=(Cell("v", None, 5),)),  # only a cell tombstone
                        RowWrite(b"\x05", marker=RowMarker(5), tombstone=5),  # deleted at its own time
                        RowWrite(b"\x06", marker=RowMarker(6), tombstone=5),  # written after the delete
                    ),
                )
            ]
        )
        assert store.count_live(FULL_RING, NOW) == 3
        rows, nxt = store.live_values(FULL_RING, NOW, (("v", Shape.CELL),), limit=10)
        assert [(r[2], r[3]) for r in rows] == [(b"\x01", (None,)), (b"\x03", (b"x",)), (b"\x06", (None,))]
        assert nxt is None
        store.apply([Mutation(key, token, partition_tombstone=5)])
        assert store.count_live(FULL_RING, NOW) == 1


def test_collection_tombstones_are_counted_in_sql_as_the_scan_counts_them() -> None:
    """Every INSERT into a table with a non-frozen collection writes a collection tombstone, so
    such partitions are the common case, not the rare one: the count decides them in SQL."""
    key = b"c"
    token = _token(key)
    rows = (
        RowWrite(
            b"\x01",
            marker=RowMarker(5),
            cells=(Cell("m", b"a", 5, path=b"1"),),
            collection_tombstones=(("m", 4),),
        ),
        RowWrite(
            b"\x02", cells=(Cell("m", b"a", 5, path=b"1"),), collection_tombstones=(("m", 5),)
        ),  # shadowed
        RowWrite(b"\x03", cells=(Cell("m", b"a", 6, path=b"1"),), collection_tombstones=(("m", 5),)),  # newer
        RowWrite(
            b"\x04",
            cells=(Cell("m", b"a", 5, path=b"1"), Cell("v", b"x", 5)),
            collection_tombstones=(("m", 9),),
        ),
        RowWrite(
            b"\x05", cells=(Cell("m", b"a", 5, path=b"1"),), collection_tombstones=(("v", 9),)
        ),  # other column
    )
    with TabletStore(":memory:") as store:
        store.apply([Mutation(key, token, rows=rows)])
        expected = sum(d.row_count for d in _scanned(store, NOW))  # type: ignore[attr-defined]
        assert expected == 4
        assert store.count_live(FULL_RING, NOW) == expected
        assert store.count_live(TokenRange(token - 1, token), NOW) == expected  # through the token index


def _token(key: bytes) -> int:
    from tabletdb.dht import token_of

    return token_of(key)


def test_collection_elements_come_back_packed_without_the_shadowed_ones() -> None:
    """An INSERT's collection tombstone shadows the elements written before it, not its own."""
    key = b"l"
    token = _token(key)
    rows = (
        RowWrite(
            b"\x01",
            marker=RowMarker(5),
            cells=(
                Cell("m", b"old", 3, path=b"\x00"),
                Cell("m", b"a", 5, path=b"\x02"),
                Cell("m", b"b", 5, path=b"\x01"),
            ),
            collection_tombstones=(("m", 4),),
        ),
        RowWrite(
            b"\x02",
            marker=RowMarker(5),
            cells=(Cell("m", b"gone", 4, path=b"\x01"),),
            collection_tombstones=(("m", 4),),
        ),
    )
    with TabletStore(":memory:") as store:
        store.apply([Mutation(key, token, rows=rows)])
        got, _ = store.live_values(FULL_RING, NOW, (("m", Shape.VALUES), ("m", Shape.PAIRS)), limit=10)
        item = lambda b: len(b).to_bytes(4, "big") + b  # noqa: E731
        count = lambda n: n.to_bytes(4, "big")  # noqa: E731
        assert [r[3] for r in got] == [
            (
                count(2) + item(b"b") + item(b"a"),
                count(2) + item(b"\x01") + item(b"b") + item(b"\x02") + item(b"a"),
            ),
            (None, None),
        ]
