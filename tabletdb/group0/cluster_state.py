"""The whole replicated group0 value in a cluster: metadata (`Group0State`) plus membership.

This module also fixes the format of group0's Raft entries: an envelope naming the command kind
and a command id (so the proposing node can tell when, and whether, its own command took effect
once it is applied) and, for schema changes, the SCHEMA_CHANGE events every node pushes to its
registered drivers when it applies the entry. Snapshots encode the whole value, so a node that
fell behind a truncated log catches up from one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from tabletdb.group0 import state as g0
from tabletdb.group0.balancing import BalancingCommand, balancing_from_plain, balancing_to_plain
from tabletdb.group0.topology import (
    JoinCommand,
    NodeRecord,
    Topology,
    apply_join,
    join_from_plain,
    join_to_plain,
    topology_from_plain,
    topology_to_plain,
)
from tabletdb.group0.view_builds import ViewBuildCommand, apply_view_build
from tabletdb.group0.view_builds import command_from_plain as view_build_from_plain
from tabletdb.group0.view_builds import command_to_plain as view_build_to_plain
from tabletdb.schema.ddl_common import Change, SchemaChangeEvent, Target
from tabletdb.schema.mutations import PutKeyspace, apply_mutations
from tabletdb.topology.commands import TopologyCommand, apply_command, command_from_plain, command_to_plain
from tabletdb.topology.requests import RequestRefused, admit_member, enqueue
from tabletdb.topology.state import Request, TopologyState, state_from_plain, state_to_plain
from tabletdb.topology.states import NodeState, RequestKind

ENTRY_FORMAT = 1
SNAPSHOT_FORMAT = 1


@dataclass(frozen=True)
class ClusterState:
    metadata: g0.Group0State = field(default_factory=g0.Group0State)
    topology: Topology = field(default_factory=Topology)
    balancing_enabled: bool = True
    """Whether tablets may be moved (group0.balancing); backup pauses it."""
    topology_state: TopologyState = field(default_factory=TopologyState)
    """The topology coordinator's state machine (`topology.state`), guarded by its own id."""

    @property
    def state_id(self) -> uuid.UUID:
        """The schema version: the id of the last schema command that took effect."""
        return self.metadata.state_id


@dataclass(frozen=True)
class SchemaEntry:
    command: g0.SchemaCommand
    events: tuple[SchemaChangeEvent, ...]

    @property
    def command_id(self) -> uuid.UUID:
        return self.command.new_state_id


@dataclass(frozen=True)
class BatchEntry:
    """Schema commands one node decided in one turn, each on the state the previous one makes
    (chained state ids), committed as one Raft entry: one append, fsync and round trip for
    all. If one goes stale the ones after it do too, and their node re-decides them."""

    entries: tuple[SchemaEntry, ...]

    @property
    def command_id(self) -> uuid.UUID:
        return self.entries[0].command_id


@dataclass(frozen=True)
class TopologyEntry:
    """One topology coordinator step or queued request (`topology.commands`)."""

    command: TopologyCommand

    @property
    def command_id(self) -> uuid.UUID:
        return self.command.new_state_id


GroupEntry = SchemaEntry | JoinCommand | BatchEntry | BalancingCommand | TopologyEntry | ViewBuildCommand


@dataclass(frozen=True)
class Applied:
    """What applying one entry did, for the node's waiters and event listeners."""

    command_id: uuid.UUID
    took_effect: bool
    events: tuple[SchemaChangeEvent, ...] = ()
    joined: NodeRecord | None = None


def apply_entry(state: ClusterState, entry: GroupEntry) -> tuple[ClusterState, tuple[Applied, ...]]:
    """Deterministic on every node: the same log yields the same state and outcomes (one per
    command; a batch has several)."""
    if isinstance(entry, BatchEntry):
        outcomes = []
        for item in entry.entries:
            state, applied = _apply_one(state, item)
            outcomes.append(applied)
        return state, tuple(outcomes)
    state, applied = _apply_one(state, entry)
    return state, (applied,)


def _apply_one(
    state: ClusterState,
    entry: SchemaEntry | JoinCommand | BalancingCommand | TopologyEntry | ViewBuildCommand,
) -> tuple[ClusterState, Applied]:
    if isinstance(entry, TopologyEntry):
        return _apply_topology(state, entry)
    if isinstance(entry, SchemaEntry):
        metadata, ok = g0.apply(state.metadata, entry.command)
        return replace(state, metadata=metadata), Applied(entry.command_id, ok, entry.events if ok else ())
    if isinstance(entry, BalancingCommand):
        return replace(state, balancing_enabled=entry.enabled), Applied(entry.command_id, True)
    if isinstance(entry, ViewBuildCommand):
        return _apply_view_build(state, entry)
    if state.topology_state.state_of(entry.record.host_id) is NodeState.LEFT:
        return state, Applied(entry.command_id, False)  # a node that left never comes back
    known = entry.record.host_id in state.topology.members
    topology_state = state.topology_state
    if entry.replaces is not None and not known:
        queued = _queued_replace(topology_state, entry)
        if queued is None:
            return state, Applied(entry.command_id, False)
        topology_state = queued
    topology, ok = apply_join(state.topology, entry)
    if not ok:
        return state, Applied(entry.command_id, False)
    joined = entry.record if not known else None
    if joined is not None:
        # Join entries get time-based ids since joins became topology requests; an older log's
        # (random ids) admitted its member as normal at once, and replaying it must say the same.
        legacy = entry.command_id.version != 1
        topology_state = admit_member(topology_state, joined.host_id, entry.command_id, at_once=legacy)
    return replace(state, topology=topology, topology_state=topology_state), Applied(
        entry.command_id, ok, joined=joined
    )


def _apply_view_build(state: ClusterState, entry: ViewBuildCommand) -> tuple[ClusterState, Applied]:
    """The view's status for the nodes that own tokens now (normal ones)."""
    owners = [h for h in state.topology.members if state.topology_state.state_of(h) is NodeState.NORMAL]
    builds = apply_view_build(state.metadata.view_builds, entry, state.metadata.catalog, owners)
    return replace(state, metadata=replace(state.metadata, view_builds=builds)), Applied(
        entry.command_id, True
    )


def _queued_replace(topology_state: TopologyState, entry: JoinCommand) -> TopologyState | None:
    """The topology state with the new node's `replace` request queued (request id = the join's
    command id, a timeuuid); None if it may not be (the leader checked liveness before it
    proposed the join, and the coordinator checks again when it starts the request)."""
    assert entry.replaces is not None
    request = Request(entry.command_id, RequestKind.REPLACE, entry.record.host_id, entry.replaces)
    try:
        return enqueue(topology_state, request, frozenset(), entry.command_id).topology
    except RequestRefused:
        return None


def _apply_topology(state: ClusterState, entry: TopologyEntry) -> tuple[ClusterState, Applied]:
    """A stale step (decided on a topology state that moved on, or for one that writes a keyspace
    definition, on a catalog that moved on) changes nothing on any node."""
    maps = state.metadata.tablets
    schema = entry.command.schema
    if schema is not None and schema.catalog_version != state.metadata.state_id:
        return state, Applied(entry.command_id, False)
    topology, changed, ok = apply_command(state.topology_state, maps, entry.command)
    if not ok:
        return state, Applied(entry.command_id, False)
    for table_id, tm in sorted(changed.items(), key=lambda kv: kv[0].bytes):
        maps = maps.set(table_id, tm)
    metadata = replace(state.metadata, tablets=maps)
    if entry.command.stream_sets:  # a resize cut-over of a CDC table opens its new streams
        metadata = replace(metadata, cdc_stream_sets=(*metadata.cdc_stream_sets, *entry.command.stream_sets))
    events: tuple[SchemaChangeEvent, ...] = ()
    if schema is not None:  # a finished RF change: the catalog gets the new replication now
        catalog = apply_mutations(
            metadata.catalog, (PutKeyspace(schema.keyspace),), entry.command.new_state_id
        )
        metadata = replace(metadata, catalog=catalog)
        events = (SchemaChangeEvent(Change.UPDATED, Target.KEYSPACE, schema.keyspace.name),)
    members = _without_left(state.topology, topology)
    return replace(state, metadata=metadata, topology=members, topology_state=topology), Applied(
        entry.command_id, True, events
    )


def _without_left(members: Topology, topology: TopologyState) -> Topology:
    """Membership without the nodes that left: they own no tokens and get no new replicas, are
    no peers, and the internode handshake no longer admits them (`system.topology` still lists
    them from the topology state)."""
    left = [h for h in members.members if topology.state_of(h) is NodeState.LEFT]
    if not left:
        return members
    return replace(members, members={h: r for h, r in members.members.items() if h not in left})


def _event_to_plain(e: SchemaChangeEvent) -> list[Any]:
    return [e.change.value, e.target.value, e.keyspace, e.name, list(e.arg_types)]


def _event_from_plain(d: list[Any]) -> SchemaChangeEvent:
    change, target, keyspace, name, arg_types = d
    return SchemaChangeEvent(Change(change), Target(target), keyspace, name, tuple(arg_types))


def _schema_to_plain(entry: SchemaEntry) -> dict[str, Any]:
    return {
        "f": ENTRY_FORMAT,
        "k": "schema",
        "c": g0.encode_command(entry.command),
        "ev": [_event_to_plain(e) for e in entry.events],
    }


def _schema_from_plain(body: dict[str, Any]) -> SchemaEntry:
    return SchemaEntry(g0.decode_command(body["c"]), tuple(_event_from_plain(e) for e in body["ev"]))


def encode_entry(entry: GroupEntry) -> bytes:
    body: dict[str, Any]
    if isinstance(entry, SchemaEntry):
        body = _schema_to_plain(entry)
    elif isinstance(entry, BatchEntry):
        body = {"f": ENTRY_FORMAT, "k": "batch", "es": [_schema_to_plain(e) for e in entry.entries]}
    elif isinstance(entry, BalancingCommand):
        body = {"f": ENTRY_FORMAT, "k": "balancing", "c": balancing_to_plain(entry)}
    elif isinstance(entry, TopologyEntry):
        body = {"f": ENTRY_FORMAT, "k": "topology", "c": command_to_plain(entry.command)}
    elif isinstance(entry, ViewBuildCommand):
        body = {"f": ENTRY_FORMAT, "k": "view_build", "c": view_build_to_plain(entry)}
    else:
        body = {"f": ENTRY_FORMAT, "k": "join", "c": join_to_plain(entry)}
    return msgpack.packb(body, use_bin_type=True)


def decode_entry(data: bytes) -> GroupEntry:
    body = msgpack.unpackb(data, raw=False)
    if not isinstance(body, dict) or body.get("f") != ENTRY_FORMAT:
        raise ValueError(f"unknown group0 entry encoding: {str(body)[:80]}")
    if body["k"] == "schema":
        return _schema_from_plain(body)
    if body["k"] == "batch":
        return BatchEntry(tuple(_schema_from_plain(e) for e in body["es"]))
    if body["k"] == "join":
        return join_from_plain(body["c"])
    if body["k"] == "balancing":
        return balancing_from_plain(body["c"])
    if body["k"] == "topology":
        return TopologyEntry(command_from_plain(body["c"]))
    if body["k"] == "view_build":
        return view_build_from_plain(body["c"])
    raise ValueError(f"unknown group0 entry kind {body['k']!r}")


def encode_snapshot(state: ClusterState) -> bytes:
    return msgpack.packb(
        {
            "f": SNAPSHOT_FORMAT,
            "metadata": g0.encode_state(state.metadata),
            "topology": topology_to_plain(state.topology),
            "balancing": state.balancing_enabled,
            "topology_state": state_to_plain(state.topology_state),
        },
        use_bin_type=True,
    )


def decode_snapshot(data: bytes) -> ClusterState:
    """The state in a snapshot; empty data is the bootstrap snapshot of a founding member."""
    if not data:
        return ClusterState()
    body = msgpack.unpackb(data, raw=False)
    if not isinstance(body, dict) or body.get("f") != SNAPSHOT_FORMAT:
        raise ValueError("unknown group0 cluster snapshot encoding")
    return ClusterState(
        g0.decode_state(body["metadata"]),
        topology_from_plain(body["topology"]),
        bool(body.get("balancing", True)),
        state_from_plain(body["topology_state"]) if "topology_state" in body else TopologyState(),
    )
