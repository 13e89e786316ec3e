"""The file layer under the durable Raft log: the real OS, or an in-memory disk that can crash.

The durable log (`storage`) only ever needs a flat directory with append-only files, whole-file
writes, fsync, rename and delete. Routing those through this small interface lets the
deterministic simulator run the *real* log code on `MemFileSystem`, whose crash model is the
pessimistic POSIX one: data not fsynced is lost, a directory change (create, rename, remove) not
followed by a directory fsync is lost, and the unsynced tail of a file may survive partially
(a torn write) with its last bytes garbled.
"""

from __future__ import annotations

import os
import random
from typing import Protocol


class FileSystem(Protocol):
    """A single flat directory of files."""

    def list(self) -> list[str]: ...

    def read(self, name: str) -> bytes: ...

    def append(self, name: str, data: bytes) -> None:
        """Append to `name`, creating it if missing."""
        ...

    def write(self, name: str, data: bytes) -> None:
        """Create or replace `name` with `data` (not durable until `sync`)."""
        ...

    def sync(self, name: str) -> None:
        """fsync the file's contents."""
        ...

    def truncate(self, name: str, size: int) -> None: ...

    def rename(self, src: str, dst: str) -> None: ...

    def remove(self, name: str) -> None: ...

    def sync_dir(self) -> None:
        """fsync the directory, making creates, renames and removes durable."""
        ...


class OsFileSystem:
    """A real directory; append handles stay open so group commit costs one fsync per batch."""

    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self._fds: dict[str, int] = {}

    def _path(self, name: str) -> str:
        return os.path.join(self.directory, name)

    def _fd(self, name: str) -> int:
        fd = self._fds.get(name)
        if fd is None:
            fd = os.open(self._path(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._fds[name] = fd
        return fd

    def _close(self, name: str) -> None:
        fd = self._fds.pop(name, None)
        if fd is not None:
            os.close(fd)

    def list(self) -> list[str]:
        return sorted(os.listdir(self.directory))

    def read(self, name: str) -> bytes:
        with open(self._path(name), "rb") as f:
            return f.read()

    def append(self, name: str, data: bytes) -> None:
        fd = self._fd(name)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def write(self, name: str, data: bytes) -> None:
        self._close(name)
        with open(self._path(name), "wb") as f:
            f.write(data)

    def sync(self, name: str) -> None:
        fd = self._fds.get(name)
        if fd is not None:
            os.fsync(fd)
            return
        fd = os.open(self._path(name), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def truncate(self, name: str, size: int) -> None:
        os.truncate(self._path(name), size)

    def rename(self, src: str, dst: str) -> None:
        self._close(src)
        self._close(dst)
        os.rename(self._path(src), self._path(dst))

    def remove(self, name: str) -> None:
        self._close(name)
        os.remove(self._path(name))

    def sync_dir(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        for name in list(self._fds):
            self._close(name)


class _Inode:
    __slots__ = ("data", "synced")

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)
        self.synced = 0


class MemFileSystem:
    """An in-memory directory with an explicit crash: see the module docstring for what survives.

    Truncation is treated as immediately durable (the log fsyncs right after truncating anyway).
    """

    def __init__(self) -> None:
        self._names: dict[str, _Inode] = {}
        self._durable_names: dict[str, _Inode] = {}
        self.syncs = 0
        """Count of file fsyncs, so tests can see group commit at work."""

    def _inode(self, name: str) -> _Inode:
        try:
            return self._names[name]
        except KeyError:
            raise FileNotFoundError(f"in-memory file {name!r} does not exist") from None

    def list(self) -> list[str]:
        return sorted(self._names)

    def read(self, name: str) -> bytes:
        return bytes(self._inode(name).data)

    def append(self, name: str, data: bytes) -> None:
        inode = self._names.get(name)
        if inode is None:
            inode = self._names[name] = _Inode()
        inode.data += data

    def write(self, name: str, data: bytes) -> None:
        self._names[name] = _Inode(data)

    def sync(self, name: str) -> None:
        inode = self._inode(name)
        inode.synced = len(inode.data)
        self.syncs += 1

    def truncate(self, name: str, size: int) -> None:
        inode = self._inode(name)
        del inode.data[size:]
        inode.synced = min(inode.synced, size)

    def rename(self, src: str, dst: str) -> None:
        self._names[dst] = self._names.pop(src)

    def remove(self, name: str) -> None:
        del self._names[name]

    def sync_dir(self) -> None:
        self._durable_names = dict(self._names)

    def crash(self, rng: random.Random | None = None, torn_probability: float = 0.5) -> None:
        """Lose everything not made durable. With `rng`, each file's unsynced tail may survive in
        part (a random prefix, its last bytes possibly garbled), as a torn write would leave it."""
        survivors: dict[str, _Inode] = {}
        for name, inode in self._durable_names.items():
            kept = inode.data[: inode.synced]
            unsynced = inode.data[inode.synced :]
            if rng is not None and unsynced and rng.random() < torn_probability:
                torn = bytearray(unsynced[: rng.randrange(len(unsynced) + 1)])
                if torn and rng.random() < 0.5:
                    torn[-1] ^= 1 + rng.randrange(255)
                kept += torn
            survivor = _Inode(bytes(kept))
            survivor.synced = len(kept)
            survivors[name] = survivor
        self._names = survivors
        self._durable_names = dict(survivors)

    def corrupt(self, name: str, offset: int, xor: int = 0xFF) -> None:
        """Flip bits of one byte, as media corruption would (tests only)."""
        self._inode(name).data[offset] ^= xor
