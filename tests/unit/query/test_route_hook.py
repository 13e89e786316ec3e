"""The processor's routing hook: EXECUTE of a routable statement is counted and hinted; others are not."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql.results import RowsResult, VoidResult
from tabletdb.dht.murmur3 import token_of
from tabletdb.protocol.extensions import TABLETS_ROUTING_V1
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.requests import QueryParameters
from tabletdb.protocol.routing import TABLETS_ROUTING_V1_KEY
from tabletdb.query.processor import QueryProcessor
from tabletdb.query.route_check import Op, RouteCheck, Target
from tabletdb.schema.ddl_common import SchemaConfig
from tests.unit.query.data_harness import HOST, SMP, DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[DataNode, RouteCheck]]:
    n = DataNode(tmp_path)
    routes = RouteCheck(HOST, SMP, 12, n.storage.tablet_maps, lambda _t, _tok: (HOST,))
    n.processor = QueryProcessor(
        lambda: None,  # type: ignore[arg-type,return-value]
        n.metadata,
        SchemaConfig(datacenters=("dc1",)),
        lambda: [],
        data=n.plane.data,
        routes=routes,
        backfill=n.plane.backfill,
    )
    yield n, routes
    n.close()


def _client(shard: int) -> ClientState:
    return ClientState(1, ("127.0.0.1", 1), shard, extensions=frozenset({TABLETS_ROUTING_V1}))


def test_execute_on_the_wrong_shard_answers_with_the_tablet(node: tuple[DataNode, RouteCheck]) -> None:
    n, routes = node

    async def go() -> None:
        await n.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await n.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int) WITH tablets = {'min_tablet_count': 2}")
        (tablet_map,) = n.storage.tablet_maps().values()
        insert = await n.processor.prepare(n.client, "INSERT INTO ks.t (p, v) VALUES (?, ?)")
        select = await n.processor.prepare(n.client, "SELECT v FROM ks.t WHERE p = ?")
        scan = await n.processor.prepare(n.client, "SELECT v FROM ks.t")
        key = struct.pack(">i", 7)
        owner = tablet_map.tablet_for(token_of(key)).replicas[0].shard
        right, wrong = _client(owner), _client(1 - owner)
        params = QueryParameters(1, [key, struct.pack(">i", 1)])
        written = await n.processor.execute(right, insert.id, None, params)
        assert isinstance(written, VoidResult) and written.custom_payload is None
        hinted = await n.processor.execute(wrong, select.id, None, QueryParameters(1, [key]))
        assert isinstance(hinted, RowsResult) and len(hinted.rows) == 1
        assert hinted.custom_payload is not None and TABLETS_ROUTING_V1_KEY in hinted.custom_payload
        await n.processor.execute(wrong, scan.id, None, QueryParameters(1, []))
        counts = routes.counters.snapshot()
        assert counts[(Op.WRITE, Target.REPLICA)] == 1
        assert counts[(Op.READ, Target.OTHER_SHARD)] == 1
        assert sum(counts.values()) == 2  # the scan is not single-partition: not counted
        assert routes.counters.payloads_sent == 1

    n.drive(go())
