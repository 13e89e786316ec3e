"""Moving a file's bytes between a socket and a file descriptor with few copies, and checksumming them.

A dedicated transfer (``net.dedicated``) spends its time in copies, so each side does as few as
Linux allows:

* receiving, ``splice_into``: the socket's bytes go into a pipe and from the pipe into the file
  (``os.splice``), in the kernel: no copy through Python's memory and one system call per
  pipe-full (a pipe is enlarged to ``PIPE_BYTES`` where the system allows). Where ``os.splice``
  is missing the bytes go through one large ``recv_into`` buffer instead (``recv_into_file``);
* writing back early, ``start_writeback``: every ``WRITEBACK_BYTES`` received, the kernel is
  asked to start writing them to disk (``sync_file_range``, what RocksDB's ``bytes_per_sync``
  does), so the disk works while the network does and the fsync that makes the file durable
  later finds little left to write;
* checksumming, ``digest_of``: xxHash's XXH3-128 over the bytes read back from the page cache in
  large pieces (about 10 GB/s: a few milliseconds per tablet file, with the GIL released). Both
  ends checksum the same bytes, the sender from its file while ``sendfile`` sends it, the
  receiver from the file it wrote, so a byte changed anywhere between the two (the network, a
  bug in these loops, the write) is found before the file is used. It is not a cryptographic
  hash: the peers are authenticated members, the checksum guards against accidents. The
  receiver checksums on a thread of its own that trails the writes (``TrailingDigest``), so its
  checksum is ready moments after the last byte rather than one more pass over the file later.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import select
import socket
import sys
import threading
from collections.abc import Callable

import xxhash

DIGEST = "xxh3_128"
"""The checksum's name, as the two ends agree on it."""
PIPE_BYTES = 1 << 20
"""Pipe capacity asked for when splicing (Linux's default is 64 KiB; ``/proc/sys/fs/pipe-max-size``
caps it, 1 MiB by default)."""
RECEIVE_BUFFER = 4 << 20
"""Bytes per ``recv_into`` where splice is missing: loopback and fast links deliver megabytes
per call when asked for them."""
DIGEST_PIECE = 4 << 20
WRITEBACK_BYTES = 8 << 20
"""Bytes received between two requests to start writing them back."""
_SYNC_FILE_RANGE_WRITE = 2
"""Linux's ``SYNC_FILE_RANGE_WRITE``: start writing dirty pages of the range, do not wait."""


class TransferCut(ConnectionError):
    """A dedicated transfer ended before all its bytes arrived (the sender stopped or died)."""


def digest_of(fd: int, size: int, tail: bytes = b"") -> bytes:
    """XXH3-128 of the first ``size`` bytes of the file open at ``fd`` followed by ``tail`` (read
    with ``pread``, so the file's position is left alone and any thread may call it)."""
    digest = xxhash.xxh3_128()
    buffer = memoryview(bytearray(min(DIGEST_PIECE, max(size, 1))))
    offset = 0
    while offset < size:
        n = os.preadv(fd, [buffer[: min(len(buffer), size - offset)]], offset)
        if n == 0:
            raise TransferCut(f"the file holds {offset} bytes, {size} were to be checksummed")
        digest.update(buffer[:n])
        offset += n
    digest.update(tail)
    return digest.digest()


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    """libc's ``sync_file_range`` (Linux only; Python's ``os`` does not offer it), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    call.restype = ctypes.c_int
    return call


_SYNC_FILE_RANGE = _sync_file_range()


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start writing ``length`` bytes of the file from ``offset`` to disk,
    without waiting for them. Only an early start: durability still comes from the fsync that
    follows, so where the call is missing or fails nothing is lost but the head start."""
    if _SYNC_FILE_RANGE is not None:
        _SYNC_FILE_RANGE(fd, offset, length, _SYNC_FILE_RANGE_WRITE)


class _Writeback:
    """Starts the writeback of every ``WRITEBACK_BYTES`` written from ``base`` on."""

    def __init__(self, fd: int, base: int) -> None:
        self._fd = fd
        self._base = base
        self._started = 0

    def written(self, total: int) -> None:
        if total - self._started >= WRITEBACK_BYTES:
            start_writeback(self._fd, self._base + self._started, total - self._started)
            self._started = total


class TrailingDigest:
    """XXH3-128 of the first ``size`` bytes of the file at ``fd``, computed on a thread of its own
    as they are written (``written`` says how far they are). ``result`` waits for the last bytes;
    ``stop`` ends the thread early (a transfer that failed)."""

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self._size = size
        self._written = 0
        self._stopped = False
        self._error: BaseException | None = None
        self._digest = xxhash.xxh3_128()
        self._progress = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="transfer-digest", daemon=True)
        self._thread.start()

    def written(self, total: int) -> None:
        with self._progress:
            self._written = total
            self._progress.notify()

    def result(self) -> bytes:
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self._stopped:
            raise TransferCut("the checksum was stopped before the last byte")
        return self._digest.digest()

    def stop(self) -> None:
        with self._progress:
            self._stopped = True
            self._progress.notify()
        self._thread.join()

    def _run(self) -> None:
        buffer = memoryview(bytearray(min(DIGEST_PIECE, max(self._size, 1))))
        hashed = 0
        try:
            while hashed < self._size:
                with self._progress:
                    while self._written <= hashed and not self._stopped:
                        self._progress.wait()
                    if self._stopped:
                        return
                    upto = min(self._written, self._size)
                while hashed < upto:
                    n = os.preadv(self._fd, [buffer[: min(len(buffer), upto - hashed)]], hashed)
                    if n == 0:
                        raise TransferCut(f"the file holds {hashed} bytes, {upto} were written")
                    self._digest.update(buffer[:n])
                    hashed += n
        except BaseException as exc:  # handed to result()
            self._error = exc


def splice_into(
    sock: socket.socket, fd: int, size: int, timeout: float, progress: Callable[[int], None] | None = None
) -> None:
    """Move exactly ``size`` bytes from ``sock`` into the file at ``fd`` (from its current
    position) inside the kernel, starting their writeback as they arrive; ``progress`` is told
    how many are in the file after each step. ``timeout`` bounds each wait for data. Raises
    ``TransferCut`` if the connection ends first, ``TimeoutError`` if the sender goes quiet."""
    if not hasattr(os, "splice"):
        recv_into_file(sock, fd, size, timeout, progress)
        return
    writeback = _Writeback(fd, os.lseek(fd, 0, os.SEEK_CUR))
    sock.setblocking(False)
    source = sock.fileno()
    readable = select.poll()
    readable.register(source, select.POLLIN)
    pipe_out, pipe_in = os.pipe()
    try:
        with contextlib.suppress(OSError):  # a smaller pipe only means more calls
            fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        got = 0
        while got < size:
            try:
                n = os.splice(source, pipe_in, min(PIPE_BYTES, size - got), flags=os.SPLICE_F_MOVE)
            except BlockingIOError:
                if not readable.poll(timeout * 1000):
                    raise TimeoutError(f"no data for {timeout:.0f} s after {got} of {size} bytes") from None
                continue
            if n == 0:
                raise TransferCut(f"the transfer ended after {got} of {size} bytes")
            moved = 0
            while moved < n:  # the pipe holds n bytes; a file takes them all without blocking long
                moved += os.splice(pipe_out, fd, n - moved, flags=os.SPLICE_F_MOVE)
            got += n
            writeback.written(got)
            if progress is not None:
                progress(got)
    finally:
        os.close(pipe_out)
        os.close(pipe_in)


def recv_into_file(
    sock: socket.socket, fd: int, size: int, timeout: float, progress: Callable[[int], None] | None = None
) -> None:
    """``splice_into`` through one large buffer: for systems without ``os.splice``."""
    sock.settimeout(timeout)
    writeback = _Writeback(fd, os.lseek(fd, 0, os.SEEK_CUR))
    buffer = memoryview(bytearray(min(RECEIVE_BUFFER, max(size, 1))))
    got = 0
    while got < size:
        n = sock.recv_into(buffer, min(len(buffer), size - got))
        if n == 0:
            raise TransferCut(f"the transfer ended after {got} of {size} bytes")
        written = 0
        while written < n:
            written += os.write(fd, buffer[written:n])
        got += n
        writeback.written(got)
        if progress is not None:
            progress(got)


def recv_exactly(sock: socket.socket, n: int, timeout: float) -> bytes:
    """Exactly ``n`` bytes from a socket (blocking, ``timeout`` per wait); ``TransferCut`` if
    the connection ends first."""
    sock.settimeout(timeout)
    data = bytearray(n)
    view = memoryview(data)
    got = 0
    while got < n:
        read = sock.recv_into(view[got:])
        if read == 0:
            raise TransferCut(f"the connection ended after {got} of the trailer's {n} bytes")
        got += read
    return bytes(data)
