"""An in-process node for data-path tests: metadata store, storage service and processor, no sockets.

The clock is a plain attribute so TTL tests move time explicitly instead of sleeping.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from tabletdb.coordinator.executor import WriteExecutor
from tabletdb.cql import codec
from tabletdb.cql.results import RowsResult
from tabletdb.cql.values import Value
from tabletdb.group0.state import Group0State
from tabletdb.group0.tablets_state import TabletChange, plan_tablet_changes
from tabletdb.node.group0_shell.metadata_local import LocalMetadataStore
from tabletdb.protocol.handler import ClientState
from tabletdb.protocol.requests import QueryParameters
from tabletdb.query.data_path import DataPath, catalog_views
from tabletdb.query.processor import QueryProcessor
from tabletdb.replica.storage_service import StorageService
from tabletdb.schema.ddl_common import SchemaConfig
from tabletdb.schema.model import Catalog
from tabletdb.tablets.allocation import NodeCapacity
from tabletdb.tablets.count import SizingConfig

HOST = uuid.UUID(int=7)
SMP = 2


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


class DataNode:
    def __init__(self, workdir: Path, commitlog_sync_period_s: float | None = None) -> None:
        self.clock = Clock()
        self.metadata = LocalMetadataStore(workdir / "raft", tablet_planner=self._plan)
        self.storage = StorageService(
            workdir / "data",
            HOST,
            SMP,
            12,
            lambda: self.metadata.tablets,
            commitlog_sync_period_s=commitlog_sync_period_s,
        )
        self.processor = QueryProcessor(
            lambda: None,  # type: ignore[arg-type,return-value]
            self.metadata,
            SchemaConfig(datacenters=("dc1",)),
            lambda: [],
            data=DataPath(
                WriteExecutor(self.storage, self.clock), catalog_views(lambda: self.metadata.catalog)
            ),
        )
        self.metadata.add_listener(lambda _e: self.storage.follow_schema(self.metadata.catalog))
        self.client = ClientState(1, ("127.0.0.1", 1), 0)

    def _plan(self, state: Group0State, after: Catalog) -> tuple[TabletChange, ...]:
        node = NodeCapacity(HOST, "dc1", "rack1", SMP)
        return plan_tablet_changes(state.catalog, after, state.tablets, [node], SizingConfig())

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
        self.storage.close()
        self.metadata.close()
