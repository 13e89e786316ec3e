"""Tablet maps as plain msgpack-friendly values, for group0 commands and snapshots.

Only builtins appear in the plain form (dict, list, int, str, bytes, None), so encoding is
deterministic and a map survives msgpack unchanged. Host ids travel as 16-byte UUIDs.
"""

from __future__ import annotations

import uuid
from typing import Any

from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletInfo, TabletMap, TabletReplica, TransitionKind, TransitionStage

WIRE_VERSION = 1


def _replicas_to_plain(replicas: tuple[TabletReplica, ...] | None) -> list[list[Any]] | None:
    return None if replicas is None else [[r.host.bytes, r.shard] for r in replicas]


_Replicas = dict[tuple[bytes, int], TabletReplica]


def _replicas_from_plain(data: list[list[Any]] | None, seen: _Replicas) -> tuple[TabletReplica, ...] | None:
    """`seen` holds the replicas decoded so far for this map: a map names a few hosts many times,
    and building each host's UUID once made decoding a new table's map about three times faster
    (every node decodes every map it applies; the proposer decodes it once more to check it)."""
    if data is None:
        return None
    replicas = []
    for h, s in data:
        key = (bytes(h), int(s))
        replica = seen.get(key)
        if replica is None:
            replica = seen[key] = TabletReplica(uuid.UUID(bytes=key[0]), key[1])
        replicas.append(replica)
    return tuple(replicas)


def tablet_info_to_plain(t: TabletInfo) -> list[Any]:
    """One tablet entry (topology commands move tablets one entry at a time)."""
    return [
        t.last_token,
        _replicas_to_plain(t.replicas),
        _replicas_to_plain(t.new_replicas),
        None if t.stage is None else t.stage.value,
        None if t.transition is None else t.transition.value,
    ]


def _info_from_plain(data: list[Any], seen: _Replicas) -> TabletInfo:
    last, replicas, new_replicas, stage, transition = data
    return TabletInfo(
        int(last),
        _replicas_from_plain(replicas, seen) or (),
        _replicas_from_plain(new_replicas, seen),
        None if stage is None else TransitionStage(stage),
        None if transition is None else TransitionKind(transition),
    )


def tablet_info_from_plain(data: list[Any]) -> TabletInfo:
    return _info_from_plain(data, {})


def tablet_map_to_plain(tm: TabletMap) -> dict[str, Any]:
    plain: dict[str, Any] = {
        "v": WIRE_VERSION,
        "table": tm.table_id.bytes,
        "resize": tm.resize.value,
        "seq": tm.resize_seq_number,
        "tablets": [tablet_info_to_plain(t) for t in tm.tablets],
    }
    if tm.base_table is not None:  # absent otherwise: maps planned on their own encode as before
        plain["base"] = tm.base_table.bytes
    return plain


def tablet_map_from_plain(data: dict[str, Any]) -> TabletMap:
    if data.get("v") != WIRE_VERSION:
        raise ValueError(f"unsupported tablet map wire version {data.get('v')!r}, expected {WIRE_VERSION}")
    seen: _Replicas = {}
    tablets = [_info_from_plain(t, seen) for t in data["tablets"]]
    return TabletMap(
        uuid.UUID(bytes=bytes(data["table"])),
        tuple(tablets),
        ResizeState(data["resize"]),
        int(data["seq"]),
        None if data.get("base") is None else uuid.UUID(bytes=bytes(data["base"])),
    )
