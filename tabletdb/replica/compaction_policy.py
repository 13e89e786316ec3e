"""When a tablet file is compacted, and which tombstones compaction may drop: pure.

A tablet file keeps one version per cell (last write wins inside SQLite), so compaction here is
what ScyllaDB calls a single-SSTable tombstone compaction: drop data that tombstones shadow and,
past the table's tombstone GC horizon, the tombstones themselves (``storage.compaction``).

**The GC horizon** (``gc_before_ts``) follows the table's ``tombstone_gc`` mode, ScyllaDB's:

* ``timeout``: tombstones written more than ``gc_grace_seconds`` ago;
* ``immediate``: every tombstone (ScyllaDB's "timeout with a grace of 0");
* ``disabled``: none;
* ``repair`` (the default, as ScyllaDB's for tablet keyspaces): tombstones older than the last
  repair of their range. This node keeps no repair history (tabletdb has no anti-entropy
  repair), so no tombstone qualifies: exactly what ScyllaDB does for a table never repaired.

Times are write timestamps (the store keeps no local deletion time): a tombstone written with
an old client timestamp (``USING TIMESTAMP``) is as old as its timestamp says.

**The background policy** (``choose``): a file is due when the share of its stored entries that
compaction would drop — tombstones past the horizon, plus the tombstones that arrived since its
last compaction (each shadows data or is itself garbage once old) — reaches the table's
``tombstone_threshold``, or when it holds any tombstone past the horizon and was not compacted
for ``PERIOD_S``; never twice within ``tombstone_compaction_interval``. The most garbage-laden
due file goes first, one at a time. Both settings are the table's ``compaction`` sub-options
(ScyllaDB's names), as is ``enabled: false``, which stops background compaction of the table
(``nodetool compact`` still compacts it).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from tabletdb.schema.options import TableOptions
from tabletdb.storage.compaction import Garbage

TOMBSTONE_THRESHOLD = 0.2
"""Default share of droppable entries that makes a file due (Cassandra's and ScyllaDB's default)."""

MIN_INTERVAL_S = 3600.0
"""Default ``tombstone_compaction_interval``: a file is compacted at most this often in the
background. Ours (Cassandra's is a day, for SSTables that are rewritten whole): a tablet file is
small, and a compaction touches only the partitions it holds."""

PERIOD_S = 86400.0
"""A file with any tombstone past the horizon is compacted at least this often."""


@dataclass(frozen=True, slots=True)
class TableCompaction:
    """A table's background compaction settings (its ``compaction`` option's sub-options)."""

    enabled: bool = True
    tombstone_threshold: float = TOMBSTONE_THRESHOLD
    min_interval_s: float = MIN_INTERVAL_S


def table_compaction(options: TableOptions) -> TableCompaction:
    """The settings in ``options.compaction``; values were validated when the table was defined
    (``schema.options``)."""
    given = dict(options.compaction)
    return TableCompaction(
        enabled=given.get("enabled", "true").lower() != "false",
        tombstone_threshold=float(given.get("tombstone_threshold", TOMBSTONE_THRESHOLD)),
        min_interval_s=float(given.get("tombstone_compaction_interval", MIN_INTERVAL_S)),
    )


def gc_before_ts(options: TableOptions, now_s: float) -> int | None:
    """The write timestamp (microseconds) before which the table's tombstones may be dropped,
    or None when none may (see the module docstring)."""
    mode = dict(options.tombstone_gc).get("mode", "repair")
    if mode == "timeout":
        return int((now_s - options.gc_grace_seconds) * 1_000_000)
    if mode == "immediate":
        return int(now_s * 1_000_000)
    if mode in ("disabled", "repair"):
        return None
    raise ValueError(f"tombstone_gc mode {mode!r} is not one schema.options accepts")


@dataclass(frozen=True, slots=True)
class FileState:
    """What the policy knows of one tablet file."""

    key: Hashable
    settings: TableCompaction
    garbage: Garbage | None
    """Last measurement (None: not measured yet)."""
    tombstones_after: int = 0
    """Tombstones the file still held right after its last compaction (GC not allowed or not
    yet due for them): they shadow nothing any more."""
    compacted_at: float | None = None
    """When this node last compacted it (None: not since the node started)."""


def score(file: FileState, now: float) -> float | None:
    """How due ``file`` is (its droppable share), or None if it is not due."""
    garbage = file.garbage
    if not file.settings.enabled or garbage is None or garbage.entries <= 0 or not garbage.tombstones:
        return None
    since = None if file.compacted_at is None else now - file.compacted_at
    if since is not None and since < file.settings.min_interval_s:
        return None
    fresh = max(garbage.tombstones - file.tombstones_after, 0)
    share = max(garbage.purgeable, fresh) / garbage.entries
    if share >= file.settings.tombstone_threshold:
        return share
    if garbage.purgeable and (since is None or since >= PERIOD_S):
        return share
    return None


def choose(files: Iterable[FileState], now: float) -> Hashable | None:
    """The file to compact next: the highest ``score``, or None when none is due."""
    best: tuple[float, Hashable] | None = None
    for file in files:
        value = score(file, now)
        if value is not None and (best is None or value > best[0]):
            best = (value, file.key)
    return None if best is None else best[1]
