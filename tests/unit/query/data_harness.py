"""An in-process node for data-path tests: group0, storage service and processor, no CQL server.

Metadata goes through the node's own group0 service, as the lone founding member of its
cluster (its Raft log under the test's directory; only an internode port on 127.0.0.1, never
contacted). Group0 keeps tasks on the event loop it started on, so the node owns its loop, as a
node process does, and tests run their coroutines on it with `drive`. The clock is a plain
attribute so TTL tests move time explicitly instead of sleeping.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from tabletdb.coordinator.executor import ServerClock
from tabletdb.coordinator.reads import ReadCoordinator
from tabletdb.cql import codec
from tabletdb.cql.results import RowsResult
from tabletdb.cql.values import Value
from tabletdb.group0.tablet_planning import TabletPlanner
from tabletdb.group0.tablets_state import TabletMaps
from tabletdb.group0.topology import NodeRecord
from tabletdb.node.group0_shell.service import Group0Service
from tabletdb.node.replica_service import ViewMaintenance, build_data_plane, single_node_replicas
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.requests import QueryParameters
from tabletdb.query.data_path import catalog_views
from tabletdb.query.processor import QueryProcessor
from tabletdb.replica.derived_locks import DerivedLocks
from tabletdb.replica.storage_service import StorageService
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.tablets.count import SizingConfig
from tabletdb.topology.features import supported_features

HOST = uuid.UUID(int=7)
SMP = 2
ADDRESS = "127.0.0.1"
T = TypeVar("T")


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class DataNode:
    def __init__(self, workdir: Path, commitlog_sync_period_s: float | None = None) -> None:
        self.clock = Clock()
        self._loop = asyncio.Runner()
        record = NodeRecord(
            HOST, ADDRESS, ADDRESS, "dc1", "rack1", (), supported_features(), SMP, storage_port=0
        )
        planner = TabletPlanner(SizingConfig(), (HOST, "dc1", "rack1", SMP))
        self.metadata = Group0Service(workdir / "raft", record, "data-harness", (), tablet_planner=planner)
        self.drive(self.metadata.start())
        self.storage = StorageService(
            workdir / "data",
            HOST,
            SMP,
            12,
            lambda: self.tablets,
            commitlog_sync_period_s=commitlog_sync_period_s,
        )
        views = ViewMaintenance(
            catalog_views(lambda: self.metadata.catalog), ServerClock(self.clock), DerivedLocks()
        )
        replicas = single_node_replicas(self.storage, views)
        self.plane = build_data_plane(self.storage, replicas, views, None)
        self.reads = ReadCoordinator(replicas)
        """Reads of this node's replicas, as the data path makes them (tests call them directly)."""
        self.processor = QueryProcessor(
            lambda: None,  # type: ignore[arg-type,return-value]
            self.metadata,
            SchemaConfig(datacenters=("dc1",)),
            lambda: [],
            data=self.plane.data,
            backfill=self.plane.backfill,
        )
        self.metadata.add_listener(lambda _e: self.storage.follow_schema(self.metadata.catalog))
        self.client = ClientState(1, ("127.0.0.1", 1), 0)

    def drive(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` to completion on the node's event loop."""
        return self._loop.run(coro)

    @property
    def tablets(self) -> TabletMaps:
        return self.metadata.state.metadata.tablets

    async def run(
        self,
        cql: str,
        values: list[Value] | None = None,
        page_size: int | None = None,
        paging_state: bytes | None = None,
        timestamp: int | None = None,
    ) -> Any:
        params = QueryParameters(
            1, values or [], page_size=page_size, paging_state=paging_state, timestamp=timestamp
        )
        return await self.processor.query(self.client, cql, params)

    async def rows(self, cql: str, page_size: int | None = None) -> list[tuple[Any, ...]]:
        """All rows of a SELECT, following paging, decoded."""
        out: list[tuple[Any, ...]] = []
        state = None
        while True:
            result = await self.run(cql, page_size=page_size, paging_state=state)
            assert isinstance(result, RowsResult)
            types = [c.type for c in result.metadata.columns]
            for row in result.rows:
                out.append(tuple(None if v is None else codec.deserialize(t, v) for t, v in zip(types, row)))
            state = result.metadata.paging_state
            if state is None:
                return out

    def close(self) -> None:
        self.drive(self.metadata.stop())
        self.storage.close()
        self.metadata.close()
        self._loop.close()
