"""``UPDATE t SET u.f = ?`` and ``DELETE u.f`` on non-frozen user types, as Cassandra answers them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.types import INT, TEXT
from tabletdb.cql.values import UNSET
from tabletdb.schema.model import TableDef
from tabletdb.statements.keys import partition_key
from tabletdb.statements.udt_cells import WHOLE_VALUE_PATH, field_path
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
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


def _table(node: DataNode) -> TableDef:
    table = node.metadata.catalog.table("ks", "u")
    assert table is not None
    return table


def _stored_cells(node: DataNode, key: int) -> list[tuple[bytes, bytes]]:
    """The live cells of column ``a`` of row ``key`` as stored: (path, value)."""
    table = _table(node)
    pk, token = partition_key(table, [codec.serialize(INT, key)])
    data = node.storage.store(table, token).read_partition(pk, now=2_000_000_000)
    assert data is not None
    return [(c.path, c.value) for row in data.rows for c in row.cells if c.column == "a"]


def test_one_cell_per_field(node: DataNode) -> None:
    """A field update writes that field's cell only; an overwrite replaces every field."""

    async def go() -> None:
        await _schema(node)
        await node.run("INSERT INTO ks.u (id, a) VALUES (1, {street: 'Main', num: 1})")
        text, one = codec.serialize(TEXT, "Main"), codec.serialize(INT, 1)
        assert _stored_cells(node, 1) == [(field_path(0), text), (field_path(1), one)]
        await node.run("UPDATE ks.u SET a.num = 5 WHERE id = 1")
        assert _stored_cells(node, 1) == [(field_path(0), text), (field_path(1), codec.serialize(INT, 5))]
        await node.run("UPDATE ks.u SET a = {num: 2} WHERE id = 1")
        assert _stored_cells(node, 1) == [(field_path(1), codec.serialize(INT, 2))]
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [((None, 2),)]

    node.drive(go())


def test_values_stored_whole_by_an_earlier_version_still_read_and_update(node: DataNode) -> None:
    """Files written before one cell per field hold the value as one cell with an empty path:
    it reads as before, a newer field cell wins over it, and a field update (or deletion) first
    rewrites it field by field so the deletion cannot be outlived by the old cell."""

    async def go() -> None:
        await _schema(node)
        table = _table(node)
        for key in (1, 2):
            pk, token = partition_key(table, [codec.serialize(INT, key)])
            whole = codec.serialize(table.column("a").type, ("old", 1))  # type: ignore[union-attr]
            cell = Cell("a", whole, 1_000, WHOLE_VALUE_PATH)
            node.storage.store(table, token).apply(
                [Mutation(pk, token, rows=(RowWrite(b"", marker=RowMarker(1_000), cells=(cell,)),))]
            )
        assert await node.rows("SELECT a, a.street FROM ks.u WHERE id = 1") == [(("old", 1), "old")]
        await node.run("DELETE a.street FROM ks.u WHERE id = 1")
        assert await node.rows("SELECT a FROM ks.u WHERE id = 1") == [((None, 1),)]
        assert _stored_cells(node, 1) == [(field_path(1), codec.serialize(INT, 1))]
        await node.run("UPDATE ks.u SET a = {street: 'new'} WHERE id = 2")  # the overwrite's tombstone
        assert await node.rows("SELECT a FROM ks.u WHERE id = 2") == [(("new", None),)]

    node.drive(go())
