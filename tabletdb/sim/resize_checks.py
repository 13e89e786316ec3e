"""Invariants of tablet maps under split, merge, moves and RF changes, checked by the resize
simulation (``resize_seed``) on every committed group0 value; pure.

- every map's count is a power of two within the table's ``[min_tablet_count, max_tablet_count]``
  and its tablets cover the token ring once, in order, with no gap;
- a split keeps each tablet's replicas in both halves; a merge joins only siblings that had the
  same replica set (and the merged tablet keeps it);
- a tablet at rest (no transition) has as many replicas as its keyspace's RF (either side's RF
  while an RF change of the keyspace runs), on distinct nodes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from tabletdb.dht.token import MAX_TOKEN, MIN_TOKEN
from tabletdb.group0.tablet_resize import catalog_sizing
from tabletdb.schema.model import Catalog
from tabletdb.tablets.tablet_map import TabletMap
from tabletdb.topology.state import TopologyState
from tabletdb.topology.states import RequestKind


def map_violations(
    before: Mapping[uuid.UUID, TabletMap],
    after: Mapping[uuid.UUID, TabletMap],
    catalog: Catalog,
    topology: TopologyState,
) -> list[str]:
    """What is wrong with the maps ``after`` (a committed value that followed ``before``)."""
    out: list[str] = []
    sizing, _, _ = catalog_sizing(catalog)
    for table_id, tm in sorted(after.items(), key=lambda kv: kv[0].bytes):
        table = sizing.get(table_id)
        n = tm.tablet_count
        if n & (n - 1):
            out.append(f"table {table_id} has {n} tablets, not a power of two")
        if table is not None:
            low, high = table.hints.min_tablet_count or 1, table.hints.max_tablet_count
            if n < low or (high is not None and n > high):
                out.append(f"table {table_id} has {n} tablets, outside [{low}, {high}]")
        out += _coverage(tm)
        prev = before.get(table_id)
        if prev is not None and prev.resize_seq_number != tm.resize_seq_number:
            out += _resized(prev, tm)
        out += _at_rest(tm, _rf_allowed(catalog, topology, table is not None))
    return out


def _coverage(tm: TabletMap) -> list[str]:
    start = MIN_TOKEN
    for tid in range(tm.tablet_count):
        r = tm.range_of(tid)
        if r.start != start or r.end <= r.start:
            return [
                f"table {tm.table_id}: tablet {tid} covers ({r.start}, {r.end}], expected to start at {start}"
            ]
        start = r.end
    if start != MAX_TOKEN:
        return [f"table {tm.table_id}: tablets end at {start}, not at the ring's end"]
    return []


def _resized(prev: TabletMap, tm: TabletMap) -> list[str]:
    if tm.resize_seq_number != prev.resize_seq_number + 1:
        return [
            f"table {tm.table_id}: resize sequence jumped {prev.resize_seq_number} -> {tm.resize_seq_number}"
        ]
    if tm.tablet_count == 2 * prev.tablet_count:
        return [
            f"table {tm.table_id}: split tablet {i} did not keep its replicas"
            for i, info in enumerate(prev.tablets)
            if tm.tablets[2 * i].replicas != info.replicas or tm.tablets[2 * i + 1].replicas != info.replicas
        ][:1]
    if 2 * tm.tablet_count == prev.tablet_count:
        for i, info in enumerate(tm.tablets):
            left, right = prev.tablets[2 * i], prev.tablets[2 * i + 1]
            if set(left.replicas) != set(right.replicas) or set(info.replicas) != set(left.replicas):
                return [
                    f"table {tm.table_id}: merged tablet {i} from siblings on {list(left.replicas)} and "
                    f"{list(right.replicas)} into {list(info.replicas)}"
                ]
        return []
    return [f"table {tm.table_id}: resized from {prev.tablet_count} to {tm.tablet_count} tablets"]


def _rf_allowed(catalog: Catalog, topology: TopologyState, in_catalog: bool) -> set[int]:
    """The replica counts a tablet at rest may have: the keyspace's RF, and while an RF change
    runs (or is queued: nothing has moved yet, but it may have begun) the one it goes to."""
    if not in_catalog:
        return set()
    allowed: set[int] = set()
    for ks in catalog.keyspaces.values():
        allowed |= {int(v) for _, v in ks.definition.replication.options if not isinstance(v, tuple)}
    tr = topology.transition
    requests = [*topology.queue, *((tr.request,) if tr is not None else ())]
    for request in requests:
        if request.kind is RequestKind.KEYSPACE_RF_CHANGE and request.rf_change is not None:
            for _, v in request.rf_change.after.replication.options:
                if not isinstance(v, tuple):
                    allowed.add(int(v))
    return allowed


def _at_rest(tm: TabletMap, allowed: set[int]) -> list[str]:
    for tid, info in enumerate(tm.tablets):
        if info.in_transition:
            continue
        hosts = {r.host for r in info.replicas}
        if len(hosts) != len(info.replicas):
            return [f"table {tm.table_id}: tablet {tid} has two replicas on one node: {list(info.replicas)}"]
        if allowed and len(info.replicas) not in allowed:
            return [
                f"table {tm.table_id}: tablet {tid} at rest has {len(info.replicas)} replicas, "
                f"the RF allows {sorted(allowed)}"
            ]
    return []
