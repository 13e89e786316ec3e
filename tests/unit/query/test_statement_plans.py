"""Per-statement plans (SELECT point reads, INSERT with bound bytes stored as sent) behave exactly
as the general paths: same rows, same refusals naming the column."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.results import PreparedResult, RowsResult
from tabletdb.cql.types import BIGINT, BOOLEAN, DOUBLE, INT, TEXT, UUID, CqlType
from tabletdb.cql.values import UNSET, Value
from tabletdb.protocol.requests import QueryParameters
from tabletdb.statements.insert_plan import PASS_THROUGH
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


async def _execute(node: DataNode, prepared: PreparedResult, values: list[Value]) -> Any:
    return await node.processor.execute(node.client, prepared.id, None, QueryParameters(1, values))


def _decoded(result: Any) -> list[tuple[Any, ...]]:
    assert isinstance(result, RowsResult)
    types = [c.type for c in result.metadata.columns]
    return [
        tuple(None if v is None else codec.deserialize(t, v) for t, v in zip(types, r)) for r in result.rows
    ]


def _ser(t: CqlType, v: Any) -> bytes:
    return codec.serialize(t, v)


def test_point_read_on_a_composite_key_in_any_where_order(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (a int, b text, c int, v bigint, PRIMARY KEY ((a, b), c))")
        await node.run("INSERT INTO ks.t (a, b, c, v) VALUES (1, 'x', 1, 10)")
        await node.run("INSERT INTO ks.t (a, b, c, v) VALUES (1, 'x', 2, 20)")
        await node.run("INSERT INTO ks.t (a, b, c, v) VALUES (1, 'y', 1, 30)")
        select = await node.processor.prepare(node.client, "SELECT c, v FROM ks.t WHERE b = ? AND a = ?")
        assert _decoded(await _execute(node, select, [_ser(TEXT, "x"), _ser(INT, 1)])) == [(1, 10), (2, 20)]
        assert _decoded(await _execute(node, select, [_ser(TEXT, "y"), _ser(INT, 1)])) == [(1, 30)]
        assert _decoded(await _execute(node, select, [_ser(TEXT, "z"), _ser(INT, 1)])) == []
        with pytest.raises(InvalidRequest, match="Invalid null value in condition for column b"):
            await _execute(node, select, [None, _ser(INT, 1)])
        with pytest.raises(InvalidRequest, match="Invalid unset value for column a"):
            await _execute(node, select, [_ser(TEXT, "x"), UNSET])

    node.drive(go())


def test_point_read_pages_and_follows_a_schema_change(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))")
        for c in range(5):
            await node.run(f"INSERT INTO ks.t (k, c, v) VALUES (1, {c}, 'v{c}')")
        select = await node.processor.prepare(node.client, "SELECT * FROM ks.t WHERE k = ?")
        got: list[tuple[Any, ...]] = []
        state = None
        while True:
            params = QueryParameters(1, [_ser(INT, 1)], page_size=2, paging_state=state)
            page = await node.processor.execute(node.client, select.id, None, params)
            assert isinstance(page, RowsResult)
            got += _decoded(page)
            state = page.metadata.paging_state
            if state is None:
                break
        assert got == [(1, c, f"v{c}") for c in range(5)]
        await node.run("ALTER TABLE ks.t ADD w int")
        await node.run("UPDATE ks.t SET w = 7 WHERE k = 1 AND c = 0")
        again = await _execute(node, select, [_ser(INT, 1)])
        assert [c.name for c in again.metadata.columns] == ["k", "c", "v", "w"]
        assert _decoded(again)[0] == (1, 0, "v0", 7)

    node.drive(go())


def test_insert_stores_bound_values_as_the_general_path_would(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run(
            "CREATE TABLE ks.t (k int, c bigint, s text static, u uuid, d double, f boolean, "
            "PRIMARY KEY (k, c))"
        )
        insert = await node.processor.prepare(
            node.client, "INSERT INTO ks.t (u, k, c, s, d, f) VALUES (?, ?, ?, ?, ?, ?)"
        )
        u = uuid.UUID(int=42)
        values = [_ser(UUID, u), _ser(INT, 1), _ser(BIGINT, 2), _ser(TEXT, "é"), _ser(DOUBLE, 1.5)]
        await _execute(node, insert, [*values, b"\x05"])  # any non-zero byte is true
        assert await node.rows("SELECT k, c, s, u, d, f FROM ks.t") == [(1, 2, "é", u, 1.5, True)]
        raw = await node.run("SELECT f FROM ks.t")
        assert raw.rows == [[_ser(BOOLEAN, True)]]  # non-canonical input is re-encoded
        # unset leaves the column alone; null deletes it
        await _execute(node, insert, [UNSET, _ser(INT, 1), _ser(BIGINT, 2), None, UNSET, UNSET])
        assert await node.rows("SELECT s, u, d FROM ks.t") == [(None, u, 1.5)]
        with pytest.raises(InvalidRequest, match="Invalid null value in condition for column c"):
            await _execute(node, insert, [UNSET, _ser(INT, 1), None, UNSET, UNSET, UNSET])
        with pytest.raises(InvalidRequest):  # three bytes are no int
            await _execute(node, insert, [UNSET, b"\x00\x00\x01", _ser(BIGINT, 2), UNSET, UNSET, UNSET])
        with pytest.raises(InvalidRequest):  # not UTF-8
            await _execute(node, insert, [UNSET, _ser(INT, 1), _ser(BIGINT, 2), b"\xff", UNSET, UNSET])
        assert await node.rows("SELECT k, c FROM ks.t") == [(1, 2)]

    node.drive(go())


def test_static_only_insert_through_the_plan(node: DataNode) -> None:
    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (k int, c int, s int static, v int, PRIMARY KEY (k, c))")
        insert = await node.processor.prepare(node.client, "INSERT INTO ks.t (k, s) VALUES (?, ?)")
        await _execute(node, insert, [_ser(INT, 1), _ser(INT, 9)])
        assert await node.rows("SELECT k, c, s, v FROM ks.t") == [(1, None, 9, None)]

    node.drive(go())


@pytest.mark.parametrize("name", sorted(PASS_THROUGH))
def test_pass_through_types_decode_and_encode_to_the_same_bytes(name: str) -> None:
    """The premise of storing bound bytes as sent: for these types a valid encoding is canonical."""
    from tabletdb.cql.types import NativeType

    t = NativeType(name)
    by_type: dict[str, list[str | bytes]] = {
        "int": [struct.pack(">i", v) for v in (0, -1, 2**31 - 1)],
        "bigint": [struct.pack(">q", v) for v in (0, -(2**63), 7)],
        "smallint": [struct.pack(">h", -5)],
        "tinyint": [b"\x80", b"\x7f"],
        "text": ["", "é", "日本"],
        "ascii": ["", "abc"],
        "blob": [b"", b"\x00\xff"],
        "uuid": [uuid.UUID(int=1).bytes, uuid.uuid4().bytes],
        "timeuuid": [uuid.uuid1().bytes],
        "timestamp": [struct.pack(">q", v) for v in (0, -1, 1_700_000_000_000)],
        "date": [struct.pack(">I", v) for v in (0, 2**31, 2**32 - 1)],
    }
    for sample in by_type[name]:
        raw = sample.encode() if isinstance(sample, str) else sample
        assert codec.serialize(t, codec.deserialize(t, raw)) == raw
