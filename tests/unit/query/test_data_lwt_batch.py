"""Conditional statements, counters, batches, JSON and token() reads through the processor."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.results import RowsResult
from tabletdb.dht.murmur3 import token_of
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def decoded(result: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    assert isinstance(result, RowsResult)
    cols = result.metadata.columns
    rows = [
        tuple(None if v is None else codec.deserialize(c.type, v) for c, v in zip(cols, r))
        for r in result.rows
    ]
    return [c.name for c in cols], rows


def test_lwt(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v int, m map<text, int>, PRIMARY KEY (p, c))")
        assert decoded(await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 10) IF NOT EXISTS"))[1] == [
            (True,)
        ]
        names, rows = decoded(await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 20) IF NOT EXISTS"))
        assert names == ["[applied]", "p", "c", "m", "v"] and rows == [(False, 1, 1, None, 10)]
        assert decoded(await node.run("UPDATE ks.t SET v = 11 WHERE p = 1 AND c = 1 IF v = 10"))[1] == [
            (True,)
        ]
        assert decoded(await node.run("UPDATE ks.t SET v = 12 WHERE p = 1 AND c = 1 IF v = 10"))[1] == [
            (False, 11)
        ]
        assert decoded(await node.run("UPDATE ks.t SET v = 1 WHERE p = 1 AND c = 2 IF EXISTS"))[1] == [
            (False,)
        ]
        await node.run("UPDATE ks.t SET m = {'a': 1} WHERE p = 1 AND c = 1")
        assert decoded(await node.run("UPDATE ks.t SET v = 13 WHERE p = 1 AND c = 1 IF m['a'] = 1"))[1] == [
            (True,)
        ]
        assert decoded(await node.run("DELETE FROM ks.t WHERE p = 1 AND c = 1 IF EXISTS"))[1] == [(True,)]
        assert await node.rows("SELECT * FROM ks.t") == []

    node.drive(go())


def test_concurrent_lwt_applies_once(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        results = await asyncio.gather(
            *(node.run(f"INSERT INTO ks.t (p, v) VALUES (1, {i}) IF NOT EXISTS") for i in range(20))
        )
        assert sum(decoded(r)[1][0][0] for r in results) == 1

    node.drive(go())


def test_counters(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.c (p int PRIMARY KEY, n counter)")
        await asyncio.gather(*(node.run("UPDATE ks.c SET n = n + 2 WHERE p = 1") for _ in range(25)))
        await node.run("UPDATE ks.c SET n = n - 7 WHERE p = 1")
        assert await node.rows("SELECT n FROM ks.c WHERE p = 1") == [(43,)]
        with pytest.raises(InvalidRequest):
            await node.run("INSERT INTO ks.c (p, n) VALUES (1, 1)")
        for conditional in (
            "UPDATE ks.c SET n = n + 1 WHERE p = 1 IF n = 43",
            "UPDATE ks.c SET n = n + 1 WHERE p = 1 IF EXISTS",
            "BEGIN COUNTER BATCH UPDATE ks.c SET n = n + 1 WHERE p = 1 IF n = 43; APPLY BATCH",
        ):
            with pytest.raises(InvalidRequest, match="not supported on counter tables"):
                await node.run(conditional)
        assert await node.rows("SELECT n FROM ks.c WHERE p = 1") == [(43,)]

    node.drive(go())


def test_batch_shares_timestamp_and_static_rows(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v int, s text static, PRIMARY KEY (p, c))")
        await node.run(
            "BEGIN BATCH INSERT INTO ks.t (p, c, v) VALUES (1, 1, 1); "
            "UPDATE ks.t SET s = 'x' WHERE p = 1; INSERT INTO ks.t (p, c, v) VALUES (2, 1, 2); APPLY BATCH"
        )
        rows = await node.rows("SELECT p, c, s, writetime(v) FROM ks.t")
        assert sorted(r[:3] for r in rows) == [(1, 1, "x"), (2, 1, None)]
        assert len({r[3] for r in rows}) == 1
        await node.run("UPDATE ks.t SET s = 'only' WHERE p = 3")
        assert await node.rows("SELECT p, c, s FROM ks.t WHERE p = 3") == [(3, None, "only")]

    node.drive(go())


def test_json_and_token_ranges(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v text, l list<int>)")
        await node.run("""INSERT INTO ks.t JSON '{"p": 1, "v": "a", "l": [1, 2]}'""")
        await node.run("""INSERT INTO ks.t JSON '{"p": 1, "l": [3]}' DEFAULT UNSET""")
        assert await node.rows("SELECT JSON v, l FROM ks.t WHERE p = 1") == [('{"v": "a", "l": [3]}',)]
        for p in range(2, 40):
            await node.run(f"INSERT INTO ks.t (p, v) VALUES ({p}, 'x')")
        tokens = sorted(token_of(codec.serialize(codec_int(), p)) for p in range(1, 40))
        middle = tokens[19]
        low = await node.rows(f"SELECT token(p) FROM ks.t WHERE token(p) <= {middle}")
        high = await node.rows(f"SELECT p FROM ks.t WHERE token(p) > {middle}")
        assert len(low) == 20 and len(high) == 19

    node.drive(go())


def codec_int() -> Any:
    from tabletdb.cql.types import INT

    return INT


def test_batch_using_timestamp(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        await node.run(
            "BEGIN BATCH USING TIMESTAMP 1234 INSERT INTO ks.t (p, v) VALUES (1, 1); "
            "INSERT INTO ks.t (p, v) VALUES (2, 2); APPLY BATCH"
        )
        assert sorted(await node.rows("SELECT p, writetime(v) FROM ks.t")) == [(1, 1234), (2, 1234)]

    node.drive(go())
