"""Materialized views follow base-table writes (insert, key change, delete) and are readable."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.query.data_harness import DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def test_view_tracks_base(node: DataNode) -> None:
    async def go() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run("CREATE TABLE ks.users (id int PRIMARY KEY, email text, name text)")
        await node.run(
            "CREATE MATERIALIZED VIEW ks.by_email AS SELECT * FROM ks.users "
            "WHERE email IS NOT NULL AND id IS NOT NULL PRIMARY KEY (email, id)"
        )
        await node.run("INSERT INTO ks.users (id, email, name) VALUES (1, 'a@x', 'Ann')")
        await node.run("INSERT INTO ks.users (id, name) VALUES (2, 'Bob')")
        assert await node.rows("SELECT email, id, name FROM ks.by_email") == [("a@x", 1, "Ann")]
        await node.run("UPDATE ks.users SET email = 'b@x' WHERE id = 2")
        await node.run("UPDATE ks.users SET email = 'c@x', name = 'Anna' WHERE id = 1")
        rows = await node.rows("SELECT email, id, name FROM ks.by_email")
        assert sorted(rows) == [("b@x", 2, "Bob"), ("c@x", 1, "Anna")]
        assert await node.rows("SELECT id FROM ks.by_email WHERE email = 'c@x'") == [(1,)]
        await node.run("DELETE FROM ks.users WHERE id = 2")
        await node.run("UPDATE ks.users SET email = null WHERE id = 1")
        assert await node.rows("SELECT * FROM ks.by_email") == []

    asyncio.run(go())
