"""Co-located tables: a table whose tablets always sit where another table's tablets sit.

A CDC log table in a tablets keyspace is co-located with its base table (as in ScyllaDB, whose
``system.tablets`` names the base in ``base_table``): each base replica writes the log rows of
the writes it applies into its own copy of the log tablet, so the log tablet must have exactly
the base tablet's replicas, migration state included, at every moment. The log's map is
therefore never planned on its own; it is derived from the base's:

- a new log table takes a copy of the base's map (``follow_map``);
- planners (join/leave/remove/replace placement, the balancer) see base tables only
  (``planning_maps``), weighing each base tablet with its co-located tablets' sizes
  (``group_sizes``);
- every tablet update of a base table is repeated, in the same group0 command, for each table
  co-located with it (``mirror_updates``), so both tablets go through the same stages together
  and the coordinator streams and cleans both files;
- a whole-map change of a base (split, merge) replaces its co-located maps too
  (``with_followers``).

A map is co-located when it names its base (``TabletMap.base_table``). A CDC log map created
before maps could name a base is adopted by the group0 leader (``group0.cdc_log_maps``): once its
tablets equal the base's it is named (``adoptable``); until then its replicas are moved onto the
base tablets' replicas one at a time (``adoption_move``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica

TabletKey = tuple[uuid.UUID, int]


def follow_map(base: TabletMap, table_id: uuid.UUID) -> TabletMap:
    """The map of `table_id` co-located with `base`: the same tablets on the same replicas."""
    if base.base_table is not None:
        raise ValueError(
            f"table {base.table_id} is itself co-located with {base.base_table}; "
            f"co-locate {table_id} with {base.base_table} instead"
        )
    return replace(base, table_id=table_id, base_table=base.table_id)


def followers_of(maps: Mapping[uuid.UUID, TabletMap]) -> dict[uuid.UUID, tuple[uuid.UUID, ...]]:
    """The co-located tables of every base table that has any, sorted by id."""
    out: dict[uuid.UUID, list[uuid.UUID]] = {}
    for table_id, tm in maps.items():
        if tm.base_table is not None and tm.base_table in maps:
            out.setdefault(tm.base_table, []).append(table_id)
    return {base: tuple(sorted(ids, key=lambda t: t.bytes)) for base, ids in out.items()}


def base_of(maps: Mapping[uuid.UUID, TabletMap], table_id: uuid.UUID) -> uuid.UUID:
    """The table whose migrations move `table_id`'s tablets: its base, or itself."""
    tm = maps.get(table_id)
    if tm is None or tm.base_table is None or tm.base_table not in maps:
        return table_id
    return tm.base_table


def planning_maps(maps: Mapping[uuid.UUID, TabletMap]) -> Mapping[uuid.UUID, TabletMap]:
    """The maps a planner decides on: every table except those co-located with another (their
    tablets move with their base's). `maps` itself when nothing is co-located."""
    followers = [t for t, tm in maps.items() if tm.base_table is not None and tm.base_table in maps]
    if not followers:
        return maps
    skip = set(followers)
    return {t: tm for t, tm in maps.items() if t not in skip}


def group_sizes(
    maps: Mapping[uuid.UUID, TabletMap], sizes: Mapping[TabletKey, int]
) -> Mapping[TabletKey, int]:
    """Tablet sizes with each co-located tablet's bytes added to its base tablet's: moving the
    base tablet moves them all."""
    if not any(tm.base_table is not None for tm in maps.values()):
        return sizes
    out: dict[TabletKey, int] = {}
    for (table_id, tablet_id), size in sizes.items():
        key = (base_of(maps, table_id), tablet_id)
        out[key] = out.get(key, 0) + size
    return out


class _Update(Protocol):
    @property
    def table_id(self) -> uuid.UUID: ...

    @property
    def tablet_id(self) -> int: ...

    @property
    def before(self) -> TabletInfo: ...

    @property
    def after(self) -> TabletInfo: ...


U = TypeVar("U", bound=_Update)


def mirror_updates(maps: Mapping[uuid.UUID, TabletMap], updates: Sequence[U]) -> tuple[U, ...]:
    """`updates` with every update of a co-located table dropped and every update of a base
    tablet repeated for each table co-located with it (same tablet id, same new entry), so no
    command can separate them. Each repeated update is guarded by the base's ``before``: a
    co-located tablet is always equal to its base tablet, and if it ever were not, the guard
    leaves it alone rather than give it replicas its data is not on."""
    followers = followers_of(maps)
    if not followers:
        return tuple(updates)
    out: list[U] = []
    for u in updates:
        if base_of(maps, u.table_id) != u.table_id:
            continue
        out.append(u)
        for follower in followers.get(u.table_id, ()):
            out.append(replace(u, table_id=follower))  # type: ignore[type-var]
    return tuple(out)


def with_followers(maps: Mapping[uuid.UUID, TabletMap], new_base: TabletMap) -> dict[uuid.UUID, TabletMap]:
    """`new_base` (a split, merged or otherwise replaced map of a base table) and the matching
    map of every table co-located with it, for a command that replaces whole maps."""
    out = {new_base.table_id: new_base}
    for follower in followers_of(maps).get(new_base.table_id, ()):
        out[follower] = follow_map(new_base, follower)
    return out


def separated(maps: Mapping[uuid.UUID, TabletMap]) -> list[str]:
    """Every co-located table whose map differs from its base's (tablets, replicas, stages):
    empty when co-location holds. For tests and checks."""
    problems = []
    for table_id, tm in maps.items():
        if tm.base_table is None:
            continue
        base = maps.get(tm.base_table)
        if base is None:
            continue
        if base.tablets != tm.tablets or base.resize != tm.resize:
            diff = [i for i, (a, b) in enumerate(zip(base.tablets, tm.tablets)) if a != b]
            problems.append(
                f"table {table_id} is co-located with {tm.base_table} but its map differs "
                f"({tm.tablet_count} vs {base.tablet_count} tablets; differing tablets {diff[:10]})"
            )
    return problems


def adoptable(base: TabletMap, log: TabletMap) -> bool:
    """Whether ``log`` (not naming a base yet) already sits exactly where ``base`` does, so
    naming the base changes nothing but who plans it."""
    return (
        log.base_table is None
        and base.base_table is None
        and log.resize == base.resize
        and log.resize_seq_number == base.resize_seq_number
        and log.tablet_count == base.tablet_count
        and all(_same_place(b, lg) for b, lg in zip(base.tablets, log.tablets))
    )


def _same_place(base: TabletInfo, log: TabletInfo) -> bool:
    """The same replicas (in any order), or the very same entry while migrating."""
    if base.in_transition or log.in_transition:
        return base == log
    return base.last_token == log.last_token and set(base.replicas) == set(log.replicas)


@dataclass(frozen=True)
class AdoptionMove:
    """One replica of a log tablet to move onto the base tablet's replica it lacks."""

    tablet_id: int
    last_token: int
    source: TabletReplica
    target: TabletReplica


def adoption_move(base: TabletMap, log: TabletMap) -> AdoptionMove | None:
    """The next replica move that brings ``log``'s tablets onto ``base``'s, or None when there is
    none to make now: the maps already match, a tablet of either is migrating, a resize is under
    way, or the tablet counts differ (the log's own resize has to catch up first)."""
    if log.base_table is not None or log.tablet_count != base.tablet_count:
        return None
    if log.resize != base.resize or any(t.in_transition for t in (*log.tablets, *base.tablets)):
        return None
    for i, (b, lg) in enumerate(zip(base.tablets, log.tablets)):
        missing = [r for r in b.replicas if r not in lg.replicas]
        extra = [r for r in lg.replicas if r not in b.replicas]
        if missing and extra:
            # the same host first: an intranode move copies nothing over the network
            same_host = [(e, m) for e in extra for m in missing if e.host == m.host]
            source, target = same_host[0] if same_host else (extra[0], missing[0])
            return AdoptionMove(i, lg.last_token, source, target)
    return None
