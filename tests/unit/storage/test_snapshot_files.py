"""Tablet file snapshots (consistent while the store is written), row counts, staged installs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tabletdb.dht import token_of
from tabletdb.dht.token import TokenRange
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.snapshot_files import (
    check_image,
    file_sha256,
    has_partitions,
    image_mutations,
    live_row_count,
    place_image,
    snapshot_pinned,
    snapshot_to,
)
from tabletdb.storage.tablet_store import StorageError, TabletStore


def row(pk: bytes, ck: bytes, ts: int = 10, ttl: int = 0, expiry: int = 0) -> Mutation:
    cell = Cell("v", b"x", ts, b"", ttl, expiry)
    return Mutation(
        pk, token_of(pk), None, (RowWrite(ck, marker=RowMarker(ts, ttl, expiry), cells=(cell,)),), ()
    )


def test_snapshot_is_a_self_contained_copy_unaffected_by_later_writes(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "tablet-0.db")
    store.apply([row(b"a", b"1"), row(b"a", b"2"), row(b"b", b"1")])
    copy = tmp_path / "snap" / "tablet-0.db"
    snapshot_to(store.path, copy)
    store.apply([row(b"c", b"1")])  # after the snapshot: not in it
    assert live_row_count(copy, now=100) == 3
    assert not copy.with_name("tablet-0.db-wal").exists()  # one file: its checksum means something
    assert file_sha256(copy) == file_sha256(copy)
    with pytest.raises(StorageError, match="already exists"):
        snapshot_to(store.path, copy)
    store.close()


def test_a_pinned_snapshot_is_a_rollback_journal_copy_with_the_checksum_of_its_bytes(tmp_path: Path) -> None:
    """The live file's bytes, copied while writes go on into the log: SQLite reads the copy as a
    sound, self-contained rollback-journal file of the state at the pin, and the returned sha256
    is the copy's."""
    store = TabletStore(tmp_path / "tablet-0.db")
    store.apply([row(bytes([n]), b"1") for n in range(200)])
    copy = tmp_path / "snap" / "tablet-0.db"
    digest = snapshot_pinned(store, copy)
    store.apply([row(b"late", b"1")])  # after the pin: not in the copy, and the store goes on
    assert digest == file_sha256(copy)
    assert copy.read_bytes()[18:20] == b"\x01\x01" and store.path.read_bytes()[18:20] == b"\x02\x02"
    conn = sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    assert live_row_count(copy, now=100) == 200 and live_row_count(store.path, now=100) == 201
    assert (
        not copy.with_name("tablet-0.db-wal").exists() and not copy.with_name("tablet-0.db.partial").exists()
    )
    with pytest.raises(StorageError, match="already exists"):
        snapshot_pinned(store, copy)
    store.close()


def test_no_pinned_snapshot_while_a_reader_of_an_older_state_holds_the_log(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "tablet-0.db")
    store.apply([row(b"a", b"1")])
    old_reader = sqlite3.connect(store.path, isolation_level=None)
    old_reader.execute("BEGIN")
    old_reader.execute("SELECT count(*) FROM partitions").fetchone()
    store.apply([row(b"b", b"1")])  # frames the old reader's state lacks: no complete checkpoint
    copy = tmp_path / "snap" / "tablet-0.db"
    assert snapshot_pinned(store, copy) is None and not copy.exists()
    old_reader.close()
    assert snapshot_pinned(store, copy) is not None and live_row_count(copy, now=100) == 2
    store.close()


def test_live_row_count_skips_expired_rows(tmp_path: Path) -> None:
    with TabletStore(tmp_path / "t.db") as store:
        store.apply([row(b"a", b"1"), row(b"a", b"2", ttl=10, expiry=50)])
    assert live_row_count(tmp_path / "t.db", now=40) == 2
    assert live_row_count(tmp_path / "t.db", now=60) == 1


def test_image_mutations_reproduce_the_store_within_a_range(tmp_path: Path) -> None:
    keys = [bytes([n]) for n in range(20)]
    with TabletStore(tmp_path / "src.db") as store:
        store.apply([row(k, b"1", ts=5 + n) for n, k in enumerate(keys)])
    half = TokenRange(-(2**63), 0)
    inside = sorted(k for k in keys if token_of(k) <= 0)
    mutations = list(image_mutations(tmp_path / "src.db", half))
    assert sorted(m.partition_key for m in mutations) == inside
    with TabletStore(tmp_path / "dst.db") as dst:
        dst.apply(mutations)
        for m in mutations:
            data = dst.read_partition(m.partition_key, 100)
            assert data is not None and data.rows[0].cells[0].timestamp == m.rows[0].cells[0].timestamp


def test_staged_image_replaces_an_empty_target(tmp_path: Path) -> None:
    with TabletStore(tmp_path / "src.db") as store:
        store.apply([row(b"a", b"1")])
    snapshot_to(tmp_path / "src.db", tmp_path / "staged.db")
    target = tmp_path / "data" / "tablet-3.db"
    target.parent.mkdir()
    TabletStore(target).close()
    assert not has_partitions(target)
    check_image(tmp_path / "staged.db")
    place_image(tmp_path / "staged.db", target)
    assert has_partitions(target) and live_row_count(target, 100) == 1
    (tmp_path / "junk.db").write_bytes(b"not sqlite" * 100)
    with pytest.raises(StorageError):
        check_image(tmp_path / "junk.db")


def test_an_image_whose_header_does_not_fit_its_bytes_is_refused_without_a_deep_check(
    tmp_path: Path,
) -> None:
    """Without ``quick_check`` (the bytes were checksummed end to end) the header is still checked:
    a cut-short image, one of partial pages, one still in WAL mode, and anything not SQLite."""
    with TabletStore(tmp_path / "src.db") as store:
        store.apply([row(b"k%d" % i, b"c") for i in range(500)])
    snapshot_to(tmp_path / "src.db", tmp_path / "good.db")
    good = (tmp_path / "good.db").read_bytes()
    check_image(tmp_path / "good.db", deep=False)
    page = int.from_bytes(good[16:18], "big")
    cases = {
        "short.db": (good[:-page], "the header says"),
        "ragged.db": (good + b"\0" * 100, "not whole pages"),
        "wal.db": (good[:18] + b"\x02\x02" + good[20:], "not a rollback-journal file's"),
        "junk.db": (b"not sqlite" * 100, "no SQLite header"),
    }
    for name, (data, why) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(StorageError, match=why):
            check_image(tmp_path / name, deep=False)


def test_a_group_committer_is_idle_only_with_nothing_queued_or_committing(tmp_path: Path) -> None:
    import asyncio

    from tabletdb.storage.group_commit import GroupCommitter

    async def scenario() -> None:
        committer = GroupCommitter(TabletStore(tmp_path / "t.db"))
        assert committer.idle
        pending = committer.apply([row(b"a", b"1")])
        assert not committer.idle  # restore must not close this store now
        await pending
        assert committer.idle
        committer.store.close()

    asyncio.run(scenario())


def test_relative_paths_work_as_a_relative_workdir_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TabletStore(tmp_path / "tablet-0.db")
    store.apply([row(b"a", b"1")])
    monkeypatch.chdir(tmp_path)
    snapshot_to(Path("tablet-0.db"), Path("snap/tablet-0.db"))
    assert has_partitions(Path("snap/tablet-0.db"))
    assert live_row_count(Path("snap/tablet-0.db"), now=100) == 1
    check_image(Path("snap/tablet-0.db"))
