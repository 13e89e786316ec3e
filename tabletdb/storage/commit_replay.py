"""Replaying the node's commit log at start, and what a damaged log does to the start.

The log (``node_commit`` writes it) holds two kinds of record, msgpack lists:
``[WRITE, [[store name, [packed rows of one writer, ...]], ...]]`` for a tick's writes and
``[REMOVE, name]`` before the data at ``name`` (a file or a directory) is removed or replaced,
``[REMOVE_RANGES, name, [[start, end], ...]]`` before the partitions of those token ranges are
deleted from the file at ``name`` (cleanup of ranges the node no longer owns; replayed in order,
so the rows written before it are deleted again and those written after it stay).
Every write record not followed by a removal of its path is applied again to its store if the
file exists; that is harmless for what the stores already have, because every upsert is
last-write-wins (counters are stored as totals, each built by one Paxos round, so they too).

Reading the log tells a torn tail from corruption (``commit_records``). A torn tail is dropped
(an append cut short at INFO, a whole last record failing its checksum at WARNING). Corruption
(bad bytes followed by valid records: acknowledged writes lost) stops the start with
``CommitLogCorrupt``, which names the file, the offset and what to do, and the file is not
touched. With ``skip_corrupt`` (the ``commitlog_skip_corrupt_records`` setting) the log is first
copied beside itself (``commit.log.corrupt-<UTC time>``, synced) as evidence, the damaged
stretches are reported at ERROR and skipped, and every valid record, those after them included,
is replayed.

A data file found damaged while replaying (``TabletCorrupt``) gets none of its writes: it is left
as it is, for the storage service to set aside when it opens it, and its replica is then
re-copied from the other replicas, which hold those writes too.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import msgpack

from tabletdb.dht.token import TokenRange
from tabletdb.storage.commit_log import CommitLog
from tabletdb.storage.commit_records import CommitLogCorrupt, LogContents, Stretch
from tabletdb.storage.fsync import fsync_path
from tabletdb.storage.tablet_store import StorageError, TabletCorrupt, TabletStore

log = logging.getLogger(__name__)

WRITE = "w"
REMOVE = "r"
REMOVE_RANGES = "x"

REPLAY_BATCH = 4096
"""Replayed writes per transaction: a log of 64 MiB holds a few hundred thousand."""


def replay(commit_log: CommitLog, root: Path, *, skip_corrupt: bool = False) -> int:
    """Apply the log's write records to their stores again and sync them; how many were replayed.

    Run once at start, before any store is opened; the caller empties the log afterwards. Rows
    logged before a removal of their path are skipped, and so are files that no longer exist
    (their table was dropped or truncated). Store names are relative to ``root`` unless absolute.
    """
    contents = commit_log.read()
    if contents.corrupt:
        if not skip_corrupt:
            raise CommitLogCorrupt(commit_log.path, contents)
        _report_skipped(commit_log.path, contents, _keep_copy(commit_log.path))
    if contents.torn_tail is not None:
        _report_torn_tail(commit_log.path, contents.torn_tail)
    records = [msgpack.unpackb(payload) for payload in contents.records]
    removals = [(i, record[1]) for i, record in enumerate(records) if record[0] == REMOVE]
    stores: dict[Path, TabletStore] = {}
    damaged: set[Path] = set()
    count = 0
    try:
        for i, record in enumerate(records):
            if record[0] == REMOVE_RANGES:
                _replay_range_removal(stores, damaged, root / record[1], record[2])
                continue
            if record[0] != WRITE:
                continue
            count += 1
            for name, writers in record[1]:
                if any(j > i and _under(name, prefix) for j, prefix in removals):
                    continue
                path = root / name
                if path in damaged:
                    continue
                if path not in stores:
                    if not path.exists():
                        continue
                    try:
                        stores[path] = TabletStore(path)
                    except TabletCorrupt as exc:
                        damaged.add(path)
                        log.warning(
                            "commit log replay skips a damaged data file (set aside when opened): %s", exc
                        )
                        continue
                store = stores[path]
                for blob in writers:  # in large transactions, as deferred rows are written
                    store.defer_rows(tuple(msgpack.unpackb(blob)))
                if store.deferred_count >= REPLAY_BATCH:
                    _write_replayed(store)
        for store in stores.values():
            _write_replayed(store)
            store.sync_to_disk()
    finally:
        for store in stores.values():
            store.close()
    if count:
        log.info("commit log replayed records=%d stores=%d", count, len(stores))
    return count


def _replay_range_removal(
    stores: dict[Path, TabletStore], damaged: set[Path], path: Path, ranges: list[list[int]]
) -> None:
    """Delete the ranges again, after the rows replayed so far (which they may hold)."""
    if path in damaged or not path.exists():
        return
    store = stores.get(path)
    if store is None:
        try:
            store = stores[path] = TabletStore(path)
        except TabletCorrupt:
            damaged.add(path)
            return
    _write_replayed(store)
    store.delete_token_ranges([TokenRange(start, end) for start, end in ranges])


def _keep_copy(path: Path) -> Path:
    """Copy the damaged log beside itself, durably, before the replay empties it."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    copy = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while copy.exists():
        copy = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    shutil.copyfile(path, copy)
    fsync_path(copy)
    fsync_path(path.parent)
    return copy


def _report_skipped(path: Path, contents: LogContents, copy: Path) -> None:
    exact = all(stretch.one_record for stretch in contents.corrupt)
    lost = len(contents.corrupt)
    records = f"{lost} record(s)" if exact else f"at least {lost} record(s) (a damaged header hides how many)"
    where = "; ".join(_describe(stretch) for stretch in contents.corrupt)
    log.error(
        "commit log %s is corrupt; skipping %s, %d bytes, as commitlog_skip_corrupt_records allows: "
        "the writes in them are lost on this node; replaying the %d valid records; a copy of the "
        "damaged log is kept at %s; damage: %s",
        path,
        records,
        contents.corrupt_bytes,
        len(contents.records),
        copy,
        where,
    )


def _describe(stretch: Stretch) -> str:
    return f"bytes {stretch.offset}-{stretch.end}: {stretch.found}"


def _report_torn_tail(path: Path, tail: Stretch) -> None:
    if tail.whole:  # a power loss can leave this; so could damage to the last record
        log.warning(
            "commit log %s: the last record (byte offset %d) is whole but fails its checksum; dropped as "
            "an append torn by a power loss: %s",
            path,
            tail.offset,
            tail.found,
        )
    else:
        log.info(
            "commit log %s: dropped a torn tail of %d bytes at byte offset %d", path, tail.size, tail.offset
        )


def _write_replayed(store: TabletStore) -> None:
    try:
        store.write_deferred()  # a write failing alone is dropped and logged there
    except TabletCorrupt as exc:  # set aside when the node opens it, then repaired from replicas
        log.warning("commit log replay: %s; its replayed writes are dropped here", exc)
        store.discard_deferred()
    except StorageError:  # the file refuses every write: what the replay can do is report it
        log.exception("commit log replay: writes to %s failed again; they are lost", store.path)
        store.discard_deferred()


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix.rstrip("/") + "/")
