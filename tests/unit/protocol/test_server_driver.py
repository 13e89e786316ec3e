"""End to end: CqlServer with an in-test handler, driven by the real scylla-driver Cluster."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from cassandra import InvalidRequest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.policies import RoundRobinPolicy
from cassandra.protocol import SyntaxException

from tabletdb.protocol.responses import SchemaChangeEvent
from tabletdb.protocol.sasl import PASSWORD_AUTHENTICATOR
from tabletdb.protocol.server import CqlServer
from tests.unit.protocol.fake_handler import SELECT_BY_KEY, FakeHandler

R = TypeVar("R")


class ServerThread:
    """CqlServer on its own event loop in a thread, since the driver blocks the test thread."""

    def __init__(self, handler: FakeHandler, **kwargs: Any) -> None:
        self.handler = handler
        self.loop = asyncio.new_event_loop()
        self.server = CqlServer(handler, "127.0.0.1", 0, **kwargs)
        self.loop.run_until_complete(self.server.start())
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, fn: Callable[[], R]) -> R:
        async def run() -> R:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout=30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(grace=1.0), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=30)
        self.loop.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., ServerThread]]:
    started: list[ServerThread] = []

    def start(handler: FakeHandler, **kwargs: Any) -> ServerThread:
        st = ServerThread(handler, **kwargs)
        started.append(st)
        return st

    yield start
    for st in started:
        st.close()


def cluster(port: int, **kwargs: Any) -> Cluster:
    return Cluster(
        ["127.0.0.1"],
        port=port,
        protocol_version=4,
        load_balancing_policy=RoundRobinPolicy(),
        connect_timeout=10,
        control_connection_timeout=10,
        **kwargs,
    )


def test_driver_queries_prepares_and_executes(serve: Callable[..., ServerThread]) -> None:
    st = serve(FakeHandler())
    c = cluster(st.server.port)
    try:
        session = c.connect()
        rows = list(session.execute("SELECT k, v FROM ks.t"))
        assert [(r.k, r.v) for r in rows] == [(1, "one"), (2, "two")]
        prepared = session.prepare(SELECT_BY_KEY)
        assert prepared.routing_key_indexes == [0]
        for _ in range(3):  # EXECUTE with skip-metadata and the negotiated metadata id
            result = session.execute(prepared, [2])
            assert [(r.k, r.v) for r in result] == [(2, "two")]
        assert list(session.execute(prepared, [9])) == []
        with pytest.raises(InvalidRequest, match=r"unconfigured table ks\.nope"):
            session.execute("SELECT * FROM ks.nope")
        with pytest.raises(SyntaxException, match="no viable alternative"):
            session.execute("BOGUS")
        session.execute("USE ks")
        assert any(client.keyspace == "ks" for client in st.call(lambda: st.server.clients))
        # The routing payload from execute() reached the driver's tablet cache.
        tablets = c.metadata._tablets._tablets
        assert any(key[1] == "t" for key in tablets), tablets
        # Pipelined concurrent requests on one connection.
        futures = [session.execute_async(prepared, [1]) for _ in range(200)]
        assert all([(r.k, r.v) for r in f.result()] == [(1, "one")] for f in futures)
        client_states = st.call(lambda: st.server.clients)
        assert all(cs.driver_name == "ScyllaDB Python Driver" for cs in client_states)
        assert all("SCYLLA_USE_METADATA_ID" in cs.extensions for cs in client_states)
        # The control connection REGISTERed for events.
        sent = st.call(lambda: st.server.broadcast(SchemaChangeEvent(change="CREATED", keyspace="ks2")))
        assert sent == 1
    finally:
        c.shutdown()
    deadline = time.monotonic() + 60  # convergence bound, not a speed check
    while len(st.handler.closed) < len(st.handler.opened) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(st.handler.closed) == len(st.handler.opened) >= 2


def test_password_authentication(serve: Callable[..., ServerThread]) -> None:
    st = serve(FakeHandler(authenticator=PASSWORD_AUTHENTICATOR))
    c = cluster(st.server.port, auth_provider=PlainTextAuthProvider("cassandra", "secret"))
    try:
        session = c.connect()
        assert len(list(session.execute("SELECT k, v FROM ks.t"))) == 2
        assert {cs.user for cs in st.call(lambda: st.server.clients)} == {"cassandra"}
    finally:
        c.shutdown()
    bad = cluster(st.server.port, auth_provider=PlainTextAuthProvider("cassandra", "wrong"))
    try:
        with pytest.raises(NoHostAvailable, match="Username and/or password are incorrect"):
            bad.connect()
    finally:
        bad.shutdown()


def test_shard_aware_port_assigns_shard_by_source_port(serve: Callable[..., ServerThread]) -> None:
    handler = FakeHandler(nr_shards=2)
    st = serve(handler, shard_aware_port=0, nr_shards=2)
    handler.shard_aware_port = st.server.shard_aware_port
    c = cluster(st.server.port)
    try:
        session = c.connect()
        (pool,) = session._pools.values()
        deadline = time.monotonic() + 60  # convergence bound, not a speed check
        while time.monotonic() < deadline and set(pool._connections) != {0, 1}:
            session.execute("SELECT k, v FROM ks.t")
            time.sleep(0.05)
        assert set(pool._connections) == {0, 1}
        states = st.call(lambda: st.server.clients)
        aware = [cs for cs in states if cs.local_port == st.server.shard_aware_port]
        assert aware, "the driver never used the shard-aware port"
        assert all(cs.shard == cs.peer[1] % 2 for cs in aware)
    finally:
        c.shutdown()


def test_garbage_does_not_affect_other_connections(serve: Callable[..., ServerThread]) -> None:
    st = serve(FakeHandler())
    c = cluster(st.server.port)
    try:
        session = c.connect()
        for junk in (
            b"GET / HTTP/1.1\r\n\r\n",
            b"\x04\x00\x00\x01\x07\x7f\xff\xff\xff",
            b"\x05\x00\x00\x00\x05",
        ):
            with socket.create_connection(("127.0.0.1", st.server.port), timeout=10) as s:
                s.sendall(junk)
                reply = s.recv(65536)
                assert reply[:1] == b"\x84" and reply[4] == 0x00  # an ERROR frame, then close
                assert s.recv(65536) == b""
        assert len(list(session.execute("SELECT k, v FROM ks.t"))) == 2
    finally:
        c.shutdown()


def test_driver_without_explicit_version_downgrades_from_v5(serve: Callable[..., ServerThread]) -> None:
    st = serve(FakeHandler())
    c = Cluster(
        ["127.0.0.1"], port=st.server.port, load_balancing_policy=RoundRobinPolicy(), connect_timeout=10
    )
    try:
        session = c.connect()
        assert c.protocol_version == 4
        assert len(list(session.execute("SELECT k, v FROM ks.t"))) == 2
    finally:
        c.shutdown()
