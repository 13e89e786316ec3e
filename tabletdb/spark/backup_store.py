"""Where a backup lives: a local directory, or a bucket prefix reached through pyarrow.fs.

Backup and restore read and write their directory on the driver (manifest, schema, restore
progress) and on the executors (the tablet files). A `BackupStore` is one plain string — an
absolute local path, or a URI that ``pyarrow.fs.FileSystem.from_uri`` opens — so it travels to
executors inside a task and each process opens the filesystem itself (once, cached here).

Local directories keep their POSIX guarantees: files are fsynced with their directories, the
manifest is renamed into place, and the restore progress is an append-only file synced per
record. Object stores have no fsync and no append (an S3 object is written whole when its stream
closes, and is then durable), so there the manifest is written under a temporary name and moved,
and restore progress is one small object per record (`ObjectProgressLog`).

Only the schemes in `STORE_SCHEMES` are accepted (by `tabletdb.cli.locations.store_location`):
those are the ones the tests run against a real server (S3, through moto's S3 server on the
loopback). gs://, hdfs:// and abfs:// open through the same pyarrow calls but have not been run
here, so they are refused with advice rather than half-supported.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol, cast

from tabletdb.storage.fsync import fsync_path

STORE_SCHEMES = ("s3",)
"""URI schemes backup and restore accept besides paths and file: URIs (pyarrow's names)."""

_FILESYSTEMS: dict[str, tuple[Any, str]] = {}
"""Per process: store location -> (pyarrow filesystem, base path inside it)."""


class StoreError(OSError):
    """A store operation failed; the message names the store and the object."""


@dataclass(frozen=True)
class BackupStore:
    """A backup directory: ``location`` is an absolute local path or a store URI."""

    location: str

    def __str__(self) -> str:
        return self.location

    @property
    def local(self) -> Path | None:
        """The directory, when the store is on this machine's filesystem."""
        return None if "://" in self.location else Path(self.location)

    def child(self, relative: str) -> str:
        """The location of an object of the store (a URI's query stays at its end)."""
        base, sep, query = self.location.partition("?")
        return posixpath.join(base.rstrip("/"), relative) + sep + query

    def split(self) -> tuple[BackupStore, str]:
        """The store holding this location, and its name there (a file given by path or URI)."""
        local = self.local
        if local is not None:
            return BackupStore(str(local.parent)), local.name
        base, sep, query = self.location.partition("?")
        parent, _, name = base.rstrip("/").rpartition("/")
        return BackupStore(parent + sep + query), name

    def _remote(self) -> tuple[Any, str]:
        found = _FILESYSTEMS.get(self.location)
        if found is None:
            from pyarrow import fs

            try:
                filesystem, base = fs.FileSystem.from_uri(self.location)
            except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
                raise StoreError(f"cannot open the store {self.location}: {exc}") from None
            found = _FILESYSTEMS[self.location] = (filesystem, base.rstrip("/"))
        return found

    def _path(self, relative: str) -> str:
        return posixpath.join(self._remote()[1], relative)

    def exists(self, relative: str) -> bool:
        local = self.local
        if local is not None:
            return (local / relative).exists()
        from pyarrow import fs

        filesystem, _ = self._remote()
        return bool(filesystem.get_file_info(self._path(relative)).type != fs.FileType.NotFound)

    def is_file(self, relative: str) -> bool:
        local = self.local
        if local is not None:
            return (local / relative).is_file()
        from pyarrow import fs

        filesystem, _ = self._remote()
        return bool(filesystem.get_file_info(self._path(relative)).type == fs.FileType.File)

    def make_root(self) -> None:
        local = self.local
        if local is not None:
            local.mkdir(parents=True, exist_ok=True)
            return
        filesystem, base = self._remote()
        self._guard(lambda: filesystem.create_dir(base, recursive=True), base)

    def read_bytes(self, relative: str) -> bytes:
        local = self.local
        if local is not None:
            return (local / relative).read_bytes()
        filesystem, _ = self._remote()
        with self._guard(lambda: filesystem.open_input_stream(self._path(relative)), relative) as stream:
            return bytes(stream.read())

    def read_text(self, relative: str) -> str:
        return self.read_bytes(relative).decode()

    def write_atomic(self, relative: str, data: bytes) -> None:
        """Readers see all of ``data`` under ``relative`` or nothing; durable when this returns."""
        local = self.local
        if local is not None:
            target = local / relative
            staging = target.with_name(target.name + ".partial")
            with open(staging, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(staging, target)
            fsync_path(target.parent)  # the rename itself must survive a crash too
            return
        filesystem, _ = self._remote()
        partial = self._path(relative + ".partial")
        # An object appears whole when its stream closes; the move keeps a half-written file of
        # a store that shows writes in progress (HDFS) from ever carrying the final name.
        with self._guard(lambda: filesystem.open_output_stream(partial), relative) as out:
            out.write(data)
        self._guard(lambda: filesystem.move(partial, self._path(relative)), relative)

    @contextmanager
    def writer(self, relative: str) -> Iterator[BinaryIO]:
        """A stream into a new object (remote stores only: local files are written by path)."""
        filesystem, _ = self._remote()
        path = self._path(relative)
        parent = posixpath.dirname(path)
        self._guard(lambda: filesystem.create_dir(parent, recursive=True), relative)
        with self._guard(lambda: filesystem.open_output_stream(path), relative) as out:
            yield cast(BinaryIO, out)

    @contextmanager
    def reader(self, relative: str) -> Iterator[BinaryIO]:
        local = self.local
        if local is not None:
            with open(local / relative, "rb") as f:
                yield f
            return
        filesystem, _ = self._remote()
        with self._guard(lambda: filesystem.open_input_stream(self._path(relative)), relative) as stream:
            yield cast(BinaryIO, stream)

    def size(self, relative: str) -> int:
        local = self.local
        if local is not None:
            return (local / relative).stat().st_size
        filesystem, _ = self._remote()
        return int(self._guard(lambda: filesystem.get_file_info(self._path(relative)), relative).size)

    def names(self, relative_dir: str) -> list[str]:
        """File names directly under ``relative_dir`` (none if it does not exist), sorted."""
        local = self.local
        if local is not None:
            directory = local / relative_dir
            return sorted(p.name for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []
        from pyarrow import fs

        filesystem, _ = self._remote()
        selector = fs.FileSelector(self._path(relative_dir), allow_not_found=True)
        infos = self._guard(lambda: filesystem.get_file_info(selector), relative_dir)
        return sorted(info.base_name for info in infos if info.type == fs.FileType.File)

    def _guard(self, call: Any, relative: str) -> Any:
        try:
            return call()
        except OSError as exc:
            raise StoreError(f"{self.child(relative)}: {exc}") from None


def as_store(location: BackupStore | Path | str) -> BackupStore:
    """A store from what callers hold: a store, a local path (made absolute) or a store URI."""
    if isinstance(location, BackupStore):
        return location
    text = str(location)
    if "://" in text:
        return BackupStore(text)
    return BackupStore(str(Path(text).resolve()))


# --- restore progress ------------------------------------------------------------------------


class ProgressLog(Protocol):
    """Where a restore records finished steps: records come back in the order they were added."""

    def read(self) -> list[dict[str, Any]]: ...

    def append(self, record: dict[str, Any]) -> None: ...

    def set_aside(self, suffix: str) -> None:
        """Keep the records under another name and start afresh (progress of another target)."""


class FileProgressLog:
    """An append-only JSON-lines file, fsynced per record; a torn last line (a kill) ends it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out: list[dict[str, Any]] = []
        for text in self.path.read_text().splitlines():
            try:
                out.append(json.loads(text))
            except json.JSONDecodeError:  # a torn last line from a kill: that step is redone
                break
        return out

    def append(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as out:
            out.write(json.dumps(record) + "\n")
            out.flush()
            os.fsync(out.fileno())

    def set_aside(self, suffix: str) -> None:
        os.replace(self.path, self.path.with_name(f"{self.path.name}.{suffix}"))


class ObjectProgressLog:
    """One small object per record under a prefix, for stores that cannot append or fsync: an
    object is durable once written, and names sort in the order they were written (one writer,
    the restore's driver). An object that does not parse ends the log, as a torn line does."""

    def __init__(self, store: BackupStore, prefix: str) -> None:
        self.store = store
        self.prefix = prefix
        self._next = len(self._records())

    def _records(self) -> list[str]:
        return [n for n in self.store.names(self.prefix) if n.endswith(".json")]

    def read(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for name in self._records():
            try:
                out.append(json.loads(self.store.read_text(posixpath.join(self.prefix, name))))
            except (json.JSONDecodeError, UnicodeDecodeError):
                break
        return out

    def append(self, record: dict[str, Any]) -> None:
        name = posixpath.join(self.prefix, f"{self._next:010d}.json")
        self.store.write_atomic(name, json.dumps(record).encode())
        self._next += 1

    def set_aside(self, suffix: str) -> None:
        # Records already live under a prefix of their own target (see `progress_log`): a log
        # for another target is never read here, so nothing needs moving.
        raise StoreError(f"{self.store.child(self.prefix)} holds another target's progress")


def progress_log(store: BackupStore, name: str, target: str) -> ProgressLog:
    """The restore progress ``name`` in ``store``: a file on a local disk; on an object store a
    prefix per target cluster (``name``.d/<digest of the target>/), so a restore into another
    cluster starts its own log and keeps the old one, as the local file is set aside."""
    local = store.local
    if local is not None:
        return FileProgressLog(local / name)
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    return ObjectProgressLog(store, f"{name}.d/{digest}")
