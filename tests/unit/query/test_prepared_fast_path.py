"""EXECUTE of prepared DML reuses the table it resolved only while the catalog is unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.cql import codec
from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.results import PreparedResult, RowsResult
from tabletdb.cql.types import INT
from tabletdb.protocol.requests import QueryParameters
from tests.unit.query.data_harness import DataNode

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def test_prepared_statements_follow_schema_changes(node: DataNode) -> None:
    async def execute(prepared: PreparedResult, *values: int | None) -> object:
        raw = [None if v is None else codec.serialize(INT, v) for v in values]
        return await node.processor.execute(node.client, prepared.id, None, QueryParameters(1, raw))

    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        insert = await node.processor.prepare(node.client, "INSERT INTO ks.t (k, v) VALUES (?, ?)")
        select = await node.processor.prepare(node.client, "SELECT * FROM ks.t WHERE k = ?")
        await execute(insert, 1, 10)
        first = await execute(select, 1)
        assert isinstance(first, RowsResult) and len(first.rows) == 1
        # a schema change elsewhere (new catalog): the new column shows through the cached path
        await node.run("ALTER TABLE ks.t ADD w int")
        again = await execute(select, 1)
        assert isinstance(again, RowsResult)
        assert [c.name for c in again.metadata.columns] == ["k", "v", "w"]
        # the table is gone: EXECUTE must not write through a table resolved before the DROP
        await node.run("DROP TABLE ks.t")
        with pytest.raises(InvalidRequest, match="unconfigured table t"):
            await execute(insert, 2, 20)
        with pytest.raises(InvalidRequest, match="unconfigured table t"):
            await execute(select, 1)

    node.drive(go())


def test_a_point_select_is_answered_at_once_like_execute(node: DataNode) -> None:
    """``execute_now`` gives ``execute``'s result for a prepared point read once its table is
    resolved, and None (leave it to ``execute``) whenever that could differ or must wait."""

    def params(*values: int | None, **kw: object) -> QueryParameters:
        return QueryParameters(1, [None if v is None else codec.serialize(INT, v) for v in values], **kw)  # type: ignore[arg-type]

    async def go() -> None:
        await node.run(KS)
        await node.run("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        await node.run("INSERT INTO ks.t (k, v) VALUES (1, 10)")
        select = await node.processor.prepare(node.client, "SELECT * FROM ks.t WHERE k = ?")
        now = node.processor.execute_now
        assert now(node.client, select.id, None, params(1)) is None  # table not resolved yet
        expected = await node.processor.execute(node.client, select.id, None, params(1))
        for k in (1, 2):
            answered = now(node.client, select.id, None, params(k))
            assert answered == await node.processor.execute(node.client, select.id, None, params(k))
        assert answered is not None and expected == now(node.client, select.id, None, params(1))
        assert now(node.client, select.id, None, params(1, paging_state=b"x")) is None
        assert now(node.client, b"unknown", None, params(1)) is None  # execute raises Unprepared
        insert = await node.processor.prepare(node.client, "INSERT INTO ks.t (k, v) VALUES (?, ?)")
        await node.processor.execute(node.client, insert.id, None, params(3, 30))
        assert now(node.client, insert.id, None, params(3, 30)) is None  # writes wait for the commit
        scan = await node.processor.prepare(node.client, "SELECT * FROM ks.t")
        await node.processor.execute(node.client, scan.id, None, params())
        assert now(node.client, scan.id, None, params()) is None  # not a point read
        schema = await node.processor.prepare(
            node.client, "SELECT * FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = ?"
        )
        by_name = QueryParameters(1, [b"t"])
        await node.processor.execute(node.client, schema.id, None, by_name)
        assert now(node.client, schema.id, None, by_name) is None  # rendered, not stored
        await node.run("ALTER TABLE ks.t ADD w int")  # a new catalog: resolved again by execute
        assert now(node.client, select.id, None, params(1)) is None

    node.drive(go())
