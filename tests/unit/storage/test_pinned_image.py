"""A pinned live tablet file keeps its bytes while writes and checkpoints go on (the read-lock-0
reasoning of ``storage.pinned_image``), and a reader that is not pinned that way does not."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tabletdb.dht import token_of
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.pinned_image import as_rollback_file, pin_store
from tabletdb.storage.snapshot_files import SIDE_FILES, check_image
from tabletdb.storage.tablet_store import TabletStore

BLOB = 3000


def write(store: TabletStore, first: int, count: int, ts: int = 10) -> None:
    """Rows ``first`` .. ``first + count - 1``, ten to a transaction (many log frames, few fsyncs)."""
    for start in range(first, first + count, 10):
        batch = []
        for i in range(start, min(start + 10, first + count)):
            key = b"k%d" % i
            cell = Cell("v", bytes([i % 251]) * BLOB, ts)
            row = RowWrite(b"c", marker=RowMarker(ts), cells=(cell,))
            batch.append(Mutation(key, token_of(key), rows=(row,)))
        store.apply(batch)


def keys_in(path: Path) -> set[bytes]:
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {pk for (pk,) in conn.execute("SELECT pk FROM partitions")}
    finally:
        conn.close()


def checkpoint(path: Path, mode: str) -> None:
    """A checkpoint from a connection of its own (another thread or process would do the same)."""
    conn = sqlite3.connect(path, timeout=0.05)
    try:
        conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    finally:
        conn.close()


def test_the_pinned_bytes_stay_one_state_while_writes_and_checkpoints_go_on(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 300)
    pinned = pin_store(store)
    assert pinned is not None
    try:
        at_pin = pinned.read_at(0, pinned.size)
        # "streamed" in pieces, with writes and checkpoints of every kind between the pieces
        piece = pinned.size // 8 + 1
        sent = b""
        for n, offset in enumerate(range(0, pinned.size, piece)):
            write(store, 1000 + 40 * n, 40)
            checkpoint(store.path, ("PASSIVE", "FULL", "RESTART", "TRUNCATE")[n % 4])
            sent += pinned.read_at(offset, piece)
        assert sent == at_pin
    finally:
        pinned.close()
    image = tmp_path / "image.db"
    image.write_bytes(sent)
    as_rollback_file(image)
    check_image(image)
    assert keys_in(image) == {b"k%d" % i for i in range(300)}  # exactly what was committed before the pin
    assert image.read_bytes()[18:20] == b"\x01\x01"
    assert not any(image.with_name(image.name + s).exists() for s in SIDE_FILES)
    # once unpinned, checkpoints fold the writes made meanwhile into the file again
    checkpoint(store.path, "TRUNCATE")
    assert len(keys_in(store.path)) == 300 + 40 * 8
    store.close()


def test_a_reader_that_began_with_frames_in_the_log_does_not_hold_the_file_still(tmp_path: Path) -> None:
    """The control: why ``pin_file`` folds the whole log in first. A reader whose state includes
    log frames lets a checkpoint copy them into the file under it, so the raw bytes change."""
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 20)
    checkpoint(store.path, "TRUNCATE")
    write(store, 100, 20)  # in the log only
    reader = sqlite3.connect(store.path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM partitions").fetchone()
    before = store.path.read_bytes()
    checkpoint(store.path, "PASSIVE")
    assert store.path.read_bytes() != before
    assert reader.execute("SELECT count(*) FROM partitions").fetchone() == (40,)  # SQLite's own view holds
    reader.close()
    store.close()


def test_no_pin_while_a_reader_of_an_older_state_holds_part_of_the_log(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 20)
    old_reader = sqlite3.connect(store.path, isolation_level=None)
    old_reader.execute("BEGIN")
    old_reader.execute("SELECT count(*) FROM partitions").fetchone()
    write(store, 100, 20)  # frames the old reader's state does not include: no checkpoint takes them
    assert pin_store(store) is None
    old_reader.close()
    pinned = pin_store(store)
    assert pinned is not None
    pinned.close()
    store.close()


def test_the_header_switch_out_of_wal_mode_is_what_sqlites_own_pragma_does(tmp_path: Path) -> None:
    """``as_rollback_file`` changes two header bytes; ``PRAGMA journal_mode = DELETE`` on the same
    image differs from it only in the change counter it bumps (bytes 24-27) and the matching
    version-valid-for number (92-95), which a file nobody has open does not need."""
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 300)
    pinned = pin_store(store)
    assert pinned is not None
    sent = pinned.read_at(0, pinned.size)
    pinned.close()
    store.close()
    assert sent[18:20] == b"\x02\x02"
    ours, sqlites = tmp_path / "ours.db", tmp_path / "sqlites.db"
    ours.write_bytes(sent)
    sqlites.write_bytes(sent)
    as_rollback_file(ours)
    conn = sqlite3.connect(sqlites)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    a, b = ours.read_bytes(), sqlites.read_bytes()
    assert len(a) == len(b) == len(sent)
    assert {i for i in range(len(a)) if a[i] != b[i]} <= set(range(24, 28)) | set(range(92, 96))
    check_image(ours, deep=True)
    with sqlite3.connect(f"{ours.resolve().as_uri()}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert keys_in(ours) == {b"k%d" % i for i in range(300)}
    as_rollback_file(ours)  # a rollback-journal file is left as it is
    assert ours.read_bytes() == a
