"""SELECT features: GROUP BY, aggregates under LIMIT, DISTINCT, multi-column slices, index lookups."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql.errors import InvalidRequest
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


async def _filled(node: DataNode) -> None:
    await node.run(KS)
    await node.run("CREATE TABLE ks.t (p int, a int, b int, v int, PRIMARY KEY (p, a, b))")
    for p in range(3):
        for a in range(3):
            for b in range(2):
                await node.run(f"INSERT INTO ks.t (p, a, b, v) VALUES ({p}, {a}, {b}, {p * 10 + a * 2 + b})")


def test_group_by_and_aggregates(node: DataNode) -> None:
    async def go() -> None:
        await _filled(node)
        rows = await node.rows("SELECT p, count(*), max(v), sum(v) FROM ks.t GROUP BY p")
        assert sorted(rows) == [(p, 6, p * 10 + 5, 6 * p * 10 + 15) for p in range(3)]
        rows = await node.rows("SELECT p, a, min(v) FROM ks.t WHERE p = 1 GROUP BY p, a")
        assert rows == [(1, a, 10 + 2 * a) for a in range(3)]
        assert await node.rows("SELECT count(*) FROM ks.t LIMIT 1") == [(18,)]
        assert await node.rows("SELECT avg(v) FROM ks.t WHERE p = 0") == [(2,)]
        with pytest.raises(InvalidRequest, match="prefix"):
            await node.rows("SELECT count(*) FROM ks.t GROUP BY a")

    node.drive(go())


def test_distinct_and_multi_column_slices(node: DataNode) -> None:
    async def go() -> None:
        await _filled(node)
        assert sorted(await node.rows("SELECT DISTINCT p FROM ks.t")) == [(0,), (1,), (2,)]
        rows = await node.rows("SELECT a, b FROM ks.t WHERE p = 2 AND (a, b) > (0, 1) AND (a, b) <= (2, 0)")
        assert rows == [(1, 0), (1, 1), (2, 0)]
        rows = await node.rows("SELECT a, b FROM ks.t WHERE p = 2 AND (a, b) IN ((2, 1), (0, 0))")
        assert rows == [(0, 0), (2, 1)]
        assert await node.rows("SELECT b FROM ks.t WHERE p = 0 AND a = 1 ORDER BY a DESC, b DESC") == [
            (1,),
            (0,),
        ]

    node.drive(go())


def test_indexed_column_needs_no_allow_filtering(node: DataNode) -> None:
    async def go() -> None:
        await _filled(node)
        with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
            await node.rows("SELECT p FROM ks.t WHERE v = 13")
        await node.run("CREATE INDEX ON ks.t (v)")
        assert await node.rows("SELECT p, a, b FROM ks.t WHERE v = 13") == [(1, 1, 1)]

    node.drive(go())


def test_default_ttl_and_using_ttl_zero(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.e (p int PRIMARY KEY, v int) WITH default_time_to_live = 100")
        await node.run("INSERT INTO ks.e (p, v) VALUES (1, 1)")
        await node.run("INSERT INTO ks.e (p, v) VALUES (2, 2) USING TTL 0")
        assert await node.rows("SELECT p, ttl(v) FROM ks.e WHERE p IN (1, 2)") == [(1, 100), (2, None)]
        node.clock.now += 100
        assert await node.rows("SELECT p FROM ks.e") == [(2,)]

    node.drive(go())


def test_descending_clustering_ranges(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run(
            "CREATE TABLE ks.d (p int, c int, PRIMARY KEY (p, c)) WITH CLUSTERING ORDER BY (c DESC)"
        )
        for p in range(2):
            for c in range(6):
                await node.run(f"INSERT INTO ks.d (p, c) VALUES ({p}, {c})")
        assert await node.rows("SELECT c FROM ks.d WHERE p = 1 AND c > 2") == [(5,), (4,), (3,)]
        assert await node.rows("SELECT c FROM ks.d WHERE p = 1 AND c >= 1 AND c < 4") == [(3,), (2,), (1,)]
        rows = await node.rows(
            "SELECT c FROM ks.d WHERE p = 1 AND c >= 1 AND c < 4 ORDER BY c ASC", page_size=1
        )
        assert rows == [(1,), (2,), (3,)]
        scan = await node.rows("SELECT p, c FROM ks.d WHERE c IN (4, 1) ALLOW FILTERING", page_size=1)
        assert sorted(scan) == [(0, 1), (0, 4), (1, 1), (1, 4)]
        await node.run("DELETE FROM ks.d WHERE p = 1 AND c < 2")
        assert await node.rows("SELECT c FROM ks.d WHERE p = 1") == [(5,), (4,), (3,), (2,)]

    node.drive(go())
