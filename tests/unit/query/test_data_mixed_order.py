"""Multi-column clustering slices over columns of mixed ASC/DESC order.

Cassandra compares the tuples by value, column by column, whatever each column's declared
order, and returns rows in clustering order. A brute-force model of that (Python tuple
comparison, then sort by the declared orders) is checked against random bounds, for SELECT and
for range DELETE.
"""

from __future__ import annotations

import itertools
import operator
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.unit.query.data_harness import DataNode

Row = tuple[int, int, int]
OPS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
COLUMNS = ("b", "c", "d")


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def clustering_order(row: Row) -> tuple[int, int, int]:
    b, c, d = row
    return (-b, c, -d)  # b DESC, c ASC, d DESC


def _bound(rng: random.Random, ops: tuple[str, str]) -> tuple[str, Callable[[Row], bool]]:
    width = rng.randrange(1, 4)
    values = tuple(rng.randrange(-1, 3) for _ in range(width))
    op = rng.choice(ops)
    names = ", ".join(COLUMNS[:width])
    text = ", ".join(map(str, values))
    return f"({names}) {op} ({text})", lambda row: OPS[op](row[:width], values)


def _restriction(rng: random.Random) -> tuple[str, Callable[[Row], bool]]:
    shape = rng.randrange(3)
    parts = []
    if shape in (0, 2):
        parts.append(_bound(rng, (">", ">=")))
    if shape in (1, 2):
        parts.append(_bound(rng, ("<", "<=")))
    where = " AND ".join(p[0] for p in parts)
    return where, lambda row: all(p[1](row) for p in parts)


def test_mixed_order_slices_match_tuple_comparison(node: DataNode) -> None:
    async def go() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run(
            "CREATE TABLE ks.t (a int, b int, c int, d int, PRIMARY KEY (a, b, c, d)) "
            "WITH CLUSTERING ORDER BY (b DESC, c ASC, d DESC)"
        )
        rows: list[Row] = list(itertools.product(range(-1, 3), range(-1, 2), range(-1, 2)))
        for b, c, d in rows:
            await node.run(f"INSERT INTO ks.t (a, b, c, d) VALUES (0, {b}, {c}, {d})")
        rng = random.Random(11)
        for _ in range(150):
            where, keep = _restriction(rng)
            want = sorted((r for r in rows if keep(r)), key=clustering_order)
            got = await node.rows(f"SELECT b, c, d FROM ks.t WHERE a = 0 AND {where}")
            assert got == want, where
            reverse = await node.rows(
                f"SELECT b, c, d FROM ks.t WHERE a = 0 AND {where} ORDER BY b ASC, c DESC"
            )
            assert reverse == want[::-1], where
            assert await node.rows(f"SELECT b, c, d FROM ks.t WHERE a = 0 AND {where}", page_size=3) == want

    node.drive(go())


def test_mixed_order_range_delete(node: DataNode) -> None:
    async def go() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run(
            "CREATE TABLE ks.t (a int, b int, c int, d int, PRIMARY KEY (a, b, c, d)) "
            "WITH CLUSTERING ORDER BY (b DESC, c ASC, d DESC)"
        )
        rng = random.Random(5)
        for a in range(20):
            rows: list[Row] = list(itertools.product(range(-1, 2), range(-1, 2), range(-1, 2)))
            for b, c, d in rows:
                await node.run(f"INSERT INTO ks.t (a, b, c, d) VALUES ({a}, {b}, {c}, {d})")
            where, gone = _restriction(rng)
            await node.run(f"DELETE FROM ks.t WHERE a = {a} AND {where}")
            want = sorted((r for r in rows if not gone(r)), key=clustering_order)
            assert await node.rows(f"SELECT b, c, d FROM ks.t WHERE a = {a}") == want, where

    node.drive(go())
