"""Benchmark: a tablet split's copy throughput on one replica beside `cp` of the same bytes (issue 15).

One replica's real stores (``StorageService`` with the node-wide commit log, as a node runs them),
one tablet of `--mb` MB of 4 KiB values. The map is prepared for a split and
``replica.resize_files.copy_into_next`` copies the tablet file into its two halves (online-backup
snapshot, then ATTACH + ``INSERT ... SELECT`` by token range into each half, one synced
transaction per half) - the part of a split that grows with the data; the group0 steps around it
are a few small commands whatever the size.

Figures, all from the same run:
* `split_MBps`: the tablet file's bytes (`.db` + `-wal`) over the copy's wall time;
* `cp_MBps` / `cp_fsync_MBps`: `cp` of the same file to another on the same filesystem, without
  and with an fsync of the copy;
* `split_vs_cp`: split_MBps / cp_fsync_MBps (a split writes every byte twice: snapshot and halves);
* `halves_MB`: the two new files' bytes (SQLite pages rebuilt in key order can be smaller).
Run on a quiet machine; figures measured under load are noise.

Reproduce: `PYTHONPATH=. .venv/bin/python -m bench.bench_split [--mb 64]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from bench.common import RESULT_PREFIX
from tabletdb.dht.murmur3 import token_of
from tabletdb.replica.load_stats import stat_bytes
from tabletdb.replica.resize_files import copy_into_next
from tabletdb.replica.storage_service import StorageService, tablet_file
from tabletdb.schema.model import TableDef
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.tablets.count import ResizeState
from tabletdb.tablets.tablet_map import TabletMap, TabletReplica
from tests.unit.coordinator.replica_cluster import table_def

MB = 1024 * 1024
VALUE = 4096
HOST = uuid.UUID(int=1)


async def _fill(storage: StorageService, table: TableDef, megabytes: int) -> None:
    value = os.urandom(VALUE)
    batch = []
    for i in range(megabytes * MB // VALUE):
        key = b"key%d" % i
        ts = 1_000_000 + i
        batch.append(
            Mutation(
                key,
                token_of(key),
                rows=(RowWrite(b"c", marker=RowMarker(ts), cells=(Cell("v", value, ts),)),),
            )
        )
        if len(batch) == 256:
            await asyncio.gather(*(storage.committer(table, m.token).apply([m]) for m in batch))
            batch = []
    await asyncio.gather(*(storage.committer(table, m.token).apply([m]) for m in batch))
    storage.write_deferred()


def _cp(source: Path, target: Path, fsync: bool) -> float:
    started = time.monotonic()
    subprocess.run(["cp", str(source), str(target)], check=True)
    if fsync:
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    elapsed = time.monotonic() - started
    target.unlink()
    return elapsed


async def _run(megabytes: int, workdir: Path) -> dict[str, object]:
    table = table_def()
    me = TabletReplica(HOST, 0)
    maps = {table.id: TabletMap.even(table.id, [[me]])}
    storage = StorageService(workdir / "data", HOST, 1, 12, lambda: maps)
    try:
        await _fill(storage, table, megabytes)
        source = tablet_file(storage.data_dir, table, 0, 0)
        size = stat_bytes(source)
        cp_s = _cp(source, workdir / "cp.db", fsync=False)
        cp_fsync_s = _cp(source, workdir / "cp.db", fsync=True)
        maps[table.id] = replace(maps[table.id], resize=ResizeState.SPLIT)
        started = time.monotonic()
        partitions = await copy_into_next(storage, table, 0, ResizeState.SPLIT)
        split_s = time.monotonic() - started
        halves = sum(stat_bytes(tablet_file(storage.data_dir, table, 0, i, 1)) for i in (0, 1))
    finally:
        storage.close()
    return {
        "mb": megabytes,
        "file_MB": round(size / MB, 1),
        "partitions": partitions,
        "split_s": round(split_s, 3),
        "split_MBps": round(size / MB / split_s, 1),
        "cp_MBps": round(size / MB / cp_s, 1),
        "cp_fsync_MBps": round(size / MB / cp_fsync_s, 1),
        "split_vs_cp": round(cp_fsync_s / split_s, 3),
        "halves_MB": round(halves / MB, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="tablet size to split, MB of values")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_split-"))
    try:
        result = asyncio.run(_run(args.mb, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(RESULT_PREFIX + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
