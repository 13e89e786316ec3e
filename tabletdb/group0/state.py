"""group0's metadata state and the schema command that changes it (DESIGN.md decisions 2-4).

`Group0State` is one immutable value: the schema catalog, the tablet maps of tables in tablets
keyspaces, roles and grants (`auth`) and service levels (`qos`). A `SchemaCommand` names the
state id it was decided on and the new id it produces, and carries the catalog mutations together
with the tablet-map changes and the auth and service-level mutations that go with them, so they
commit (or go stale) as one. Apply is deterministic and a no-op when the state has moved on, so
every node that applies the same log reaches the same state, and the deciding node learns (by
comparing ids) whether its command took effect or must be re-decided on the newer state. The
state id is the catalog's version, i.e. the schema version.

Membership and features (`group0.topology`), the tablet-balancing flag and their commands live
one level up, in `group0.cluster_state.ClusterState`, which also defines group0's Raft entries
and snapshots; this module fixes how a schema command and this state are encoded inside them.
CDC generations of vnode keyspaces (``cdc.generation``) ride on the schema command that first
needs one (``group0.tablet_planning``), so every node has a generation before any write uses it;
so do the stream sets of CDC tables in tablets keyspaces (``cdc.tablet_streams``), which the
description tables show.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from tabletdb.auth.model import AuthState
from tabletdb.cdc.generation import Generation, Generations, generation_from_plain, generation_to_plain
from tabletdb.cdc.tablet_streams import StreamSets, stream_sets_from_plain, stream_sets_to_plain
from tabletdb.group0 import auth_state
from tabletdb.group0.tablets_state import (
    EMPTY_TABLET_MAPS,
    TabletChange,
    TabletMaps,
    apply_tablet_changes,
    changes_from_plain,
    changes_to_plain,
    maps_from_plain,
    maps_to_plain,
)
from tabletdb.group0.view_builds import ViewBuilds, builds_from_plain, builds_to_plain
from tabletdb.qos.model import QosState
from tabletdb.schema import serialize
from tabletdb.schema.ddl_common import DdlOutcome
from tabletdb.schema.model import ZERO_VERSION, Catalog
from tabletdb.schema.mutations import Mutation, apply_mutations

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Group0State:
    catalog: Catalog = field(default_factory=Catalog)
    tablets: TabletMaps = EMPTY_TABLET_MAPS
    """Tablet map of every table in a tablets keyspace, by table id (group0.tablets_state)."""
    auth: AuthState = field(default_factory=AuthState)
    qos: QosState = field(default_factory=QosState)
    cdc_generations: Generations = ()
    """CDC generations of vnode keyspaces, oldest first (``cdc.generation.operating``)."""
    cdc_stream_sets: StreamSets = ()
    """Stream sets of CDC tables in tablets keyspaces, oldest first (``cdc.tablet_streams``); a
    dropped table's go with it."""
    view_builds: ViewBuilds = ()
    """Build status of views and indexes (``group0.view_builds``), set by their own commands."""

    @property
    def state_id(self) -> uuid.UUID:
        """The id of the last command applied; doubles as the schema version."""
        return self.catalog.version


@dataclass(frozen=True)
class SchemaCommand:
    prev_state_id: uuid.UUID
    new_state_id: uuid.UUID
    mutations: tuple[Mutation, ...]
    tablet_changes: tuple[TabletChange, ...] = ()
    """Tablet maps created/removed with the schema change, so both move in one step."""
    auth_mutations: auth_state.AuthMutations = ()
    qos_mutations: auth_state.QosMutations = ()
    """Role/grant and service-level changes; with schema mutations they commit atomically."""
    cdc_generation: tuple[int, Generation] | None = None
    """A new CDC generation (µs it operates from, streams), committed with the schema needing it."""
    cdc_stream_sets: StreamSets = ()
    """New stream sets of CDC tablet tables (a log just made), committed with the schema change."""


Command = SchemaCommand


def with_auth(command: SchemaCommand, outcome: DdlOutcome) -> SchemaCommand:
    """`command` carrying the outcome's auth and service-level mutations, if it has any."""
    if isinstance(outcome, auth_state.AuthOutcome) and (outcome.auth_mutations or outcome.qos_mutations):
        return replace(command, auth_mutations=outcome.auth_mutations, qos_mutations=outcome.qos_mutations)
    return command


def apply(state: Group0State, command: Command) -> tuple[Group0State, bool]:
    """The state after `command`, and whether it took effect (False: the state moved on)."""
    if command.prev_state_id != state.state_id:
        return state, False
    catalog = apply_mutations(state.catalog, command.mutations, command.new_state_id)
    tablets = apply_tablet_changes(state.tablets, command.tablet_changes)
    auth, qos = auth_state.apply_auth(state.auth, state.qos, command.auth_mutations, command.qos_mutations)
    generations = state.cdc_generations
    if command.cdc_generation is not None:
        generations = (*generations, command.cdc_generation)
    stream_sets = _live_stream_sets((*state.cdc_stream_sets, *command.cdc_stream_sets), catalog)
    return replace(
        state,
        catalog=catalog,
        tablets=tablets,
        auth=auth,
        qos=qos,
        cdc_generations=generations,
        cdc_stream_sets=stream_sets,
    ), True


def _live_stream_sets(sets: StreamSets, catalog: Catalog) -> StreamSets:
    """Stream sets of tables that still exist (the ids map keeps every table's id)."""
    if all(s.table_id in catalog.ids for s in sets):
        return sets
    return tuple(s for s in sets if s.table_id in catalog.ids)


def encode_command(command: Command) -> bytes:
    body: dict[str, Any] = {
        "f": FORMAT_VERSION,
        "k": "schema",
        "prev": command.prev_state_id.bytes,
        "new": command.new_state_id.bytes,
        "m": serialize.mutations_to_plain(command.mutations),
    }
    if command.tablet_changes:
        body["t"] = changes_to_plain(command.tablet_changes)
    if command.auth_mutations or command.qos_mutations:
        body["a"] = auth_state.mutations_to_plain(command.auth_mutations, command.qos_mutations)
    if command.cdc_generation is not None:
        body["g"] = _generation_to_plain(command.cdc_generation)
    if command.cdc_stream_sets:
        body["s"] = stream_sets_to_plain(command.cdc_stream_sets)
    return msgpack.packb(body, use_bin_type=True)


def _generation_to_plain(item: tuple[int, Generation]) -> list[Any]:
    return [item[0], generation_to_plain(item[1])]


def _generation_from_plain(data: list[Any]) -> tuple[int, Generation]:
    return int(data[0]), generation_from_plain(data[1])


def decode_command(data: bytes) -> Command:
    body = msgpack.unpackb(data, raw=False)
    if not isinstance(body, dict) or body.get("f") != FORMAT_VERSION or body.get("k") != "schema":
        raise ValueError(f"unknown group0 command encoding: {str(body)[:80]}")
    return SchemaCommand(
        uuid.UUID(bytes=body["prev"]),
        uuid.UUID(bytes=body["new"]),
        serialize.mutations_from_plain(body["m"]),
        changes_from_plain(body.get("t", [])),
        *auth_state.mutations_from_plain(body.get("a")),
        cdc_generation=_generation_from_plain(body["g"]) if "g" in body else None,
        cdc_stream_sets=stream_sets_from_plain(body.get("s", [])),
    )


def encode_state(state: Group0State) -> bytes:
    return msgpack.packb(
        {
            "f": FORMAT_VERSION,
            "catalog": serialize.catalog_to_plain(state.catalog),
            "tablets": maps_to_plain(state.tablets),
            "auth": auth_state.state_to_plain(state.auth, state.qos),
            "cdc": [_generation_to_plain(g) for g in state.cdc_generations],
            "cdc_sets": stream_sets_to_plain(state.cdc_stream_sets),
            "view_builds": builds_to_plain(state.view_builds),
        },
        use_bin_type=True,
    )


def decode_state(data: bytes) -> Group0State:
    if not data:
        return Group0State()
    body = msgpack.unpackb(data, raw=False)
    if not isinstance(body, dict) or body.get("f") != FORMAT_VERSION:
        raise ValueError("unknown group0 snapshot encoding")
    auth, qos = auth_state.state_from_plain(body.get("auth"))
    return Group0State(
        serialize.catalog_from_plain(body["catalog"]),
        maps_from_plain(body.get("tablets", [])),
        auth,
        qos,
        tuple(_generation_from_plain(g) for g in body.get("cdc", [])),
        stream_sets_from_plain(body.get("cdc_sets", [])),
        builds_from_plain(body.get("view_builds", [])),
    )


__all__ = [
    "ZERO_VERSION",
    "Command",
    "Group0State",
    "SchemaCommand",
    "apply",
    "decode_command",
    "decode_state",
    "encode_command",
    "encode_state",
    "with_auth",
]
