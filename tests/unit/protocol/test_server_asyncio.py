"""CqlServer behaviour seen from a raw asyncio client: concurrency across streams, events,
handler failures, graceful stop. Ordering is controlled with asyncio.Events, never with sleeps."""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import Any

import pytest
from cassandra import protocol as dp

from tabletdb.cql import errors as E
from tabletdb.cql.results import Result, VoidResult
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.requests import QueryParameters
from tabletdb.protocol.responses import SchemaChangeEvent, StatusChangeEvent
from tabletdb.protocol.server import CqlServer
from tests.unit.protocol.driver_oracle import decode_response, request_frame
from tests.unit.protocol.fake_handler import FakeHandler


class GatedHandler(FakeHandler):
    """`SLOW` waits for `gate`; `CRASH` raises a non-CQL exception; anything else is Void."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.slow_started = asyncio.Event()

    async def query(self, client: ClientState, query: str, params: QueryParameters) -> Result:
        if query == "SLOW":
            self.slow_started.set()
            await self.gate.wait()
        if query == "CRASH":
            raise RuntimeError("handler bug")
        if query == "INVALID":
            raise E.InvalidRequest("nope")
        return VoidResult()


class RawClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> RawClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = cls(reader, writer)
        await client.request(dp.StartupMessage("3.3.1", {"CQL_VERSION": "3.3.1"}))
        return client

    def send(self, msg: Any, stream: int = 0) -> None:
        self.writer.write(request_frame(msg, stream))

    async def read(self) -> Any:
        header = await self.reader.readexactly(9)
        (length,) = struct.unpack(">i", header[5:])
        return decode_response(header + await self.reader.readexactly(length))

    async def request(self, msg: Any, stream: int = 0) -> Any:
        self.send(msg, stream)
        return await self.read()

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_slow_request_does_not_block_other_streams() -> None:
    async def main() -> None:
        handler = GatedHandler()
        server = CqlServer(handler, port=0)
        await server.start()
        client = await RawClient.connect(server.port)
        client.send(dp.QueryMessage("SLOW", 1), stream=1)
        await handler.slow_started.wait()
        client.send(dp.QueryMessage("FAST", 1), stream=2)
        first = await client.read()
        assert first.stream_id == 2
        handler.gate.set()
        second = await client.read()
        assert second.stream_id == 1 and second.kind == dp.RESULT_KIND_VOID
        await client.close()
        await server.stop()

    run(main())


def test_handler_errors_become_error_frames(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tabletdb.protocol.server")

    async def main() -> None:
        server = CqlServer(GatedHandler(), port=0)
        await server.start()
        client = await RawClient.connect(server.port)
        crash = await client.request(dp.QueryMessage("CRASH", 1), stream=3)
        assert isinstance(crash, dp.ServerError) and "handler bug" in crash.message and crash.stream_id == 3
        invalid = await client.request(dp.QueryMessage("INVALID", 1), stream=4)
        assert isinstance(invalid, dp.InvalidRequestException)
        ok = await client.request(dp.QueryMessage("OK", 1), stream=5)
        assert ok.kind == dp.RESULT_KIND_VOID
        await client.close()
        await server.stop()

    run(main())
    # the internal error (and only it: a client's bad request is no server fault) is logged at
    # ERROR with its statement and traceback
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "'CRASH'" in errors[0].getMessage()
    assert errors[0].exc_info is not None and "handler bug" in str(errors[0].exc_info[1])


def test_broadcast_reaches_only_registered_connections() -> None:
    async def main() -> None:
        server = CqlServer(GatedHandler(), port=0)
        await server.start()
        listener = await RawClient.connect(server.port)
        other = await RawClient.connect(server.port)
        ready = await listener.request(dp.RegisterMessage(["SCHEMA_CHANGE"]), stream=1)
        assert isinstance(ready, dp.ReadyMessage)
        assert server.broadcast(StatusChangeEvent(status="UP", address="127.0.0.9")) == 0
        ready = await other.request(dp.RegisterMessage(["STATUS_CHANGE"]), stream=2)
        assert server.broadcast(StatusChangeEvent(status="UP", address="127.0.0.9")) == 1
        status = await other.read()
        assert status.event_args == {"change_type": "UP", "address": ("127.0.0.9", server.port)}
        assert (
            server.broadcast(SchemaChangeEvent(change="DROPPED", target="TABLE", keyspace="ks", name="t"))
            == 1
        )
        event = await listener.read()
        assert isinstance(event, dp.EventMessage) and event.stream_id == -1
        assert event.event_args == {
            "change_type": "DROPPED",
            "target_type": "TABLE",
            "keyspace": "ks",
            "table": "t",
        }
        # The unregistered connection got nothing: its next frame is the answer to its own request.
        assert (await other.request(dp.QueryMessage("OK", 1), stream=7)).stream_id == 7
        await listener.close()
        await other.close()
        await server.stop()

    run(main())


def test_graceful_stop_finishes_in_flight_requests() -> None:
    async def main() -> None:
        handler = GatedHandler()
        server = CqlServer(handler, port=0)
        await server.start()
        client = await RawClient.connect(server.port)
        client.send(dp.QueryMessage("SLOW", 1), stream=9)
        await handler.slow_started.wait()
        stopping = asyncio.ensure_future(server.stop(grace=30))
        await asyncio.sleep(0)
        assert not stopping.done()
        handler.gate.set()
        reply = await client.read()
        assert reply.stream_id == 9 and reply.kind == dp.RESULT_KIND_VOID
        await stopping
        assert await client.reader.read() == b""  # then the server closed the connection
        assert len(handler.closed) == len(handler.opened) == 1
        await client.close()

    run(main())


def test_in_flight_limit_pauses_reading_without_losing_requests() -> None:
    async def main() -> None:
        handler = GatedHandler()
        server = CqlServer(handler, port=0, max_in_flight=2)
        await server.start()
        client = await RawClient.connect(server.port)
        for stream in range(1, 6):
            client.send(dp.QueryMessage("SLOW", 1), stream=stream)
        await handler.slow_started.wait()
        handler.gate.set()
        streams = sorted([(await client.read()).stream_id for _ in range(5)])
        assert streams == [1, 2, 3, 4, 5]
        await client.close()
        await server.stop()

    run(main())


def test_requests_wait_for_the_in_flight_byte_budget_instead_of_failing() -> None:
    async def main() -> None:
        handler = GatedHandler()
        seen: list[str] = []
        gated_query = handler.query

        async def recording_query(client: ClientState, query: str, params: QueryParameters) -> Result:
            seen.append(query)
            return await gated_query(client, query, params)

        handler.query = recording_query  # type: ignore[method-assign]
        # One byte: any request uses the whole budget, so requests run one at a time, server-wide.
        server = CqlServer(handler, port=0, max_in_flight_bytes=1)
        await server.start()
        slow = await RawClient.connect(server.port)
        fast = await RawClient.connect(server.port)
        slow.send(dp.QueryMessage("SLOW", 1), stream=1)
        await handler.slow_started.wait()
        fast.send(dp.QueryMessage("FAST", 1), stream=2)
        while server.budget.waiting == 0:
            await asyncio.sleep(0)
        assert seen == ["SLOW"]  # FAST waits for the budget, it is not refused
        handler.gate.set()
        assert (await slow.read()).stream_id == 1
        answer = await fast.read()
        assert answer.stream_id == 2 and answer.kind == dp.RESULT_KIND_VOID
        assert seen == ["SLOW", "FAST"] and server.budget.available == 1
        await slow.close()
        await fast.close()
        await server.stop()

    run(main())
