"""A pinned live tablet file keeps its bytes while writes and checkpoints go on (the read-lock-0
reasoning of ``storage.pinned_image``), and a reader that is not pinned that way does not."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest

from tabletdb.dht import token_of
from tabletdb.storage.images import pinned_image
from tabletdb.storage.images.pinned_image import as_rollback_file, pin_store, pin_store_with_log
from tabletdb.storage.images.wal_frames import replay_into
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
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


# --- pin_with_log: no checkpoint, the log's committed frames carried and replayed --------------


def _copy_at_pin(store: TabletStore, into: Path) -> Path:
    """The file and its log as they are now, checkpointed by SQLite itself in a copy: what the
    state's file is, byte for byte, when SQLite folds the log in."""
    into.mkdir()
    copy = into / "t.db"
    copy.write_bytes(store.path.read_bytes())
    wal = store.path.with_name(store.path.name + "-wal")
    if wal.exists():
        copy.with_name("t.db-wal").write_bytes(wal.read_bytes())
    conn = sqlite3.connect(copy)
    try:
        busy, frames, folded = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0 and frames == folded
    finally:
        conn.close()
    return copy


def _replayed(pinned_bytes: bytes, in_file: int, into: Path) -> Path:
    image = into / "image.db"
    image.write_bytes(pinned_bytes[:in_file])
    if len(pinned_bytes) > in_file:
        fd = os.open(image, os.O_RDWR)
        try:
            replay_into(fd, pinned_bytes[in_file:])
        finally:
            os.close(fd)
    return image


@pytest.mark.parametrize("state", ["log-only", "file-and-log", "older-reader", "folded"])
def test_a_pin_with_log_is_the_state_a_checkpoint_would_write_whatever_runs_meanwhile(
    tmp_path: Path, state: str
) -> None:
    """The image (the file's bytes read in pieces while writes and checkpoints of every kind run,
    then the frames replayed into them) is byte for byte the file SQLite's own complete
    checkpoint makes of the state at the pin; no checkpoint or fsync happens at the pin."""
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 300)
    old_reader = None
    if state != "log-only":
        checkpoint(store.path, "TRUNCATE")
        write(store, 300, 100)
    if state == "older-reader":  # holds part of the log: no checkpoint can fold it all in
        old_reader = sqlite3.connect(store.path, isolation_level=None)
        old_reader.execute("BEGIN")
        old_reader.execute("SELECT count(*) FROM partitions").fetchone()
        write(store, 400, 100)
    if state == "folded":
        checkpoint(store.path, "PASSIVE")  # all folded in, the log kept: read-lock 0, no frames needed
    file_before = store.path.read_bytes()
    expected = _copy_at_pin(store, tmp_path / "at-pin")
    pinned = pin_store_with_log(store)
    assert pinned is not None
    assert store.path.read_bytes() == file_before  # nothing written into the file by the pin
    assert len(pinned.log) > 0  # "folded": frames already in the file, carried all the same
    try:
        piece = pinned.total // 8 + 1
        sent = b""
        for n, offset in enumerate(range(0, pinned.total, piece)):
            write(store, 1000 + 40 * n, 40)
            checkpoint(store.path, ("PASSIVE", "FULL", "RESTART", "TRUNCATE")[n % 4])
            sent += pinned.read_at(offset, piece)
        assert len(sent) == pinned.total
        if state == "file-and-log":  # the checkpoints did write into the file under the pin
            assert store.path.read_bytes()[: pinned.size] != file_before[: pinned.size]
    finally:
        pinned.close()
        if old_reader is not None:
            old_reader.close()
    image = _replayed(sent, pinned.size, tmp_path)
    assert image.read_bytes() == expected.read_bytes()
    as_rollback_file(image)
    check_image(image, deep=True)
    committed = {"log-only": 300, "file-and-log": 400, "older-reader": 500, "folded": 400}[state]
    assert keys_in(image) == {b"k%d" % i for i in range(committed)}
    store.close()


def test_a_pin_with_log_of_a_file_with_no_log_sends_the_file_alone(tmp_path: Path) -> None:
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 30)
    checkpoint(store.path, "TRUNCATE")
    pinned = pin_store_with_log(store)
    assert pinned is not None
    try:
        assert pinned.log == b"" and pinned.total == pinned.size == store.path.stat().st_size
    finally:
        pinned.close()
    store.close()


def test_a_log_longer_than_the_limit_is_not_carried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = TabletStore(tmp_path / "t.db")
    write(store, 0, 30)
    monkeypatch.setattr(pinned_image, "LOG_LIMIT", 4096)
    assert pin_store_with_log(store) is None
    monkeypatch.setattr(pinned_image, "LOG_LIMIT", 1 << 30)
    pinned = pin_store_with_log(store)
    assert pinned is not None
    pinned.close()
    store.close()


@pytest.mark.parametrize("seed", range(6))
def test_a_pin_with_log_matches_sqlites_checkpoint_under_random_histories(tmp_path: Path, seed: int) -> None:
    """Random histories before the pin (writes of several sizes, checkpoints of every kind, older
    readers holding parts of the log, some released) and while the image is read: the replayed
    image is always the bytes SQLite's own checkpoint makes of the state at the pin."""
    rng = random.Random(seed)
    store = TabletStore(tmp_path / "t.db")
    readers: list[sqlite3.Connection] = []
    next_key = 0

    def step() -> None:
        nonlocal next_key
        action = rng.choice(["write", "write", "write", "checkpoint", "reader", "release"])
        if action == "write":
            count = rng.choice([1, 10, 60])
            write(store, next_key, count, ts=rng.randint(1, 50))
            next_key += count
        elif action == "checkpoint":
            checkpoint(store.path, rng.choice(["PASSIVE", "FULL", "RESTART", "TRUNCATE"]))
        elif action == "reader" and len(readers) < 3:
            reader = sqlite3.connect(store.path, isolation_level=None)
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM sqlite_master").fetchone()
            readers.append(reader)
        elif action == "release" and readers:
            readers.pop(rng.randrange(len(readers))).close()

    for _ in range(rng.randint(3, 25)):
        step()
    expected = _copy_at_pin(store, tmp_path / "at-pin")
    pinned = pin_store_with_log(store)
    assert pinned is not None
    try:
        piece = pinned.total // 5 + 1
        sent = b""
        for offset in range(0, pinned.total, piece):
            for _ in range(rng.randint(0, 4)):
                step()
            sent += pinned.read_at(offset, piece)
    finally:
        pinned.close()
        for reader in readers:
            reader.close()
    assert _replayed(sent, pinned.size, tmp_path).read_bytes() == expected.read_bytes()
    store.close()
