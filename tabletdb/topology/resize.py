"""Resize (split and merge by size) as topology coordinator steps, pure.

When no request is queued and no transition runs, the coordinator re-evaluates every table's
tablet count (``tablets.count.plan_resizes``: every factor of spec/tablets.md, sizes from the
nodes' load statistics) and begins at most one resize at a time, as one transition:

1. *prepare* (one group0 command, version + 1): the table's map (and the maps co-located with it,
   its CDC log table) get ``resize = split | merge``. From applying it, every replica writes each
   write of the table both to its current file and to the file the write will live in after the
   cut-over (``replica.resize_files``: a replica-local write-both, so no coordinator routes
   differently and drivers keep their tablets); reads stay on the current files.
2. after a barrier (every live node writes both), each replica host copies its current files into
   the new ones (``ResizeFiles``): SQLite ATTACH + ``INSERT ... SELECT`` by token range, last
   write wins, one synced transaction per new file. The writes that arrive meanwhile are already
   in the new files; last write wins makes copying them again harmless.
3. *cut-over* (one group0 command, version + 1): the maps split (or merge) with
   ``resize_seq_number`` + 1, and a CDC table gets its new stream set in the same entry. Each
   replica routes by the new map from applying it; files of older generations are garbage that
   the replica removes by itself once it is idle (``replica.resize_files.stale_files``).

Rollback: while preparing, a queued request (it goes first: resize must not hold up a removenode
of a dead replica) or a replica host down for ``rollback_after_ms`` reverts the maps to
``resize = none`` (version + 1); the half-written new files are garbage then. A coordinator that
crashes resumes from the maps (the copies are redone: they are idempotent).

A merge needs each pair of sibling tablets on the same replicas (``TabletMap.merge``). A table
the re-evaluation wants merged whose siblings are apart is *pending* (``pending_merges``): the
balancer loop co-locates its siblings first (``tablets.merge_colocation``, rounds of moves with
the balancer's per-node bound) and, while it is pending, never separates co-located siblings;
once every pair is co-located the merge begins as above. Pending is re-derived on every step
from the sizes, as ScyllaDB's balancer re-evaluates (and may revoke) a merge decision: a table
that grows again stops being pending, and balancing may then move its siblings apart again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from tabletdb.cdc.tablet_streams import StreamSet, StreamSets, next_stream_set
from tabletdb.tablets.colocation import followers_of
from tabletdb.tablets.count import (
    ClusterShape,
    DcReplication,
    ResizeState,
    SizingConfig,
    TableSize,
    TableSizing,
    plan_resizes,
)
from tabletdb.tablets.load_stats import TabletKey
from tabletdb.tablets.merge_colocation import siblings_colocated
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.topology.commands import MapUpdate, TopologyCommand, map_update
from tabletdb.topology.state import TopologyState

ResizeKey = tuple[uuid.UUID, uuid.UUID, int]
"""(host, base table id, topology version of the prepare): one host's copy for one attempt."""


@dataclass(frozen=True)
class ResizeInputs:
    """What the re-evaluation needs beside the maps and sizes, from group0's catalog and the
    node's settings (built by the node's shell: ``group0.tablet_resize``)."""

    tables: Mapping[uuid.UUID, TableSizing]
    """Every table that decides its own count (sizes are filled in here)."""
    colocated: Mapping[uuid.UUID, tuple[uuid.UUID, ...]] = field(default_factory=dict)
    """A table -> the tables that share its map and resize with it (its CDC log table)."""
    shape: ClusterShape = field(default_factory=dict)
    config: SizingConfig = field(default_factory=SizingConfig)
    cdc_tables: frozenset[uuid.UUID] = frozenset()
    """Tables with CDC on: their cut-over opens a new stream set."""
    cdc_history: StreamSets = ()
    now_us: int = 0
    """Wall clock of the coordinator: a new stream set's timestamp."""
    paused: str = field(default="", kw_only=True)
    """Why no resize may run now (a backup paused tablet moves): none begins, a prepared one
    rolls back, since a cut-over would renumber the tablets under the backup."""


@dataclass(frozen=True)
class ResizeTask:
    """One replica host copies its files of ``tables`` (the base and its co-located tables)
    from the current generation into the next."""

    key: ResizeKey
    tables: tuple[uuid.UUID, ...]
    seq: int
    """The resize sequence number of the maps being resized (the current generation)."""
    kind: ResizeState


@dataclass(frozen=True)
class ResizeFiles:
    tasks: tuple[ResizeTask, ...]


@dataclass(frozen=True)
class Decision:
    table_id: uuid.UUID
    kind: ResizeState
    why: str


def decide(
    tablets: Mapping[uuid.UUID, TabletMap],
    inputs: ResizeInputs,
    sizes: Mapping[TabletKey, int],
    alive: frozenset[uuid.UUID],
) -> Decision | None:
    """The next resize to begin, or None. A table is sized only when every tablet of it and of
    its co-located tables was measured (a missing size would look like an empty tablet and
    merge it); one whose replicas are not all alive, or (merge) whose siblings do not share
    replicas, waits (the latter is pending: see ``pending_merges``)."""
    sizing, plans, followers = _plans(tablets, inputs, sizes)
    for table_id in sorted(plans, key=lambda t: t.bytes):
        kind = plans[table_id]
        if kind is ResizeState.NONE:
            continue
        group = [tablets[t] for t in group_ids(table_id, tablets, inputs, followers) if t in tablets]
        if any(h not in alive for tm in group for h in _hosts(tm)):
            continue
        if kind is ResizeState.MERGE and not all(siblings_colocated(tm) for tm in group):
            continue
        size = sizing[table_id].size
        assert size is not None
        average = size.total_bytes // max(1, size.current_count)
        why = (
            f"{kind.value} table {table_id}: {size.current_count} tablets, {size.total_bytes} bytes "
            f"(average {average}, target {inputs.config.target_tablet_size_in_bytes})"
        )
        return Decision(table_id, kind, why)
    return None


def pending_merges(
    tablets: Mapping[uuid.UUID, TabletMap], inputs: ResizeInputs | None, sizes: Mapping[TabletKey, int]
) -> frozenset[uuid.UUID]:
    """Tables the re-evaluation wants merged and not being resized yet, with the tables that
    resize with them: the balancer co-locates their siblings and keeps co-located ones together.
    Empty while a backup pauses tablet moves (no merge may begin then)."""
    return frozenset(_pending(tablets, inputs, sizes))


def merge_inputs(
    tablets: Mapping[uuid.UUID, TabletMap], inputs: ResizeInputs | None, sizes: Mapping[TabletKey, int]
) -> tuple[frozenset[uuid.UUID], dict[uuid.UUID, Mapping[str, DcReplication]]]:
    """What a balancer round needs for merges (``topology.balancing.plan_round``): the pending
    merges and each one's replication, a co-located table's its base's (co-location may cross
    racks only where the replication is a number)."""
    pending = _pending(tablets, inputs, sizes)
    if not pending or inputs is None:
        return frozenset(), {}
    return frozenset(pending), {t: inputs.tables[base].replication for t, base in pending.items()}


def _pending(
    tablets: Mapping[uuid.UUID, TabletMap], inputs: ResizeInputs | None, sizes: Mapping[TabletKey, int]
) -> dict[uuid.UUID, uuid.UUID]:
    """Every table of a pending merge -> the table that decided it."""
    if inputs is None or inputs.paused:
        return {}
    _, plans, followers = _plans(tablets, inputs, sizes)
    return {
        member: t
        for t, kind in plans.items()
        if kind is ResizeState.MERGE and tablets[t].resize is ResizeState.NONE
        for member in group_ids(t, tablets, inputs, followers)
        if member in tablets
    }


def _plans(
    tablets: Mapping[uuid.UUID, TabletMap], inputs: ResizeInputs, sizes: Mapping[TabletKey, int]
) -> tuple[
    dict[uuid.UUID, TableSizing], dict[uuid.UUID, ResizeState], Mapping[uuid.UUID, tuple[uuid.UUID, ...]]
]:
    """Every base table's sizing (with its measured size, None if not fully measured) and the
    count algorithm's decision for each table that was measured."""
    sizing: dict[uuid.UUID, TableSizing] = {}
    followers = followers_of(tablets)
    for table_id, table in inputs.tables.items():
        tm = tablets.get(table_id)
        if tm is None or (tm.base_table is not None and tm.base_table in tablets):
            continue  # a co-located table resizes with its base
        total = _group_bytes(tablets, group_ids(table_id, tablets, inputs, followers), sizes)
        size = None if total is None else TableSize(tm.tablet_count, total, tm.resize)
        sizing[table_id] = replace(table, size=size)
    return sizing, plan_resizes(sizing, inputs.shape, inputs.config), followers


def group_ids(
    table_id: uuid.UUID,
    tablets: Mapping[uuid.UUID, TabletMap],
    inputs: ResizeInputs,
    followers: Mapping[uuid.UUID, tuple[uuid.UUID, ...]] | None = None,
) -> tuple[uuid.UUID, ...]:
    """The table and every table co-located with it (its map names it as ``base_table``, or the
    catalog says it is its CDC log): they split and merge together, in one cut-over."""
    found = followers_of(tablets) if followers is None else followers
    others = set(inputs.colocated.get(table_id, ())) | set(found.get(table_id, ()))
    return (table_id, *sorted(others - {table_id}, key=lambda t: t.bytes))


def _group_bytes(
    tablets: Mapping[uuid.UUID, TabletMap], group: tuple[uuid.UUID, ...], sizes: Mapping[TabletKey, int]
) -> int | None:
    total = 0
    for table_id in group:
        tm = tablets.get(table_id)
        if tm is None:
            continue
        for tablet_id in range(tm.tablet_count):
            size = sizes.get((table_id, tablet_id))
            if size is None:
                return None
            total += size
    return total


def _hosts(tm: TabletMap) -> set[uuid.UUID]:
    return {r.host for t in tm.tablets for r in (*t.replicas, *(t.new_replicas or ()))}


def resizing(tablets: Mapping[uuid.UUID, TabletMap]) -> list[TabletMap]:
    """The maps in a resize, in table id order (one group at a time: a base and its log)."""
    return sorted(
        (tm for tm in tablets.values() if tm.resize is not ResizeState.NONE), key=lambda tm: tm.table_id.bytes
    )


def base_of(group: list[TabletMap], inputs: ResizeInputs | None) -> uuid.UUID:
    """The table that decided the resize of ``group`` (its co-located tables follow it)."""
    ids = {tm.table_id for tm in group}
    bases = [tm.table_id for tm in group if tm.base_table is None]
    if len(bases) == 1:
        return bases[0]
    if inputs is not None:
        for table_id in sorted(ids, key=lambda t: t.bytes):
            if set(inputs.colocated.get(table_id, ())) <= ids and table_id in inputs.tables:
                return table_id
    return group[0].table_id


def begin(
    topology: TopologyState,
    tablets: Mapping[uuid.UUID, TabletMap],
    inputs: ResizeInputs,
    decision: Decision,
    new_id: uuid.UUID,
) -> TopologyCommand:
    """Prepare: the group's maps marked for the resize; version + 1 (the barrier before copying
    waits for every live node to write both)."""
    group = group_ids(decision.table_id, tablets, inputs)
    updates = tuple(
        map_update(tablets[t], replace(tablets[t], resize=decision.kind)) for t in group if t in tablets
    )
    after = replace(topology, state_id=new_id, version=topology.version + 1)
    return TopologyCommand(topology.state_id, after, (), f"begin {decision.why}", updates)


def tasks(
    group: list[TabletMap], base: uuid.UUID, version: int, done: frozenset[ResizeKey]
) -> tuple[ResizeTask, ...]:
    """A copy for every host holding a replica of the group, not yet done in this attempt."""
    hosts = sorted(set().union(*(_hosts(tm) for tm in group)), key=lambda h: h.bytes)
    tables = tuple(tm.table_id for tm in group)
    seq, kind = group[0].resize_seq_number, group[0].resize
    return tuple(
        ResizeTask((h, base, version), tables, seq, kind) for h in hosts if (h, base, version) not in done
    )


def cut_over(
    topology: TopologyState,
    group: list[TabletMap],
    inputs: ResizeInputs | None,
    new_id: uuid.UUID,
) -> TopologyCommand:
    """One command: every map of the group split (or merged), and the new CDC stream sets."""
    updates: list[MapUpdate] = []
    streams: list[StreamSet] = []
    for tm in group:
        after = tm.split() if tm.resize is ResizeState.SPLIT else tm.merge()
        updates.append(map_update(tm, after))
        if inputs is not None and tm.table_id in inputs.cdc_tables:
            found = next_stream_set(inputs.cdc_history, tm.table_id, after.last_tokens, inputs.now_us)
            if found is not None:
                streams.append(found)
    first = group[0]
    why = (
        f"{first.resize.value} of table(s) {', '.join(str(tm.table_id) for tm in group)}: "
        f"{first.tablet_count} -> {updates[0].after.tablet_count} tablets"
    )
    after_topology = replace(topology, state_id=new_id, version=topology.version + 1)
    return TopologyCommand(topology.state_id, after_topology, (), why, tuple(updates), tuple(streams))


def roll_back(
    topology: TopologyState, group: list[TabletMap], why: str, new_id: uuid.UUID
) -> TopologyCommand:
    """The group's maps back to ``resize = none``; the next generation's files are garbage."""
    updates = tuple(map_update(tm, replace(tm, resize=ResizeState.NONE)) for tm in group)
    after = replace(topology, state_id=new_id, version=topology.version + 1)
    return TopologyCommand(topology.state_id, after, (), f"roll back resize: {why}", updates)


def needed_down(
    group: list[TabletMap],
    alive: frozenset[uuid.UUID],
    down_since: Mapping[uuid.UUID, int],
    now_ms: int,
    rollback_after_ms: int,
) -> str:
    """Why the resize must roll back because a replica host is down too long ("" if none is)."""
    for host in sorted(set().union(*(_hosts(tm) for tm in group)), key=lambda h: h.bytes):
        since = down_since.get(host)
        if host not in alive and since is not None and now_ms - since >= rollback_after_ms:
            table = group[0].table_id
            return f"node {host} holds replicas of table {table} and has been down for {now_ms - since} ms"
    return ""
