"""The node's compaction service (``node.compaction_manager``) on a real StorageService: the
background round measures files and compacts the one the policy finds due, and requests name
keyspaces and tables as nodetool does."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from tabletdb.dht.murmur3 import token_of
from tabletdb.node.compaction_manager import CompactionManager, UnknownTable
from tabletdb.replica.compactions import Outcome
from tabletdb.replica.storage_service import StorageService
from tabletdb.schema.frozenmap import FrozenMap
from tabletdb.schema.model import Catalog, KeyspaceDef, KeyspaceSchema, KeyspaceTablets, Replication
from tabletdb.schema.options import TableOptions, apply_options
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tests.unit.coordinator.replica_cluster import host, table_def

NOW = 1_700_000_000.0
ME = host(0)
OPTIONS = apply_options(TableOptions(), {"tombstone_gc": {"mode": "timeout"}, "gc_grace_seconds": 0})
TABLE = replace(table_def(), options=OPTIONS)
KEYSPACE = KeyspaceDef("ks", Replication("org.apache.cassandra.locator.NetworkTopologyStrategy"))
CATALOG = Catalog(
    FrozenMap(
        {"ks": KeyspaceSchema(replace(KEYSPACE, tablets=KeyspaceTablets(True)), FrozenMap({"t": TABLE}))}
    )
)


def manager(tmp: Path) -> CompactionManager:
    tablet_map = TabletMap.even(TABLE.id, [[TabletReplica(ME, 0)]] * 2)
    return CompactionManager(StorageService(tmp, ME, 1, 12, lambda: {TABLE.id: tablet_map}), lambda: CATALOG)


async def write(storage: StorageService, key: bytes, *, delete: bool = False) -> None:
    token = token_of(key)
    if delete:
        mutation = Mutation(key, token, partition_tombstone=10)
    else:
        mutation = Mutation(
            key, token, rows=(RowWrite(b"c", marker=RowMarker(5), cells=(Cell("v", b"x", 5),)),)
        )
    await storage.committer(TABLE, token).apply([mutation])


def test_a_background_round_compacts_the_file_with_deleted_rows(tmp_path: Path) -> None:
    async def run() -> None:
        service = manager(tmp_path)
        keys = [f"k{i}".encode() for i in range(20)]
        for k in keys:
            await write(service.storage, k)
        assert await service.round(NOW) is None  # measured: nothing to drop
        doomed = [
            k
            for k in keys
            if service.storage.path_of(TABLE, token_of(k))
            == service.storage.path_of(TABLE, token_of(keys[0]))
        ]
        for k in doomed:
            await write(service.storage, k, delete=True)
        service.storage.write_deferred()
        result = await service.round(NOW + 1)  # the file changed: measured again, and due
        assert result is not None and result.outcome is Outcome.COMPACTED
        assert result.path == service.storage.path_of(TABLE, token_of(keys[0]))
        assert result.after is not None and result.after.tombstones == 0
        assert await service.round(NOW + 2) is None  # nothing left to drop there
        store = service.storage.store(TABLE, token_of(keys[0]))
        assert all(store.read_partition(k, int(NOW)) is None for k in doomed)
        assert all(
            service.storage.store(TABLE, token_of(k)).read_partition(k, int(NOW))
            for k in keys
            if k not in doomed
        )

    asyncio.run(run())


def test_requests_name_keyspaces_and_tables(tmp_path: Path) -> None:
    service = manager(tmp_path)
    assert service.tables(None) == [TABLE] == service.tables("ks") == service.tables("ks", ["t"])
    with pytest.raises(UnknownTable, match="keyspace nope does not exist"):
        service.tables("nope")
    with pytest.raises(UnknownTable, match=r"table ks\.nope does not exist"):
        service.tables("ks", ["nope"])


def test_with_automatic_compaction_off_the_round_leaves_the_table_alone(tmp_path: Path) -> None:
    async def run() -> None:
        service = manager(tmp_path)
        keys = [f"k{i}".encode() for i in range(20)]
        for k in keys:
            await write(service.storage, k)
        assert await service.round(NOW) is None
        for k in keys:
            await write(service.storage, k, delete=True)
        service.storage.write_deferred()
        service.set_auto_compaction([TABLE], False)
        assert not service.auto_compaction(TABLE)
        assert await service.round(NOW + 1) is None  # due, but switched off
        service.set_auto_compaction([TABLE], True)
        assert service.auto_compaction(TABLE)
        result = await service.round(NOW + 2)
        assert result is not None and result.outcome is Outcome.COMPACTED
        service.set_auto_compaction([TABLE], False)
        assert [r.outcome for r in await service.compact([TABLE])]  # a manual one still runs

    asyncio.run(run())
