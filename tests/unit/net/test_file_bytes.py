"""A dedicated transfer's receiving end over a real loopback TCP connection: the bytes land in the
file whole, through ``os.splice`` and through the ``recv_into`` fallback, and a byte changed on
the way, a short transfer or a sender gone quiet is refused with what happened."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.net import file_bytes
from tabletdb.net.dedicated import TransferCorrupt, TransferCut, receive_file
from tabletdb.net.file_bytes import DIGEST, TrailingDigest, digest_of
from tabletdb.net.framing import encode_frame

SIZE = 3 * file_bytes.PIPE_BYTES + 12345
"""Several pipe-fulls and a ragged end."""


@pytest.fixture(params=["splice", "recv_into"])
def path_taken(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "recv_into":
        monkeypatch.delattr(os, "splice", raising=False)
    elif not hasattr(os, "splice"):
        pytest.skip("os.splice is Linux-only")
    monkeypatch.setattr(file_bytes, "WRITEBACK_BYTES", 1 << 20)  # several writebacks started
    yield request.param


def _connected() -> tuple[socket.socket, socket.socket]:
    """Both ends of a real TCP connection on the loopback (splice needs a socket, not a pipe)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    return accepted, client


def _send(sock: socket.socket, payload: bytes, trailer: list[object] | None) -> threading.Thread:
    def run() -> None:
        try:
            sock.sendall(payload)
            if trailer is not None:
                sock.sendall(encode_frame(trailer))
            sock.shutdown(socket.SHUT_WR)
            sock.recv(1)  # until the receiver closes
        except OSError:
            pass
        finally:
            sock.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _receive(tmp_path: Path, payload: bytes, size: int, trailer: list[object] | None) -> Path:
    sender, receiver = _connected()
    thread = _send(sender, payload, trailer)
    out_path = tmp_path / "received.db"
    try:
        with open(out_path, "w+b") as out:
            receive_file(receiver, out, size, 30)
    finally:
        thread.join()
    return out_path


def _digest(data: bytes, tmp_path: Path) -> bytes:
    source = tmp_path / "source"
    source.write_bytes(data)
    with open(source, "rb") as f:
        return digest_of(f.fileno(), len(data))


def test_the_bytes_land_whole_and_match_the_senders_checksum(tmp_path: Path, path_taken: str) -> None:
    data = os.urandom(SIZE)
    received = _receive(tmp_path, data, SIZE, [DIGEST, _digest(data, tmp_path)])
    assert received.read_bytes() == data


def test_one_byte_changed_on_the_way_is_refused(tmp_path: Path, path_taken: str) -> None:
    data = os.urandom(SIZE)
    changed = bytearray(data)
    changed[SIZE // 2] ^= 0x01
    with pytest.raises(TransferCorrupt, match=f"the {SIZE} bytes written do not match the sender's"):
        _receive(tmp_path, bytes(changed), SIZE, [DIGEST, _digest(data, tmp_path)])


def test_a_transfer_that_ends_early_says_how_much_arrived(tmp_path: Path, path_taken: str) -> None:
    data = os.urandom(SIZE)
    with pytest.raises(TransferCut, match=f"the transfer ended after {SIZE - 10} of {SIZE} bytes"):
        _receive(tmp_path, data[:-10], SIZE, None)
    assert not [t for t in threading.enumerate() if t.name == "transfer-digest"]  # its checksum stopped


def test_a_trailer_of_another_checksum_is_refused(tmp_path: Path) -> None:
    data = os.urandom(1000)
    with pytest.raises(TransferCorrupt, match="not \\['xxh3_128', checksum\\]"):
        _receive(tmp_path, data, len(data), ["md5", b"x" * 16])


def test_a_sender_gone_quiet_times_out(tmp_path: Path, path_taken: str) -> None:
    sender, receiver = _connected()
    try:
        sender.sendall(b"x" * 1000)
        with open(tmp_path / "received.db", "w+b") as out, pytest.raises(TimeoutError):
            receive_file(receiver, out, 5000, 0.2)
    finally:
        sender.close()


def test_the_trailing_checksum_is_the_checksum_of_the_file(tmp_path: Path) -> None:
    data = os.urandom(SIZE)
    path = tmp_path / "f"
    with open(path, "w+b") as f:
        trailing = TrailingDigest(f.fileno(), SIZE)
        for at in range(0, SIZE, 100_000):  # written in pieces, as a transfer writes
            f.write(data[at : at + 100_000])
            f.flush()
            trailing.written(min(at + 100_000, SIZE))
        assert trailing.result() == _digest(data, tmp_path)


def test_the_checksum_covers_exactly_the_bytes_asked_for(tmp_path: Path) -> None:
    data = os.urandom(10_000)
    path = tmp_path / "f"
    path.write_bytes(data + b"tail")
    with open(path, "rb") as f:
        assert digest_of(f.fileno(), len(data)) == _digest(data, tmp_path)
        with pytest.raises(TransferCut, match="holds 10004 bytes, 20000 were to be checksummed"):
            digest_of(f.fileno(), 20_000)
