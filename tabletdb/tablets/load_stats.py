"""Tablet load statistics: the bytes each tablet replica holds on disk, as the balancer weighs them.

Every node measures its own replicas' files and answers the topology coordinator's poll (an RPC,
as ScyllaDB's coordinator gathers ``load_stats``): sizes change every second and are no one
else's state, so they never go through group0. This module is the pure part: the wire form of a
node's report, and how the coordinator merges the reports into one size per tablet.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

TabletKey = tuple[uuid.UUID, int]
TabletSizes = dict[TabletKey, int]


def encode(sizes: Mapping[TabletKey, int]) -> list[list[Any]]:
    """A node's report as plain lists (the RPC layer's payloads are msgpack-able values)."""
    return [[table_id.hex, tablet_id, size] for (table_id, tablet_id), size in sorted(sizes.items())]


def decode(payload: Any) -> TabletSizes:
    """The report back; a malformed one raises ValueError naming the bad entry."""
    if not isinstance(payload, list):
        raise ValueError(f"tablet load report must be a list, got {type(payload).__name__}")
    out: TabletSizes = {}
    for entry in payload:
        if not (isinstance(entry, list | tuple) and len(entry) == 3):
            raise ValueError(f"tablet load entry must be [table id, tablet id, bytes], got {entry!r}")
        table_hex, tablet_id, size = entry
        if not (isinstance(tablet_id, int) and isinstance(size, int) and tablet_id >= 0 and size >= 0):
            raise ValueError(f"tablet load entry has a bad tablet id or size: {entry!r}")
        try:
            table_id = uuid.UUID(hex=table_hex)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tablet load entry has a bad table id: {entry!r}") from exc
        out[(table_id, tablet_id)] = size
    return out


def merge(reports: Iterable[Mapping[TabletKey, int]]) -> TabletSizes:
    """One size per tablet: the largest of its replicas. A replica still being filled by streaming,
    or just cleaned, is smaller than the tablet; the largest replica is what a move will copy."""
    out: TabletSizes = {}
    for report in reports:
        for key, size in report.items():
            if size > out.get(key, -1):
                out[key] = size
    return out
