"""Backup stores: the same operations on a local directory and on an S3 bucket (moto's S3 server
on the loopback), and restore progress that survives as an append-only file or as objects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.spark.backup_manifest import BackupFile, Manifest, TableEntry, read_manifest, write_manifest
from tabletdb.spark.backup_store import (
    BackupStore,
    FileProgressLog,
    ObjectProgressLog,
    StoreError,
    as_store,
    progress_log,
)
from tabletdb.spark.restore import RestoreProgress
from tests.harness.s3 import S3Bucket, s3_server


@pytest.fixture(scope="module")
def bucket() -> Iterator[S3Bucket]:
    with s3_server() as found:
        yield found


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BackupStore:
    if request.param == "local":
        return as_store(tmp_path / "b1")
    bucket: S3Bucket = request.getfixturevalue("bucket")
    return BackupStore(bucket.uri(f"{tmp_path.name}/b1"))


def _manifest() -> Manifest:
    files = [BackupFile(0, -(2**63), 2**63 - 1, "data/ks/t-x/tablet-0.db", 3, "ab" * 32, 1, "host")]
    entry = TableEntry("ks", "t", "436eaf0c-e62c-11f1-8a00-02fc00000001", True, 1, [2**63 - 1], 1, files)
    return Manifest("c", "2026-01-01T00:00:00Z", "tag", ["ks"], [entry])


def test_files_and_the_manifest_round_trip(store: BackupStore) -> None:
    store.make_root()
    assert not store.exists("manifest.json")
    write_manifest(store, _manifest())
    assert store.is_file("manifest.json") and read_manifest(store) == _manifest()
    assert "manifest.json.partial" not in store.names("")
    if store.local is None:
        with store.writer("data/ks/t-x/tablet-0.db") as out:
            out.write(b"abc")
    else:
        (store.local / "data/ks/t-x").mkdir(parents=True)
        (store.local / "data/ks/t-x/tablet-0.db").write_bytes(b"abc")
    assert store.size("data/ks/t-x/tablet-0.db") == 3
    with store.reader("data/ks/t-x/tablet-0.db") as source:
        assert source.read() == b"abc"
    assert store.names("data/ks/t-x") == ["tablet-0.db"] and store.names("nothing") == []


def test_restore_progress_resumes_from_either_kind_of_log(store: BackupStore) -> None:
    store.make_root()
    first = RestoreProgress(progress_log(store, "restore-progress.jsonl", "A"), "A")
    assert not first.resumed
    first.statement_done(0)
    first.file_done("data/x.db")
    first.range_verified("t:1:2", 5)
    again = RestoreProgress(progress_log(store, "restore-progress.jsonl", "A"), "A")
    assert again.resumed and again.statements == {0} and again.files == {"data/x.db"}
    assert again.verified == {"t:1:2": 5}
    again.file_done("data/y.db")  # numbering goes on after a reopen
    assert RestoreProgress(progress_log(store, "restore-progress.jsonl", "A"), "A").files == {
        "data/x.db",
        "data/y.db",
    }
    other = RestoreProgress(progress_log(store, "restore-progress.jsonl", "B"), "B")
    assert not other.resumed and not other.files  # another cluster: its own progress
    kind = FileProgressLog if store.local is not None else ObjectProgressLog
    assert isinstance(progress_log(store, "restore-progress.jsonl", "A"), kind)


def test_a_torn_last_record_ends_the_file_log(tmp_path: Path) -> None:
    log = FileProgressLog(tmp_path / "p.jsonl")
    log.append({"target": "A"})
    log.append({"file": "a"})
    with open(tmp_path / "p.jsonl", "a") as out:
        out.write('{"file": "b')  # killed mid-write
    assert log.read() == [{"target": "A"}, {"file": "a"}]


def test_object_progress_is_one_object_per_record(bucket: S3Bucket, tmp_path: Path) -> None:
    store = BackupStore(bucket.uri(tmp_path.name))
    log = progress_log(store, "p", "A")
    log.append({"target": "A"})
    log.append({"file": "a"})
    assert isinstance(log, ObjectProgressLog)
    names = store.names(log.prefix)
    assert names == ["0000000000.json", "0000000001.json"]
    assert json.loads(store.read_text(f"{log.prefix}/{names[1]}")) == {"file": "a"}


def test_uri_locations_keep_their_query_and_open_once_per_process(bucket: S3Bucket) -> None:
    store = BackupStore(bucket.uri("b1"))
    assert store.child("manifest.json") == bucket.uri("b1/manifest.json")
    parent, name = BackupStore(bucket.uri("b1/progress.jsonl")).split()
    assert (parent, name) == (store, "progress.jsonl")
    assert as_store(Path("rel")).location == str(Path("rel").resolve())


def test_an_unreachable_store_is_one_error_naming_it() -> None:
    store = BackupStore("s3://k:s@bucket/b1?endpoint_override=127.0.0.1:1&scheme=http&region=us-east-1")
    with pytest.raises(StoreError, match="bucket/b1"):
        store.read_text("manifest.json")
