"""Last-write-wins tie rules, tombstone shadowing and TTL, on small explicit cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tabletdb.dht import FULL_RING, token_of
from tabletdb.storage.mutation import (
    Bound,
    Cell,
    ClusteringSlice,
    Mutation,
    RangeTombstone,
    RowMarker,
    RowWrite,
    prefix_end,
)
from tabletdb.storage.reconcile import LiveCell, winning_cell
from tabletdb.storage.tablet_store import StorageError, TabletCorrupt, TabletStore

PK = b"pk"


def write(*rows: RowWrite, tombstone: int | None = None, rts: tuple[RangeTombstone, ...] = ()) -> Mutation:
    return Mutation(PK, token_of(PK), tombstone, rows, rts)


def cell_value(store: TabletStore, now: int = 100, ck: bytes = b"r") -> LiveCell | None:
    data = store.read_partition(PK, now)
    if data is None:
        return None
    for row in data.rows:
        if row.clustering == ck and row.cells:
            return row.cells[0]
    return None


@pytest.mark.parametrize(
    ("first", "second", "winner"),
    [
        (Cell("v", b"a", 2), Cell("v", b"b", 1), 0),  # higher timestamp
        (Cell("v", b"a", 1), Cell("v", None, 1), 1),  # tie: tombstone beats live
        (Cell("v", b"a", 1), Cell("v", b"b", 1), 1),  # tie: greater value
        (Cell("v", b"a", 1), Cell("v", b"a", 1, ttl=5, expiry=200), 1),  # tie: expiring beats non-expiring
    ],
)
def test_last_write_wins_rules(first: Cell, second: Cell, winner: int) -> None:
    expected = (first, second)[winner]
    assert winning_cell(first, second) == expected
    assert winning_cell(second, first) == expected
    for order in ((first, second), (second, first)):
        with TabletStore(":memory:") as store:
            for c in order:
                store.apply([write(RowWrite(b"r", cells=(c,)))])
            got = cell_value(store, now=100)
            assert (got.value if got else None) == expected.value


def test_tombstones_shadow_older_and_equal_timestamps_only() -> None:
    with TabletStore(":memory:") as store:
        store.apply([write(RowWrite(b"r", marker=RowMarker(5), cells=(Cell("v", b"x", 5),)))])
        store.apply([write(tombstone=5)])
        assert store.read_partition(PK, 100) is None
        store.apply([write(RowWrite(b"r", cells=(Cell("v", b"y", 6),)))])
        got = cell_value(store)
        assert got is not None and got.value == b"y"


def test_row_marker_keeps_row_alive_without_cells() -> None:
    with TabletStore(":memory:") as store:
        store.apply([write(RowWrite(b"r", marker=RowMarker(5), cells=(Cell("v", None, 5),)))])
        data = store.read_partition(PK, 100)
        assert data is not None and data.rows[0].marker == (5, None) and data.rows[0].cells == ()
        store.apply([write(RowWrite(b"r", tombstone=5))])
        assert store.read_partition(PK, 100) is None


def test_ttl_expiry_and_remaining() -> None:
    with TabletStore(":memory:") as store:
        store.apply([write(RowWrite(b"r", cells=(Cell("v", b"x", 5, ttl=10, expiry=110),)))])
        got = cell_value(store, now=104)
        assert got is not None and got.ttl_remaining == 6
        assert store.read_partition(PK, 110) is None


def test_collection_tombstone_spares_newer_elements() -> None:
    with TabletStore(":memory:") as store:
        old = (Cell("m", b"1", 1, b"a"), Cell("m", b"2", 3, b"b"))
        store.apply([write(RowWrite(b"r", cells=old, collection_tombstones=(("m", 2),)))])
        data = store.read_partition(PK, 100)
        assert data is not None
        assert [c.path for c in data.rows[0].cells_of("m")] == [b"b"]


def test_range_tombstone_with_prefix_end() -> None:
    rows = tuple(RowWrite(ck, marker=RowMarker(1)) for ck in (b"\x01", b"\x01\x05", b"\x02", b"\x00\xff"))
    rt = RangeTombstone(ClusteringSlice(Bound(b"\x01"), prefix_end(b"\x01")), 1)
    with TabletStore(":memory:") as store:
        store.apply([write(*rows, rts=(rt,))])
        data = store.read_partition(PK, 100)
        assert data is not None and [r.clustering for r in data.rows] == [b"\x00\xff", b"\x02"]


def test_prefix_end() -> None:
    assert prefix_end(b"\x01\xff") == Bound(b"\x02", inclusive=False)
    assert prefix_end(b"\xff\xff") is None
    assert prefix_end(b"") is None


def test_invalid_values_rejected() -> None:
    with pytest.raises(ValueError, match="ttl and an expiry"):
        Cell("v", b"x", 1, ttl=5)
    with pytest.raises(ValueError, match="static row"):
        RowWrite(b"x", static=True)
    with TabletStore(":memory:") as store, pytest.raises(ValueError, match="limit"):
        store.scan(FULL_RING, 1, limit=0)


def test_install_refuses_to_overwrite_and_rejects_garbage(tmp_path: Path) -> None:
    target = tmp_path / "t.db"
    target.write_bytes(b"")
    with pytest.raises(StorageError, match="refusing"):
        TabletStore.install(target, b"")
    with pytest.raises(StorageError, match="cannot install"):
        TabletStore.install(tmp_path / "u.db", b"not a database" * 100)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.db"]


def test_open_rejects_foreign_files_and_versions(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(TabletCorrupt, match=r"garbage\.db is corrupt: file is not a database"):
        TabletStore(garbage)  # what the node sets aside and repairs (replica.storage_service)
    newer = tmp_path / "newer.db"
    with TabletStore(newer) as store:
        store._conn.execute("UPDATE meta SET value = 99 WHERE key = 'schema_version'")
    with pytest.raises(StorageError, match="schema version 99"):
        TabletStore(newer)
