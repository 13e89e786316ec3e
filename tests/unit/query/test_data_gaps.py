"""Smaller Cassandra behaviours found missing while checking issue #3's list: static-only
INSERT, ``token(p) > token(?)`` bounds, ALLOW FILTERING for clustering restrictions without a
partition key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import TEXT
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def test_insert_of_static_columns_only_needs_no_clustering_key(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, s int static, v int, PRIMARY KEY (p, c))")
        await node.run("INSERT INTO ks.t (p, s) VALUES (1, 7)")
        assert await node.rows("SELECT * FROM ks.t") == [(1, None, 7, None)]
        await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 2, 3)")
        assert await node.rows("SELECT * FROM ks.t") == [(1, 2, 7, 3)]
        with pytest.raises(InvalidRequest, match="clustering key parts are missing: c"):
            await node.run("INSERT INTO ks.t (p, s, v) VALUES (1, 7, 1)")
        with pytest.raises(InvalidRequest, match="clustering key parts are missing: c"):
            await node.run("INSERT INTO ks.t (p) VALUES (1)")

    node.drive(go())


def test_token_bounds_given_as_token_of_values(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p text PRIMARY KEY, v int)")
        for p in "abcdefgh":
            await node.run(f"INSERT INTO ks.t (p, v) VALUES ('{p}', 1)")
        ordered = [r[0] for r in await node.rows("SELECT p FROM ks.t")]
        assert await node.rows("SELECT p FROM ks.t WHERE token(p) = token('c')") == [("c",)]
        third = ordered[2]
        later = await node.rows(f"SELECT p FROM ks.t WHERE token(p) > token('{third}')")
        assert [r[0] for r in later] == ordered[3:]
        bound = await node.run(
            "SELECT p FROM ks.t WHERE token(p) <= token(?)", [codec.serialize(TEXT, third)]
        )
        assert [codec.deserialize(TEXT, row[0]) for row in bound.rows] == ordered[:3]

    node.drive(go())


def test_clustering_restriction_without_partition_key_needs_allow_filtering(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
        await node.run("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 1)")
        for where in ("c = 1", "c > 0", "c IN (1, 2)"):
            with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
                await node.run(f"SELECT * FROM ks.t WHERE {where}")
            assert await node.rows(f"SELECT p, c FROM ks.t WHERE {where} ALLOW FILTERING") == [(1, 1)]
        assert await node.rows("SELECT p, c FROM ks.t WHERE p = 1 AND c = 1") == [(1, 1)]
        await node.run("CREATE INDEX ON ks.t (c)")
        assert await node.rows("SELECT p, c FROM ks.t WHERE c = 1") == [(1, 1)]

    node.drive(go())
