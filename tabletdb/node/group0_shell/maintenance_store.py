"""Maintenance mode: the node's last group0 state, read from its own log, and nothing else.

The node does not contact the cluster (no internode port, no Raft), so an operator can inspect
a node whose peers are unreachable or whose membership is in doubt. Schema changes are refused:
the log is not ours to extend outside Raft. A normal restart rejoins.
"""

from __future__ import annotations

from pathlib import Path

from tabletdb.cql.errors import InvalidRequest
from tabletdb.group0.cluster_state import ClusterState, apply_entry, decode_entry, decode_snapshot
from tabletdb.query.metadata_store import Decision
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import EntryKind
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.model import Catalog


class MaintenanceStore:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.store = DurableLog.open(str(directory))
        self.state = self._replay_committed()

    def _replay_committed(self) -> ClusterState:
        """Snapshot plus the entries known committed (uncommitted ones may yet be discarded)."""
        state = decode_snapshot(self.store.snapshot().data)
        first = self.store.first_index()
        last = min(self.store.hard_state.commit, self.store.last_index())
        for entry in self.store.entries(first, last + 1) if last >= first else []:
            if entry.kind == EntryKind.NORMAL:
                state, _ = apply_entry(state, decode_entry(entry.data))
        return state

    @property
    def catalog(self) -> Catalog:
        return self.state.metadata.catalog

    def add_listener(self, listener: object) -> None:
        """Nothing changes in maintenance mode, so listeners never fire."""

    async def change_schema(self, decide: Decision) -> DdlOutcome:
        raise InvalidRequest(
            "this node is in maintenance mode: schema changes are refused; restart it normally"
        )

    def close(self) -> None:
        self.store.sync()
