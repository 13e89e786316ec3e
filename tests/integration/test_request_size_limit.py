"""A request past native_transport_max_frame_size from an authenticated client, through the
real driver: the node answers "Request is too big ..." for that request while the client is
still sending it (no Broken pipe, no reset), skips the body, and the same connection serves on.
A compressed body whose declared size is past the limit is refused the same way, before
decompressing."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.auth import PlainTextAuthProvider

from tests.harness.clients import scylla_cluster
from tests.harness.node import NodeFactory, TestNode

LIMIT = 1024 * 1024  # native_transport_max_frame_size_in_mb: 1


@pytest.fixture
def small_frames(node_factory: NodeFactory) -> TestNode:
    return node_factory.start_node(
        options={"authenticator": "PasswordAuthenticator", "native_transport_max_frame_size_in_mb": 1}
    )


@pytest.fixture
def sessions(small_frames: TestNode) -> Iterator[tuple[Any, Any]]:
    auth = PlainTextAuthProvider("cassandra", "cassandra")
    with (
        scylla_cluster(small_frames, auth_provider=auth) as plain,
        scylla_cluster(small_frames, auth_provider=auth, compression="lz4") as lz4,
    ):
        yield plain.connect(), lz4.connect()


def test_an_oversized_request_gets_request_is_too_big_and_the_connection_serves_on(
    sessions: tuple[Any, Any],
) -> None:
    plain, lz4 = sessions
    plain.execute(
        "CREATE KEYSPACE big WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
    )
    plain.execute("CREATE TABLE big.t (k int PRIMARY KEY, b blob)")
    insert = plain.prepare("INSERT INTO big.t (k, b) VALUES (?, ?)")
    # Random bytes: lz4 cannot shrink them, so the frame itself is past the limit either way.
    value = os.urandom(3 * LIMIT)
    for session in (plain, lz4):
        with pytest.raises(
            InvalidRequest, match=rf"Request is too big: length \d+ exceeds maximum allowed {LIMIT}"
        ):
            session.execute(insert, (1, value))
        session.execute(insert, (2, b"small"))  # the same pool, the same connection: in sync
        assert session.execute("SELECT b FROM big.t WHERE k = 2").one().b == b"small"
    assert plain.execute("SELECT k FROM big.t WHERE k = 1").one() is None

    # Zeros compress ~250:1: the frame is small, its declared decompressed size is not.
    with pytest.raises(InvalidRequest, match=f"lz4 decompressed length .* exceeds maximum allowed {LIMIT}"):
        lz4.execute(insert, (3, bytes(3 * LIMIT)))
    lz4.execute(insert, (3, bytes(LIMIT // 2)))
    assert len(lz4.execute("SELECT b FROM big.t WHERE k = 3").one().b) == LIMIT // 2
