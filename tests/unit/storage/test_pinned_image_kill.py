"""A source killed -9 while it sends a pinned image (``pin_with_log``) loses nothing of its own:
the pin wrote nothing (no checkpoint, no fsync, no file), so its tablet file reopens intact with
every row it committed, before the pin and after it, and the receiver is left with less than the
image (which ``net.dedicated`` refuses as ``TransferCut``)."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

from tabletdb.storage.images.pinned_image import pin_store_with_log
from tabletdb.storage.tablet_store import TabletStore
from tests.unit.storage.test_pinned_image import checkpoint, keys_in, write

SMALL_BUFFER = 64 << 10


def child(path: str, port: int) -> None:
    """The source: rows in the file and in the log, a pin, rows after it, then the image sent in
    small pieces to ``port`` (each a blocking send: the receiver paces it)."""
    store = TabletStore(Path(path))
    write(store, 0, 2000)
    checkpoint(store.path, "TRUNCATE")
    write(store, 2000, 1000)
    pinned = pin_store_with_log(store)
    assert pinned is not None and pinned.log
    write(store, 3000, 200)  # committed (synced) after the pin
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SMALL_BUFFER)
    sock.connect(("127.0.0.1", port))
    print(pinned.total, flush=True)
    for offset in range(0, pinned.total, 1 << 16):
        sock.sendall(pinned.read_at(offset, 1 << 16))
    print("sent", flush=True)


def test_a_source_killed_mid_send_keeps_every_committed_row(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
    path = tmp_path / "t.db"
    port = server.getsockname()[1]
    code = f"from tests.unit.storage.test_pinned_image_kill import child; child({str(path)!r}, {port})"
    source = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    try:
        server.settimeout(120)
        conn, _ = server.accept()
        assert source.stdout is not None
        total = int(source.stdout.readline())
        got = 0
        while got < total // 2:
            got += len(conn.recv(1 << 16))
        source.send_signal(signal.SIGKILL)  # mid-send: the rest cannot fit in the two small buffers
        source.wait(60)
        while data := conn.recv(1 << 16):
            got += len(data)
        conn.close()
    finally:
        server.close()
        if source.poll() is None:
            source.kill()
            source.wait()
    assert source.returncode == -signal.SIGKILL
    assert got < total  # the receiver has less than the image: TransferCut, nothing installed
    with sqlite3.connect(path) as db:  # SQLite's own recovery, as the restarted node's store does
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert keys_in(path) == {b"k%d" % i for i in range(3200)}
