"""The start-up sweep of tablet files that no tablet map places on this node.

A node that dies in the middle of a migration keeps what it had then: the target of a move that
was rolled back meanwhile keeps its partial copy (the coordinator cleans only live targets up, and
nothing reads the copy), an old replica whose move finished keeps its file (cleanup skips a dead
node). Once the
node has caught up with group0 it deletes every such file, one INFO line each.

A file is kept when the current map places the tablet on this node and shard: as a replica, or as
a new replica of a transition in flight (an intranode move has a file in both shards); and when it
is the file the node serves the tablet from in another shard (``StorageService.resident_shard``:
an intranode move rolled back after its rename leaves the only copy where it was going). Only the
map's current generation is judged here: while a resize is being prepared its next generation's
files are the resize's, and files of any other generation are removed by the resize's own sweep
(``replica.resize_files.StaleFiles``, which names them), so neither is touched.

``leftovers`` is pure (names and a map); ``sweep_leftovers`` removes through the storage service.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tabletdb.replica.resize_files import generation_of
from tabletdb.replica.storage_service import StorageService, table_directory
from tabletdb.schema.model import TableDef
from tabletdb.tablets.tablet_map import TabletMap

log = logging.getLogger(__name__)

_SHARD = re.compile(r"^shard-(\d+)$")


@dataclass(frozen=True)
class Leftover:
    """A tablet file no map places here."""

    path: Path
    tablet_id: int
    shard: int


def placed(tablet_map: TabletMap, host: uuid.UUID) -> frozenset[tuple[int, int]]:
    """(shard, tablet id) of every replica the map places on ``host``, new replicas of a
    transition in flight included."""
    out: set[tuple[int, int]] = set()
    for tablet_id, info in enumerate(tablet_map.tablets):
        for replica in (*info.replicas, *(info.new_replicas or ())):
            if replica.host == host:
                out.add((replica.shard, tablet_id))
    return frozenset(out)


def leftovers(files: Iterable[Path], tablet_map: TabletMap, host: uuid.UUID) -> list[Leftover]:
    """The files among ``files`` (tablet files of one table, ``shard-N/tablet-*.db``) of the map's
    current generation that it does not place on ``host``; other files are left alone."""
    here = placed(tablet_map, host)
    current: list[Leftover] = []
    for path in sorted(files):
        named = generation_of(path)
        shard = _SHARD.match(path.parent.name)
        if named is None or shard is None:
            continue
        tablet_id, generation = named
        if generation == tablet_map.resize_seq_number:
            current.append(Leftover(path, tablet_id, int(shard.group(1))))
    present = {(f.shard, f.tablet_id) for f in current}
    unplaced = [f for f in current if (f.shard, f.tablet_id) not in here]
    return [f for f in unplaced if not _resident(f, unplaced, here, present)]


def _resident(
    file: Leftover, unplaced: list[Leftover], here: frozenset[tuple[int, int]], present: set[tuple[int, int]]
) -> bool:
    """The file the node serves the tablet from although the map names another shard: the
    rule of ``StorageService.resident_shard`` (an intranode move rolled back after its rename
    leaves the only copy in the shard it was going to; the map's shard has no file and this is
    the one other file of the tablet). Deleting it would lose the replica."""
    map_shards = [shard for shard, tablet_id in here if tablet_id == file.tablet_id]
    if not map_shards or any((shard, file.tablet_id) in present for shard in map_shards):
        return False
    return sum(1 for other in unplaced if other.tablet_id == file.tablet_id) == 1


def sweep_leftovers(storage: StorageService, tables: Iterable[TableDef]) -> list[Path]:
    """Remove this node's tablet files that no current map places here; the files removed.

    Synchronous on purpose: maps change only when group0 applies an entry, on the event loop, so
    each table's files are judged and removed against one map. A file whose store is busy (a
    write to it in flight, which the map would have refused) is kept and logged."""
    removed: list[Path] = []
    maps = storage.tablet_maps()
    for table in tables:
        tablet_map = maps.get(table.id)
        if tablet_map is None:
            continue
        files = table_directory(storage.data_dir, table).glob("shard-*/tablet-*.db")
        for found in leftovers(files, tablet_map, storage.host_id):
            outcome = storage.remove_file(found.path)
            if outcome is None:
                log.warning("leftover tablet file kept: its store is busy file=%s", found.path)
                continue
            removed.append(found.path)
            log.info(
                "removed leftover tablet file no tablet map places here table=%s.%s tablet=%d shard=%d "
                "file=%s",
                table.keyspace,
                table.name,
                found.tablet_id,
                found.shard,
                found.path,
            )
    return removed
