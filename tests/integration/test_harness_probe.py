"""The OPTIONS readiness probe against tiny hand-made listeners (no tabletdb server needed)."""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.floor_server import string_multimap
from tests.harness.addresses import AddressAllocator, NodeEndpoints
from tests.harness.probe import (
    HEADER,
    ProbeError,
    options_frame,
    parse_string_multimap,
    probe_options,
    wait_cql_ready,
)

Reply = Callable[[bytes], bytes]  # request frame -> raw bytes to send back


def supported_reply(entries: dict[str, list[str]]) -> Reply:
    def reply(request: bytes) -> bytes:
        body = string_multimap(entries)
        _version, _flags, stream, _opcode, _length = HEADER.unpack(request[:9])
        return HEADER.pack(0x84, 0, stream, 0x06, len(body)) + body

    return reply


GOOD = supported_reply({"CQL_VERSION": ["3.3.1"], "COMPRESSION": []})


class Listener:
    """An asyncio TCP server in a background thread answering each 9-byte request with `reply`."""

    def __init__(self, endpoints: NodeEndpoints, reply: Reply) -> None:
        self.endpoints = endpoints
        self.reply = reply
        self.requests: list[bytes] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.Server | None = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readexactly(9)
            self.requests.append(request)
            writer.write(self.reply(request))
            await writer.drain()
        finally:
            writer.close()

    def start(self) -> None:
        self.thread.start()
        host, port = self.endpoints.address, self.endpoints.native_port
        future = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._handle, host, port), self.loop)
        self.server = future.result(timeout=30)

    def stop(self) -> None:
        async def close() -> None:
            if self.server is not None:
                self.server.close()
                await self.server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


@pytest.fixture
def endpoints(address_allocator: AddressAllocator) -> NodeEndpoints:
    return address_allocator.allocate()


@pytest.fixture
def listen(endpoints: NodeEndpoints) -> Iterator[Callable[[Reply], Listener]]:
    started: list[Listener] = []

    def start(reply: Reply) -> Listener:
        listener = Listener(endpoints, reply)
        listener.start()
        started.append(listener)
        return listener

    yield start
    for listener in started:
        listener.stop()


def test_options_frame_is_the_v4_header() -> None:
    assert options_frame() == bytes([0x04, 0x00, 0x00, 0x00, 0x05, 0, 0, 0, 0])


@given(
    st.dictionaries(st.text(min_size=1, max_size=20), st.lists(st.text(max_size=30), max_size=4), max_size=8)
)
def test_multimap_decoder_inverts_an_independent_encoder(entries: dict[str, list[str]]) -> None:
    assert parse_string_multimap(string_multimap(entries)) == entries


def test_multimap_decoder_rejects_truncation() -> None:
    encoded = string_multimap({"CQL_VERSION": ["3.3.1"]})
    with pytest.raises(ProbeError, match=r"truncated|runs past"):
        parse_string_multimap(encoded[:-2])
    with pytest.raises(ProbeError, match="trailing"):
        parse_string_multimap(encoded + b"\0")


def test_probe_reads_supported(listen: Callable[[Reply], Listener], endpoints: NodeEndpoints) -> None:
    listener = listen(GOOD)
    supported = probe_options(endpoints.address, endpoints.native_port)
    assert supported == {"CQL_VERSION": ["3.3.1"], "COMPRESSION": []}
    assert listener.requests == [options_frame()]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (supported_reply({"CQL_VERSION": ["3.3.1"]}), "lacks COMPRESSION"),
        (lambda r: HEADER.pack(0x84, 0, 0, 0x02, 0), "expected SUPPORTED"),
        (lambda r: HEADER.pack(0x83, 0, 0, 0x06, 2) + b"\0\0", "version byte"),
        (lambda r: HEADER.pack(0x84, 0, 7, 0x06, 2) + b"\0\0", "stream 7"),
        (
            lambda r: HEADER.pack(0x84, 0, 0, 0x00, 12) + struct.pack(">iH", 10, 6) + b"nope!!",
            "ERROR: nope!!",
        ),
    ],
    ids=["no-compression-key", "wrong-opcode", "wrong-version", "wrong-stream", "error-frame"],
)
def test_probe_rejects_non_cql_answers(
    listen: Callable[[Reply], Listener], endpoints: NodeEndpoints, reply: Reply, message: str
) -> None:
    listen(reply)
    with pytest.raises(ProbeError, match=message):
        probe_options(endpoints.address, endpoints.native_port)


def test_wait_succeeds_once_a_late_server_comes_up(
    listen: Callable[[Reply], Listener], endpoints: NodeEndpoints
) -> None:
    attempts = 0

    def alive() -> bool:
        nonlocal attempts
        attempts += 1
        if attempts == 3:  # the "server" finishes starting while we poll
            listen(GOOD)
        return True

    supported = wait_cql_ready(
        endpoints.address, endpoints.native_port, timeout=60, alive=alive, interval=0.01
    )
    assert "CQL_VERSION" in supported and attempts >= 3


def test_wait_stops_when_the_process_died(endpoints: NodeEndpoints) -> None:
    with pytest.raises(ProbeError, match="exited"):
        wait_cql_ready(endpoints.address, endpoints.native_port, timeout=60, alive=lambda: False)


def test_wait_times_out_with_the_last_error(endpoints: NodeEndpoints) -> None:
    with pytest.raises(TimeoutError, match="not CQL-ready") as info:
        wait_cql_ready(endpoints.address, endpoints.native_port, timeout=0.2, interval=0.05)
    assert "Refused" in str(info.value)
