"""group0 on a single node: schema commands go to the durable metadata log, then are applied.

This is the same state machine, log format and snapshots a multi-node group0 will use; what is
missing is only Raft between nodes (the "group0" issue). A command is fsynced before it is
applied and before the client hears back, so an acknowledged DDL survives kill -9; on start the
node loads the latest snapshot and replays the entries after it.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from tabletdb.group0.state import (
    Group0State,
    SchemaCommand,
    apply,
    decode_command,
    decode_state,
    encode_command,
    encode_state,
    with_auth,
)
from tabletdb.group0.state_id import timeuuid_after
from tabletdb.group0.tablets_state import TabletChange, TabletMaps
from tabletdb.query.metadata_store import Decision
from tabletdb.raft.storage import DurableLog
from tabletdb.raft.types import ConfState, Entry, HardState, Snapshot, SnapshotMeta
from tabletdb.schema.ddl_common import DdlOutcome, SchemaChangeEvent
from tabletdb.schema.model import Catalog

log = logging.getLogger(__name__)

LOCAL_SERVER_ID = 1
TERM = 1
SNAPSHOT_EVERY = 1000
"""Entries between snapshots: bounds replay time at start-up and the log's size on disk."""

Listener = Callable[[tuple[SchemaChangeEvent, ...]], None]
TabletPlanner = Callable[[Group0State, Catalog], tuple[TabletChange, ...]]
"""(state before, catalog after) -> tablet maps to create/remove in the same command."""


class LocalMetadataStore:
    def __init__(
        self,
        directory: Path,
        listeners: list[Listener] | None = None,
        tablet_planner: TabletPlanner | None = None,
    ) -> None:
        self._tablet_planner = tablet_planner
        directory.mkdir(parents=True, exist_ok=True)
        self._log = DurableLog.open(str(directory))
        self._listeners = list(listeners or [])
        self._rng = random.Random()
        if self._log.last_index() == 0 and self._log.snapshot_meta.index == 0:
            self._log.bootstrap(ConfState(voters=frozenset({LOCAL_SERVER_ID})))
            self._log.sync()
        self._state = self._recover()

    def _recover(self) -> Group0State:
        snapshot = self._log.snapshot()
        state = decode_state(snapshot.data)
        first, last = self._log.first_index(), self._log.last_index()
        for entry in self._log.entries(first, last + 1):
            state, _ = apply(state, decode_command(entry.data))
        log.info("metadata recovered snapshot_index=%d replayed=%d", snapshot.meta.index, last - first + 1)
        return state

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    @property
    def catalog(self) -> Catalog:
        return self._state.catalog

    @property
    def tablets(self) -> TabletMaps:
        return self._state.tablets

    async def change_schema(self, decide: Decision) -> DdlOutcome:
        state = self._state
        outcome = decide(state.catalog)
        if outcome.is_noop:
            return outcome
        new_id = timeuuid_after(state.state_id, time.time_ns(), self._rng)
        command = with_auth(SchemaCommand(state.state_id, new_id, outcome.mutations), outcome)
        if self._tablet_planner is not None:
            preview, _ = apply(state, command)
            command = replace(command, tablet_changes=self._tablet_planner(state, preview.catalog))
        index = self._log.last_index() + 1
        self._log.append([Entry(TERM, index, data=encode_command(command))])
        self._log.set_hard_state(HardState(TERM, LOCAL_SERVER_ID, index))
        self._log.sync()
        self._state, applied = apply(state, command)
        if not applied:  # cannot happen on one node: nothing runs between decide and apply
            raise RuntimeError("group0 command built on a stale state id on a single node")
        if index - self._log.snapshot_meta.index >= SNAPSHOT_EVERY:
            self._snapshot(index)
        for listener in self._listeners:
            listener(outcome.events)
        return outcome

    def _snapshot(self, index: int) -> None:
        meta = SnapshotMeta(index, TERM, self._log.conf_state)
        self._log.apply_snapshot(Snapshot(meta, encode_state(self._state)))

    def close(self) -> None:
        self._log.sync()
