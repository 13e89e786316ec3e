"""The crash model of the in-memory disk the simulator runs the durable log on, and the OS one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tabletdb.raft.storage_fs import MemFileSystem, OsFileSystem


def test_unsynced_data_and_directory_changes_are_lost() -> None:
    fs = MemFileSystem()
    fs.append("a", b"hello")
    fs.sync("a")
    fs.sync_dir()
    fs.append("a", b" world")
    fs.write("b", b"new file")
    fs.sync("b")  # synced contents, but its directory entry never was
    fs.crash()
    assert fs.list() == ["a"] and fs.read("a") == b"hello"


def test_rename_is_durable_only_after_a_directory_sync() -> None:
    fs = MemFileSystem()
    fs.write("x.tmp", b"data")
    fs.sync("x.tmp")
    fs.sync_dir()
    fs.rename("x.tmp", "x")
    fs.crash()
    assert fs.list() == ["x.tmp"]
    fs.rename("x.tmp", "x")
    fs.sync_dir()
    fs.remove("x")
    fs.crash()
    assert fs.read("x") == b"data"


def test_torn_tails_are_prefixes_of_the_unsynced_bytes_maybe_garbled_at_the_end() -> None:
    outcomes = set()
    for seed in range(200):
        fs = MemFileSystem()
        fs.append("f", b"AAAA")
        fs.sync("f")
        fs.sync_dir()
        fs.append("f", b"BBBBBBBB")
        fs.crash(random.Random(seed))
        data = fs.read("f")
        assert data[:4] == b"AAAA" and len(data) <= 12
        assert data[4:-1] == b"B" * len(data[4:-1])
        outcomes.add(data)
    assert b"AAAA" in outcomes and any(len(o) > 4 for o in outcomes)
    assert any(o[-1:] not in (b"A", b"B") for o in outcomes)


def test_missing_files_raise_file_not_found() -> None:
    with pytest.raises(FileNotFoundError, match="nope"):
        MemFileSystem().read("nope")


def test_os_file_system_round_trip(tmp_path: Path) -> None:
    fs = OsFileSystem(str(tmp_path / "d"))
    fs.append("a", b"12")
    fs.append("a", b"34")
    fs.sync("a")
    fs.write("b.tmp", b"x")
    fs.sync("b.tmp")
    fs.rename("b.tmp", "b")
    fs.truncate("a", 3)
    fs.sync_dir()
    assert fs.list() == ["a", "b"] and fs.read("a") == b"123" and fs.read("b") == b"x"
    fs.remove("b")
    fs.close()
    assert fs.list() == ["a"]
