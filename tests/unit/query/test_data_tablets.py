"""Tablet maps are created with tables, rendered in system.tablets, and route rows to their files."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tabletdb.storage.tablet_store import TabletStore
from tests.unit.query.data_harness import HOST, SMP, DataNode


@pytest.fixture
def node(tmp_path: Path) -> Iterator[DataNode]:
    n = DataNode(tmp_path)
    yield n
    n.close()


def test_default_count_and_system_tablets(node: DataNode) -> None:
    async def go() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY)")
        (tablet_map,) = node.tablets.values()
        # spec/tablets.md: per-shard floor ceil(10 * 2 shards / rf 1) = 20, rounded up to 32
        assert tablet_map.tablet_count == 32
        rows = await node.rows("SELECT table_name, tablet_count, last_token, replicas FROM system.tablets")
        assert len(rows) == 32
        assert {r[:2] for r in rows} == {("t", 32)}
        assert [r[2] for r in rows] == list(tablet_map.last_tokens)
        shards = [r[3][0][1] for r in rows]
        assert {r[3][0][0] for r in rows} == {HOST}
        assert sorted(shards.count(s) for s in range(SMP)) == [16, 16]

    node.drive(go())


@pytest.mark.parametrize(("key", "tablet"), [("hello", 2), ("key1", 4)])
def test_rows_land_in_the_spec_tablet(node: DataNode, tmp_path: Path, key: str, tablet: int) -> None:
    """spec/test-vectors.md: token('hello') = -3758069500696749310 is tablet 2 of 8, 'key1' tablet 4."""

    async def go() -> None:
        await node.run(
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1} "
            "AND tablets = {'initial': 8}"
        )
        await node.run("CREATE TABLE ks.t (p text PRIMARY KEY, v int)")
        await node.run(f"INSERT INTO ks.t (p, v) VALUES ('{key}', 1)")
        (tablet_map,) = node.tablets.values()
        assert tablet_map.tablet_count == 8
        (path,) = (tmp_path / "data" / "ks").glob("t-*/shard-*/tablet-*.db")
        assert path.name == f"tablet-{tablet}.db"
        assert path.parent.name == f"shard-{tablet_map.tablets[tablet].replicas[0].shard}"
        node.storage.close()
        with TabletStore(path) as store:
            assert store.read_partition(key.encode(), 0) is not None

    node.drive(go())


def test_vnode_keyspace_has_no_tablet_map(node: DataNode, tmp_path: Path) -> None:
    async def go() -> None:
        await node.run(
            "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1} "
            "AND tablets = {'enabled': false}"
        )
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        assert len(node.tablets) == 0
        for p in range(50):
            await node.run(f"INSERT INTO ks.t (p, v) VALUES ({p}, {p})")
        files = sorted(p.parent.name for p in (tmp_path / "data" / "ks").glob("t-*/shard-*/vnode.db"))
        assert files == [f"shard-{s}" for s in range(SMP)]
        rows = await node.rows("SELECT p FROM ks.t", page_size=7)
        assert sorted(r[0] for r in rows) == list(range(50))
        tokens = await node.rows("SELECT token(p) FROM ks.t")
        assert [t[0] for t in tokens] == sorted(t[0] for t in tokens)

    node.drive(go())


def test_table_ids_are_uuid(node: DataNode) -> None:
    async def go() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run("CREATE TABLE ks.t (p int PRIMARY KEY)")
        (table_id,) = node.tablets
        assert isinstance(table_id, uuid.UUID)
        assert node.metadata.catalog.by_id(table_id) is not None

    node.drive(go())
