"""The data path through the query processor, in process (storage on a temporary directory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql.errors import InvalidRequest
from tests.unit.query.data_harness import DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


async def _setup(node: DataNode, table: str) -> None:
    await node.run(KS)
    await node.run(table)


def test_insert_select_update_delete(node: DataNode) -> None:
    async def go() -> None:
        await _setup(node, "CREATE TABLE ks.t (p int, c int, v text, s int static, PRIMARY KEY (p, c))")
        assert len(node.tablets) == 1
        for c in range(5):
            await node.run(f"INSERT INTO ks.t (p, c, v) VALUES (1, {c}, 'v{c}')")
        await node.run("UPDATE ks.t SET s = 9 WHERE p = 1")
        assert await node.rows("SELECT c, v, s FROM ks.t WHERE p = 1") == [(c, f"v{c}", 9) for c in range(5)]
        assert await node.rows("SELECT c FROM ks.t WHERE p = 1 AND c > 1 AND c <= 3") == [(2,), (3,)]
        assert await node.rows("SELECT c FROM ks.t WHERE p IN (1, 2) AND c IN (4, 0)") == [(0,), (4,)]
        assert await node.rows("SELECT c FROM ks.t WHERE p = 1 ORDER BY c DESC LIMIT 2") == [(4,), (3,)]
        await node.run("DELETE v FROM ks.t WHERE p = 1 AND c = 0")
        await node.run("DELETE FROM ks.t WHERE p = 1 AND c >= 3")
        assert await node.rows("SELECT c, v FROM ks.t WHERE p = 1") == [(0, None), (1, "v1"), (2, "v2")]
        await node.run("DELETE FROM ks.t WHERE p = 1")
        assert await node.rows("SELECT * FROM ks.t") == []

    node.drive(go())


def test_collections(node: DataNode) -> None:
    async def go() -> None:
        await _setup(
            node, "CREATE TABLE ks.t (p int PRIMARY KEY, l list<int>, s set<text>, m map<int, text>)"
        )
        await node.run("INSERT INTO ks.t (p, l, s, m) VALUES (1, [1, 2], {'b', 'a'}, {2: 'x', -1: 'y'})")
        await node.run("UPDATE ks.t SET l = l + [3], s = s + {'c'}, m[5] = 'z' WHERE p = 1")
        await node.run("UPDATE ks.t SET l = [0] + l, s = s - {'a'}, m = m - {2} WHERE p = 1")
        await node.run("UPDATE ks.t SET l[1] = 10 WHERE p = 1")
        await node.run("UPDATE ks.t SET l = l - [2] WHERE p = 1")
        assert await node.rows("SELECT l, s, m FROM ks.t WHERE p = 1") == [
            ((0, 10, 3), ("b", "c"), ((-1, "y"), (5, "z")))
        ]
        await node.run("DELETE m[5], l[0] FROM ks.t WHERE p = 1")
        assert await node.rows("SELECT l, m FROM ks.t WHERE p = 1") == [((10, 3), ((-1, "y"),))]

    node.drive(go())


def test_timestamps_and_ttl(node: DataNode) -> None:
    async def go() -> None:
        await _setup(node, "CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        await node.run("INSERT INTO ks.t (p, v) VALUES (1, 1) USING TIMESTAMP 100")
        await node.run("INSERT INTO ks.t (p, v) VALUES (1, 2) USING TIMESTAMP 50")
        assert await node.rows("SELECT v, writetime(v) FROM ks.t WHERE p = 1") == [(1, 100)]
        await node.run("INSERT INTO ks.t (p, v) VALUES (2, 5) USING TTL 10")
        assert await node.rows("SELECT ttl(v) FROM ks.t WHERE p = 2") == [(10,)]
        node.clock.now += 11
        assert await node.rows("SELECT * FROM ks.t WHERE p = 2") == []

    node.drive(go())


def test_paging_counts_and_filtering(node: DataNode) -> None:
    async def go() -> None:
        await _setup(node, "CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
        for p in range(20):
            for c in range(7):
                await node.run(f"INSERT INTO ks.t (p, c, v) VALUES ({p}, {c}, {p * c})")
        everything = await node.rows("SELECT p, c FROM ks.t")
        assert sorted(everything) == [(p, c) for p in range(20) for c in range(7)]
        for size in (1, 3, 50):
            assert await node.rows("SELECT p, c FROM ks.t", page_size=size) == everything
        assert await node.rows("SELECT count(*) FROM ks.t") == [(140,)]
        assert await node.rows("SELECT p FROM ks.t PER PARTITION LIMIT 1", page_size=4) == [
            (r[0],) for r in everything[::7]
        ]
        with pytest.raises(InvalidRequest):
            await node.rows("SELECT * FROM ks.t WHERE v = 3")
        assert sorted(await node.rows("SELECT p, c FROM ks.t WHERE v = 6 ALLOW FILTERING")) == [
            (1, 6),
            (2, 3),
            (3, 2),
            (6, 1),
        ]

    node.drive(go())


def test_validation_stores_nothing(node: DataNode) -> None:
    async def go() -> None:
        await _setup(node, "CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
        with pytest.raises(InvalidRequest, match="c"):
            await node.run("INSERT INTO ks.t (p, v) VALUES (1, 1)")
        with pytest.raises(InvalidRequest):
            await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 'x')")
        with pytest.raises(InvalidRequest):
            await node.run(
                "BEGIN BATCH INSERT INTO ks.t (p, c, v) VALUES (1, 1, 1); "
                "INSERT INTO ks.t (p, v) VALUES (2, 2); APPLY BATCH"
            )
        assert await node.rows("SELECT * FROM ks.t") == []

    node.drive(go())


def test_truncate_and_drop_remove_files(node: DataNode, tmp_path: Path) -> None:
    async def go() -> None:
        await _setup(node, "CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        await node.run("INSERT INTO ks.t (p, v) VALUES (1, 1)")
        files = list((tmp_path / "data" / "ks").glob("t-*/shard-*/tablet-*.db"))
        assert files
        await node.run("TRUNCATE ks.t")
        assert not any(f.exists() for f in files)
        assert await node.rows("SELECT * FROM ks.t") == []
        await node.run("DROP TABLE ks.t")
        assert not list((tmp_path / "data" / "ks").glob("t-*"))
        assert len(node.tablets) == 0

    node.drive(go())
