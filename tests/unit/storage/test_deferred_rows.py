"""A tablet store's deferred rows: reads see them at once, wide reads and range deletes write them
first, a bad writer is dropped alone, a bad disk keeps them; and a store that defers reads the
same as one that writes every batch at once (hypothesis)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabletdb.dht.token import FULL_RING
from tabletdb.storage.batch_rows import BatchRows, batch_rows
from tabletdb.storage.tablet_store import StorageError, TabletStore
from tests.unit.storage.test_node_commit import put, value_of


def rows(*mutations: object) -> BatchRows:
    return batch_rows(mutations)  # type: ignore[arg-type]


def test_a_read_writes_deferred_rows_only_when_its_partition_has_some(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    store.defer_rows(rows(put(b"b", b"2", 1)))
    assert value_of(store, b"c") is None and store.deferred_count == 2
    assert value_of(store, b"a") == b"1" and store.deferred_count == 0
    assert value_of(store, b"b") == b"2"
    store.close()


@pytest.mark.parametrize(
    "reader", ["scan", "mutations_in_range", "snapshot_bytes", "size_bytes", "read_row_cells"]
)
def test_wider_reads_see_deferred_rows(tmp_path: Path, reader: str) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    if reader == "scan":
        assert [p.partition_key for p in store.scan(FULL_RING, 0, limit=10).partitions] == [b"a"]
    elif reader == "mutations_in_range":
        assert [m.partition_key for m in store.mutations_in_range(FULL_RING)] == [b"a"]
    elif reader == "snapshot_bytes":
        copy = TabletStore.install(tmp_path / "copy.db", store.snapshot_bytes())
        assert value_of(copy, b"a") == b"1"
        copy.close()
    elif reader == "size_bytes":
        store.size_bytes()
    else:
        assert store.read_row_cells(b"a", 0) == {"v": b"1"}
    assert store.deferred_count == 0
    store.close()


def test_a_range_delete_after_a_deferred_write_leaves_nothing_behind(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    assert store.delete_token_range(FULL_RING) == 1
    assert value_of(store, b"a") is None
    store.close()


def test_closing_writes_them_and_a_closed_store_refuses_more(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    store.close()
    with pytest.raises(StorageError, match="closed"):
        store.defer_rows(rows(put(b"b", b"1", 1)))
    again = TabletStore(tmp_path / "t.db")
    assert value_of(again, b"a") == b"1"
    again.close()


def test_discarded_rows_are_gone(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    store.discard_deferred()
    assert store.deferred_count == 0 and value_of(store, b"a") is None
    store.close()


def test_a_writer_that_fails_alone_is_dropped_and_the_others_are_written(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    bad_cell = (b"x", 1, b"", "v", b"", None, 0, b"1", 0, 0)  # no timestamp: NOT NULL fails
    store.defer_rows(rows(put(b"a", b"1", 1)))
    store.defer_rows(([(b"x", 5, None, 0)], [], [bad_cell], [], []))
    store.defer_rows(rows(put(b"b", b"2", 1)))
    store.write_deferred()
    assert store.deferred_count == 0
    assert value_of(store, b"a") == b"1" and value_of(store, b"b") == b"2" and value_of(store, b"x") is None
    store.close()


def test_when_every_writer_fails_the_rows_stay_deferred(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    store.defer_rows(rows(put(b"b", b"2", 1)))

    def disk_full(*_args: object, **_kw: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as m:
        m.setattr(TabletStore, "apply_rows", disk_full)
        with pytest.raises(StorageError, match="disk is full"):
            store.write_deferred()
    assert store.deferred_count == 2
    assert value_of(store, b"a") == b"1" and value_of(store, b"b") == b"2"
    store.close()


_op = st.one_of(
    st.tuples(
        st.just("write"),
        st.sampled_from([b"p", b"q", b"r"]),
        st.one_of(st.none(), st.binary(min_size=1, max_size=2)),
        st.integers(1, 4),
        st.sampled_from([0, 0, 5]),
    ),
    st.tuples(st.just("read"), st.sampled_from([b"p", b"q", b"r"])),
    st.tuples(st.just("scan")),
    st.tuples(st.just("write_deferred")),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, max_size=25))
def test_a_deferring_store_reads_like_one_that_writes_at_once(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[object, ...]]
) -> None:
    root = tmp_path_factory.mktemp("deferred")
    deferring, reference = TabletStore(root / "d.db"), TabletStore(root / "r.db")
    try:
        for op in ops:
            if op[0] == "write":
                _, pk, value, ts, ttl = op
                m = put(pk, value, ts, ttl)  # type: ignore[arg-type]
                deferring.defer_rows(rows(m))
                reference.apply([m])
            elif op[0] == "read":
                pk = op[1]
                for now in (0, 10):
                    assert deferring.read_partition(pk, now) == reference.read_partition(pk, now)  # type: ignore[arg-type]
            elif op[0] == "scan":
                assert deferring.scan(FULL_RING, 0, limit=10) == reference.scan(FULL_RING, 0, limit=10)
            else:
                deferring.write_deferred()
        for pk in (b"p", b"q", b"r"):
            assert deferring.read_partition(pk, 0) == reference.read_partition(pk, 0)
    finally:
        deferring.close()
        reference.close()


def test_one_partitions_mutations_write_only_that_partitions_deferred_rows(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)))
    assert store.partition_mutations(b"b") == [] and store.deferred_count == 1
    (found,) = store.partition_mutations(b"a")
    assert found.partition_key == b"a" and found.rows[0].cells[0].value == b"1"
    assert store.deferred_count == 0
    store.close()


def test_rows_kept_after_a_failed_write_keep_their_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TabletStore(tmp_path / "t.db")
    store.defer_rows(rows(put(b"a", b"1", 1)), 100)
    store.defer_rows(rows(put(b"b", b"2", 1)), 50)

    def disk_full(*_args: object, **_kw: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as m:
        m.setattr(TabletStore, "apply_rows", disk_full)
        with pytest.raises(StorageError):
            store.write_deferred()
    assert (store.deferred_count, store.deferred_size) == (2, 150)
    store.write_deferred()
    assert (store.deferred_count, store.deferred_size) == (0, 0)
    store.close()
