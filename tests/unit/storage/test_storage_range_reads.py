"""Counts and value pages decided in SQL (``storage.range_reads``) against the general scan.

The general scan (``TabletStore.scan``, liveness in Python) is the reference: on random data with
tombstones of every kind, TTLs around ``now`` and ties, the SQL count must equal the rows a full
scan returns, and the value pages, concatenated from any page size, the scan's regular rows.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from tablet_store_strategies import NOW, SETTINGS, mutations

from tabletdb.dht.token import FULL_RING, MAX_TOKEN, MIN_TOKEN, TokenRange
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.range_reads import ValuesRow
from tabletdb.storage.tablet_store import ScanPosition, TabletStore

COLUMNS = ("v", "w", "m")


def _plain(m: Mutation, rare: bool) -> Mutation:
    """``m`` or, unless ``rare``, ``m`` without static rows, range and collection tombstones: the
    partitions the SQL decides by itself (flags 0)."""
    if rare:
        return m
    rows = tuple(
        RowWrite(r.clustering, False, r.marker, r.tombstone, r.cells, ()) for r in m.rows if not r.static
    )
    return Mutation(m.partition_key, m.token, m.partition_tombstone, rows, ())


def _store(muts: list[Mutation], rare: list[bool]) -> TabletStore:
    store = TabletStore(":memory:")
    for m, r in zip(muts, rare):
        store.apply([_plain(m, r)])
    return store


def _scanned(store: TabletStore, now: int, token_range: TokenRange = FULL_RING) -> list[object]:
    page = store.scan(token_range, now, limit=10_000)
    assert page.next_position is None
    return list(page.partitions)


def _expected_values(store: TabletStore, now: int) -> list[ValuesRow]:
    out = []
    for data in _scanned(store, now):
        for row in data.rows:  # type: ignore[attr-defined]
            found: dict[str, bytes] = {}
            for cell in row.cells:
                if cell.path == b"" and cell.column not in found:
                    found[cell.column] = cell.value
            out.append((data.token, data.partition_key, row.clustering, tuple(found.get(c) for c in COLUMNS)))  # type: ignore[attr-defined]
    return out


@SETTINGS
@given(
    st.lists(st.tuples(mutations(), st.integers(0, 4)), max_size=14),
    st.integers(NOW - 3, NOW + 3),
)
def test_count_equals_full_scan(pairs: list[tuple[Mutation, int]], now: int) -> None:
    store = _store([m for m, _ in pairs], [r == 0 for _, r in pairs])
    with store:
        expected = sum(d.row_count for d in _scanned(store, now))  # type: ignore[attr-defined]
        assert store.count_live(FULL_RING, now) == expected


@SETTINGS
@given(
    st.lists(st.tuples(mutations(), st.integers(0, 4)), max_size=14),
    st.integers(NOW - 3, NOW + 3),
    st.integers(1, 5),
)
def test_value_pages_concatenate_to_the_scan(pairs: list[tuple[Mutation, int]], now: int, page: int) -> None:
    store = _store([m for m, _ in pairs], [r == 0 for _, r in pairs])
    with store:
        expected = _expected_values(store, now)
        got = []
        after: ScanPosition | None = None
        for _ in range(100):
            rows, after = store.live_values(FULL_RING, now, COLUMNS, limit=page, after=after)
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
        rows, nxt = store.live_values(FULL_RING, NOW, ("v",), limit=10)
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
