"""``UPDATE t SET u.f = ?`` and ``DELETE u.f`` on non-frozen user types, as Cassandra answers them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import INT
from tabletdb.cql.values import UNSET
from tests.unit.query.data_harness import DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


async def _schema(node: DataNode) -> None:
    await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
    await node.run("CREATE TYPE ks.addr (street text, num int)")
    await node.run("CREATE TABLE ks.u (id int PRIMARY KEY, a addr, f frozen<addr>, n int)")


def test_set_and_delete_fields(node: DataNode) -> None:
    async def go() -> None:
        await _schema(node)
        await node.run("INSERT INTO ks.u (id, a) VALUES (1, {street: 'Main', num: 1})")
        await node.run("UPDATE ks.u SET a.num = 5 WHERE id = 1")
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [(("Main", 5),)]
        await node.run("UPDATE ks.u SET a.street = null WHERE id = 1")
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [((None, 5),)]
        await node.run("DELETE a.num FROM ks.u WHERE id = 1")
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [(None,)]  # every field gone: null
        # a field set on a row without a value makes a value holding just that field
        await node.run("UPDATE ks.u SET a.num = 7 WHERE id = 2")
        assert await node.rows("SELECT a FROM ks.u WHERE id = 2") == [((None, 7),)]
        await node.run("DELETE a.num FROM ks.u WHERE id = 2")
        assert await node.rows("SELECT * FROM ks.u WHERE id = 2") == []  # UPDATE wrote no row marker

    node.drive(go())


def test_bound_field_values_unset_and_null(node: DataNode) -> None:
    async def go() -> None:
        await _schema(node)
        await node.run("INSERT INTO ks.u (id, a) VALUES (1, {street: 'x', num: 1})")
        await node.run("UPDATE ks.u SET a.num = ? WHERE id = 1", [codec.serialize(INT, 9)])
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [(("x", 9),)]
        await node.run("UPDATE ks.u SET a.num = ? WHERE id = 1", [UNSET])
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [(("x", 9),)]
        await node.run("UPDATE ks.u SET a.num = ? WHERE id = 1", [None])
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [(("x", None),)]

    node.drive(go())


def test_field_errors(node: DataNode) -> None:
    async def go() -> None:
        await _schema(node)
        with pytest.raises(InvalidRequest, match="frozen UDT column f"):
            await node.run("UPDATE ks.u SET f.num = 1 WHERE id = 1")
        with pytest.raises(InvalidRequest, match="Frozen UDT column f does not support field deletion"):
            await node.run("DELETE f.num FROM ks.u WHERE id = 1")
        with pytest.raises(InvalidRequest, match="does not have a field named zip"):
            await node.run("UPDATE ks.u SET a.zip = 1 WHERE id = 1")
        with pytest.raises(InvalidRequest, match="is not a user type"):
            await node.run("UPDATE ks.u SET n.x = 1 WHERE id = 1")

    node.drive(go())


def test_non_frozen_udt_with_every_field_null_is_null(node: DataNode) -> None:
    async def go() -> None:
        await _schema(node)
        await node.run("INSERT INTO ks.u (id, a, f) VALUES (1, {street: null, num: null}, {street: null})")
        # the frozen value is one blob and keeps its null fields; the non-frozen one has no fields left
        assert await node.rows("SELECT a, f FROM ks.u WHERE id = 1") == [(None, (None, None))]

    node.drive(go())
