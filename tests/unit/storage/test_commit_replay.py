"""Replaying a damaged commit log: corruption between valid records stops the start and leaves
the file as it is; told to skip it, the replay keeps a copy, reports the loss at ERROR and
replays every other record; a torn tail is dropped quietly."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from tabletdb.dht.murmur3 import token_of
from tabletdb.dht.token import TokenRange
from tabletdb.storage.commit_records import HEADER, CommitLogCorrupt, read_log
from tests.unit.storage.test_node_commit import Node, put, value_of

RECORDS = 4


def crashed_node_with_records(root: Path) -> list[int]:
    """A node that logged one write per record to ``a.db`` (k0..k3) and crashed; the records'
    offsets."""
    node = Node(root)

    async def go() -> None:
        for i in range(RECORDS):
            await node.committer("a.db").apply([put(b"k%d" % i, b"v%d" % i, 1)])

    asyncio.run(go())
    node.crash()
    log_path = root / ".commitlog" / "commit.log"
    node.node._log.close()
    data = log_path.read_bytes()
    offsets, at = [], 0
    while at < len(data):
        offsets.append(at)
        at += HEADER.size + HEADER.unpack_from(data, at)[0]
    assert len(offsets) == RECORDS
    return offsets


def flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corruption_stops_the_replay_and_the_log_is_untouched(tmp_path: Path) -> None:
    offsets = crashed_node_with_records(tmp_path)
    log_path = tmp_path / ".commitlog" / "commit.log"
    flip(log_path, offsets[1] + HEADER.size + 2)
    damaged = log_path.read_bytes()
    with pytest.raises(CommitLogCorrupt, match=f"byte offset {offsets[1]}"):
        Node(tmp_path)
    assert log_path.read_bytes() == damaged
    assert sorted(p.name for p in log_path.parent.iterdir()) == ["commit.log"]


def test_skipping_corruption_replays_every_other_record_and_keeps_a_copy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    offsets = crashed_node_with_records(tmp_path)
    log_path = tmp_path / ".commitlog" / "commit.log"
    flip(log_path, offsets[1] + HEADER.size + 2)
    damaged = log_path.read_bytes()
    with caplog.at_level(logging.INFO, logger="tabletdb.storage"):
        node = Node(tmp_path, skip_corrupt=True)
    assert node.replayed == RECORDS - 1
    store = node.committer("a.db").store
    assert [value_of(store, b"k%d" % i) for i in range(RECORDS)] == [b"v0", None, b"v2", b"v3"]
    (copy,) = [p for p in log_path.parent.iterdir() if p.name.startswith("commit.log.corrupt-")]
    assert copy.read_bytes() == damaged
    assert log_path.stat().st_size == 0  # replayed, synced, emptied
    (error,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    message = error.getMessage()
    assert str(log_path) in message and str(copy) in message
    assert "1 record(s)" in message and f"{offsets[2] - offsets[1]} bytes" in message
    node.close()


def test_a_torn_tail_is_dropped_at_info(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    offsets = crashed_node_with_records(tmp_path)
    log_path = tmp_path / ".commitlog" / "commit.log"
    data = log_path.read_bytes()
    log_path.write_bytes(data[: len(data) - 2])
    with caplog.at_level(logging.DEBUG, logger="tabletdb.storage"):
        node = Node(tmp_path)
    assert node.replayed == RECORDS - 1
    assert max(r.levelno for r in caplog.records) == logging.INFO
    assert any(f"torn tail of {len(data) - 2 - offsets[-1]} bytes" in r.getMessage() for r in caplog.records)
    node.close()


def test_a_whole_last_record_failing_its_checksum_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    offsets = crashed_node_with_records(tmp_path)
    log_path = tmp_path / ".commitlog" / "commit.log"
    flip(log_path, offsets[-1] + HEADER.size + 2)
    assert read_log(log_path).torn_tail is not None
    with caplog.at_level(logging.DEBUG, logger="tabletdb.storage"):
        node = Node(tmp_path)
    assert node.replayed == RECORDS - 1
    (warning,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.levelno == logging.WARNING and f"byte offset {offsets[-1]}" in warning.getMessage()
    node.close()


def test_a_damaged_data_file_gets_none_of_its_writes_and_the_replay_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crashed_node_with_records(tmp_path)
    (tmp_path / "a.db").write_bytes(b"\xff" * 8192)  # no longer a database at all
    with caplog.at_level(logging.WARNING, logger="tabletdb.storage.commit_replay"):
        node = Node(tmp_path)  # the replay does not stop the start: the node sets the file aside
    (warning,) = [r.getMessage() for r in caplog.records if "damaged data file" in r.getMessage()]
    assert "a.db is corrupt" in warning
    assert (tmp_path / "a.db").read_bytes() == b"\xff" * 8192, "left for the storage service"
    node.node.close()


def test_a_range_removal_is_replayed_in_order(tmp_path: Path) -> None:
    """Rows logged before a cleanup deleted their range stay deleted after a crash and replay;
    rows of the range written after it, and rows outside it, are replayed."""
    keys = [b"k%d" % i for i in range(40)]
    cut = sorted(token_of(k) for k in keys)[20]
    dropped = TokenRange(-(1 << 63), cut)
    inside = [k for k in keys if dropped.contains(token_of(k))]
    node = Node(tmp_path)

    async def go() -> None:
        for k in keys:
            await node.committer("a.db").apply([put(k, b"old", 1)])
        store = node.committer("a.db").store
        node.node.removed_ranges(store.path, [(dropped.start, dropped.end)])
        assert store.delete_token_ranges([dropped]) == len(inside)
        await node.committer("a.db").apply([put(inside[0], b"new", 2)])

    asyncio.run(go())
    node.crash()
    node.node._log.close()
    again = Node(tmp_path)
    store = again.committer("a.db").store
    assert value_of(store, inside[0]) == b"new"
    assert all(value_of(store, k) is None for k in inside[1:])
    assert all(value_of(store, k) == b"old" for k in keys if k not in inside)
    again.close()
