"""The storage service and the rows its stores defer: a backup copy taken from the files sees
them once the service has the stores write them; TRUNCATE drops them; a store holding some is
not released for a restore to replace its file."""

from __future__ import annotations

from pathlib import Path

from tabletdb.storage.snapshot_files import live_row_count, snapshot_to
from tests.unit.query.data_harness import DataNode


def _filled(tmp_path: Path) -> DataNode:
    node = DataNode(tmp_path)

    async def fill() -> None:
        await node.run("CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 1}")
        await node.run("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        for k in range(50):
            await node.run(f"INSERT INTO ks.t (k, v) VALUES ({k}, {k})")

    node.drive(fill())
    return node


def _copied_rows(node: DataNode, target: Path) -> int:
    table = node.metadata.catalog.table("ks", "t")
    total = 0
    for i, local in enumerate(node.storage.local_files(table)):
        if local.path.exists():
            snapshot_to(local.path, target / f"{i}.db")
            total += live_row_count(target / f"{i}.db", int(node.clock()))
    return total


def test_a_copy_of_the_files_sees_deferred_rows_once_written(tmp_path: Path) -> None:
    node = _filled(tmp_path)
    table = node.metadata.catalog.table("ks", "t")
    assert _copied_rows(node, tmp_path / "before") == 0  # all 50 deferred: the files are empty
    node.storage.write_deferred(f.path for f in node.storage.local_files(table))
    assert _copied_rows(node, tmp_path / "after") == 50
    node.close()


def test_truncate_drops_deferred_rows_and_a_deferring_store_is_not_released(tmp_path: Path) -> None:
    node = _filled(tmp_path)
    table = node.metadata.catalog.table("ks", "t")
    held = [f.path for f in node.storage.local_files(table) if f.path.exists()]
    assert held and not any(node.storage.release(p) for p in held)
    node.drive(node.run("TRUNCATE ks.t"))
    assert node.drive(node.rows("SELECT k FROM ks.t")) == []
    node.close()
