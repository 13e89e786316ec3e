"""A damaged tablet file, on one real node in process (replication factor 1, so nothing can repair it).

SQLite's own reports are the detector: ``PRAGMA quick_check`` when a file is opened, and any
"malformed" error during a read. The damaged file is set aside (renamed, never deleted) with a
marker beside it, the replica refuses reads with a CQL ReadFailure rather than a ServerError or
an answer missing rows, writes keep landing in a fresh file, the ERROR is logged once, and the
documented way out (delete the marker, restart) serves the fresh file again.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from pathlib import Path

import pytest

import tabletdb.storage.tablet_store as tablet_store
from tabletdb.cql.errors import ReadFailure
from tabletdb.dht.token import FULL_RING
from tabletdb.replica.storage_service import UNREPAIRED_SUFFIX
from tabletdb.storage.corruption import is_corruption
from tabletdb.storage.tablet_store import TabletCorrupt, TabletStore
from tests.unit.query.data_harness import DataNode

PAGE = 4096
ROWS = 600


def _filled(workdir: Path) -> tuple[Path, bytes, set[int]]:
    """A node with ``ks.t`` written and stopped cleanly; the largest data file, damaged in a
    b-tree page in its middle, the damaged bytes, and the keys that file held."""
    node = DataNode(workdir)

    async def fill() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        for k in range(ROWS):
            await node.run(f"INSERT INTO ks.t (k, v) VALUES ({k}, '{'x' * 300}{k}')")

    node.drive(fill())
    table = node.metadata.catalog.table("ks", "t")
    files = [f.path for f in node.storage.local_files(table)]
    node.close()
    path = max((p for p in files if p.exists()), key=lambda p: p.stat().st_size)
    conn = sqlite3.connect(path)
    keys = {int.from_bytes(pk, "big", signed=True) for (pk,) in conn.execute("SELECT pk FROM partitions")}
    conn.close()
    assert 0 < len(keys) < ROWS, "the table should span several files"
    data = bytearray(path.read_bytes())
    middle = len(data) // PAGE // 2 * PAGE
    assert middle > PAGE, "the file should span several pages"
    data[middle : middle + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    return path, bytes(data), keys


def test_a_damaged_file_is_refused_when_opened(tmp_path: Path) -> None:
    path, _, _ = _filled(tmp_path)
    with pytest.raises(TabletCorrupt, match=re.escape(f"{path} is corrupt: quick_check")):
        TabletStore(path)


def test_damage_found_by_a_read_is_remembered_and_later_reads_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, _ = _filled(tmp_path)
    monkeypatch.setattr(tablet_store, "QUICK_CHECK_MAX_BYTES", 0)  # as for a file too large to check
    store = TabletStore(path)
    assert store.serving

    with pytest.raises(TabletCorrupt, match="malformed"):
        store.scan(FULL_RING, 0, limit=10_000)
    assert not store.serving and store.corrupt is not None
    with pytest.raises(TabletCorrupt):
        store.read_partition(b"\x00\x00\x00\x01", 0)  # refused even where the pages are sound
    store.discard_deferred()
    store.close()


def test_only_damage_counts_as_corruption() -> None:
    conn = sqlite3.connect(":memory:")
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("SELECT * FROM missing")
    assert not is_corruption(caught.value)
    assert not is_corruption(ValueError("database disk image is malformed"))


def test_at_rf1_a_damaged_replica_answers_read_failure_keeps_writing_and_keeps_the_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, damaged, lost = _filled(tmp_path)
    node = DataNode(tmp_path)
    caplog.set_level(logging.ERROR, logger="tabletdb.replica.storage_service")
    with pytest.raises(ReadFailure, match="data file was found damaged"):
        node.drive(node.rows("SELECT k FROM ks.t"))
    with pytest.raises(ReadFailure):
        node.drive(node.rows("SELECT k FROM ks.t"))
    (aside,) = path.parent.glob(f"{path.name}.corrupt-*[0-9Z]")
    assert aside.read_bytes() == damaged, "the damaged file is kept as it was"
    marker = path.with_name(path.name + UNREPAIRED_SUFFIX)
    assert marker.exists()
    (error,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "table=ks.t" in error and str(path) in error and str(aside) in error and str(marker) in error
    node.drive(node.run("INSERT INTO ks.t (k, v) VALUES (100000, 'after')"))  # writes go on
    node.close()

    node = DataNode(tmp_path)  # still refused after a restart: the marker says so
    with pytest.raises(ReadFailure):
        node.drive(node.rows("SELECT k FROM ks.t"))
    node.close()

    marker.unlink()  # the operator accepts the loss, as the ERROR says
    node = DataNode(tmp_path)
    keys = {k for (k,) in node.drive(node.rows("SELECT k FROM ks.t"))}
    assert keys == (set(range(ROWS)) - lost) | {100000}, "every other file's rows, and the new write"
    assert node.storage.unrepaired() == {}
    node.close()


def test_damage_found_in_use_sets_the_file_aside_on_the_next_access(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path, damaged, lost = _filled(tmp_path)
    monkeypatch.setattr(tablet_store, "QUICK_CHECK_MAX_BYTES", 0)  # as for a file too large to check
    bad_key = _a_key_on_the_damaged_page(path, lost)
    node = DataNode(tmp_path)
    caplog.set_level(logging.ERROR, logger="tabletdb.replica.storage_service")
    with pytest.raises(ReadFailure):  # the direct point read trips over the damaged page
        node.drive(node.rows(f"SELECT v FROM ks.t WHERE k = {bad_key}"))
    with pytest.raises(ReadFailure):
        node.drive(node.rows("SELECT k FROM ks.t"))
    assert set(node.storage.unrepaired()) == {path}
    (aside,) = path.parent.glob(f"{path.name}.corrupt-*[0-9Z]")
    assert aside.read_bytes() == damaged
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1
    with pytest.raises(ReadFailure, match="data file was found damaged"):
        node.drive(node.rows("SELECT k FROM ks.t"))
    node.close()


def _a_key_on_the_damaged_page(path: Path, keys: set[int]) -> int:
    store = TabletStore(path)
    try:
        for k in sorted(keys):
            try:
                store.read_partition(k.to_bytes(4, "big", signed=True), 0)
            except TabletCorrupt:
                return k
    finally:
        store.close()
    raise AssertionError("no key of the damaged file reads its damaged page")


def test_at_rf1_a_write_that_reads_first_answers_read_failure(tmp_path: Path) -> None:
    """A list-index update reads the row under a lock before it writes: with the replica's file
    set aside, that read is a CQL ReadFailure naming the table, not a ServerError."""
    _, _, lost = _filled(tmp_path)
    node = DataNode(tmp_path)
    node.drive(node.run("ALTER TABLE ks.t ADD l list<int>"))
    with pytest.raises(ReadFailure, match="Cannot read ks.t on this node before writing"):
        node.drive(node.run(f"UPDATE ks.t SET l[0] = 1 WHERE k = {min(lost)}"))
    node.close()
