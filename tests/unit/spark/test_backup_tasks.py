"""Backup/restore Spark tasks: they pickle by value and turn failures into results with a message."""

from __future__ import annotations

import hashlib
import pickle
import socket
from pathlib import Path

from tabletdb.spark.backup_tasks import DownloadTask, TaskResult, UploadTask, run_task


def _closed_port() -> int:
    """A loopback port nothing listens on (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_tasks_survive_pickling_unchanged(tmp_path: Path) -> None:
    task = UploadTask("data/ks/t-1/tablet-0.db", (("127.0.0.1", 1),), "id", -5, 7, str(tmp_path), "ab")
    assert pickle.loads(pickle.dumps(task)) == task
    result = TaskResult("x", size=3, sha256="ab", modes=("file",))
    assert pickle.loads(pickle.dumps(result)) == result


def test_upload_of_a_damaged_file_that_reaches_no_node_names_both_checksums(tmp_path: Path) -> None:
    """A local file is not hashed as it is sent (the node checks the manifest's sha256 on arrival
    and answers with its own); when a send fails, the task reads the file to tell a damaged
    backup from a bad node."""
    (tmp_path / "f.db").write_bytes(b"not what the manifest says")
    actual = hashlib.sha256(b"not what the manifest says").hexdigest()
    task = UploadTask("f.db", (("127.0.0.1", _closed_port()),), "id", 0, 1, str(tmp_path), "0" * 64)
    result = run_task(task)
    assert result.error is not None and "damaged" in result.error
    assert actual in result.error and "0" * 64 in result.error


def test_upload_of_a_sound_file_to_an_unreachable_node_names_the_node(tmp_path: Path) -> None:
    body = b"what the manifest says"
    (tmp_path / "f.db").write_bytes(body)
    port = _closed_port()
    task = UploadTask(
        "f.db", (("127.0.0.1", port),), "id", 0, 1, str(tmp_path), hashlib.sha256(body).hexdigest()
    )
    result = run_task(task)
    assert result.error is not None and f"127.0.0.1:{port}" in result.error and "damaged" not in result.error


def test_missing_file_is_an_error_naming_the_os_error(tmp_path: Path) -> None:
    task = UploadTask("gone.db", (), "id", 0, 1, str(tmp_path), "0" * 64)
    result = run_task(task)
    assert result.label == "gone.db" and result.error is not None
    assert result.error.startswith("FileNotFoundError")


def test_download_from_an_unreachable_node_names_the_call(tmp_path: Path) -> None:
    port = _closed_port()
    task = DownloadTask("data/t.db", "127.0.0.1", port, "tag", "p", str(tmp_path), "0" * 64)
    result = run_task(task)
    assert result.error is not None and f"127.0.0.1:{port}" in result.error
    assert not (tmp_path / "data" / "t.db").exists()
