"""Benchmark: what ``PRAGMA quick_check`` costs when a tablet file is opened, per MB.

Builds one real tablet file (``TabletStore.apply``: 100-byte keys and values, one cell per row)
of about ``--mb`` megabytes, then times, in the same run and on the same warm page cache:
``quick_check`` and ``integrity_check`` (what a check on open would cost), and as the baseline a
full read of every cell through SQLite (``SELECT sum(length(value)) FROM cells``: what the same
bytes cost to look at once). ``TabletStore`` opens files up to ``QUICK_CHECK_MAX_BYTES`` with the
check (``storage.tablet_store``); the figures are what that limit was chosen from. Run it on a
quiet machine: on a shared one the absolute numbers are noise, the ratios less so.
Reproduce: `.venv/bin/python -m bench.bench_quick_check [--mb 100] [--repeat 3]`.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import RESULT_PREFIX
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.tablet_store import QUICK_CHECK_MAX_BYTES, TabletStore

BATCH = 5_000


def _build(path: Path, megabytes: int) -> int:
    """Fill ``path`` to about ``megabytes``; the file's size in bytes."""
    rows = megabytes * 1_000_000 // 330  # key, clustering, value, indexes: about 330 bytes a row
    with TabletStore(path) as store:
        for start in range(0, rows, BATCH):
            store.apply(
                Mutation(
                    os.urandom(16),
                    int.from_bytes(os.urandom(8), "big", signed=True),
                    rows=(
                        RowWrite(os.urandom(16), marker=RowMarker(1), cells=(Cell("v", os.urandom(100), 1),)),
                    ),
                )
                for _ in range(start, min(rows, start + BATCH))
            )
        store._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def _best(repeat: int, work: Callable[[sqlite3.Connection], object], path: Path) -> float:
    best = float("inf")
    for _ in range(repeat):
        conn = sqlite3.connect(path)
        try:
            started = time.perf_counter()
            work(conn)
            best = min(best, time.perf_counter() - started)
        finally:
            conn.close()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tablet-0.db"
        size = _build(path, args.mb)
        mb = size / 1e6
        scan = _best(
            args.repeat, lambda c: c.execute("SELECT sum(length(value)) FROM cells").fetchone(), path
        )
        quick = _best(args.repeat, lambda c: c.execute("PRAGMA quick_check").fetchone(), path)
        full = _best(args.repeat, lambda c: c.execute("PRAGMA integrity_check").fetchone(), path)
    report = {
        "file_mb": round(mb, 1),
        "baseline_full_read_s": round(scan, 3),
        "quick_check_s": round(quick, 3),
        "integrity_check_s": round(full, 3),
        "quick_check_ms_per_mb": round(quick * 1000 / mb, 2),
        "quick_check_vs_full_read": round(quick / scan, 2),
        "quick_check_at_open_limit_mb": QUICK_CHECK_MAX_BYTES / 1e6,
        "quick_check_at_limit_s": round(quick / mb * QUICK_CHECK_MAX_BYTES / 1e6, 3),
    }
    print(
        f"{mb:.0f} MB tablet file: full read through SQLite {scan:.3f} s (baseline); quick_check "
        f"{quick:.3f} s ({quick * 1000 / mb:.2f} ms/MB, {quick / scan:.2f}x the read); integrity_check "
        f"{full:.3f} s; at the open-time limit of {QUICK_CHECK_MAX_BYTES / 1e6:.0f} MB quick_check "
        f"would take about {report['quick_check_at_limit_s']} s"
    )
    print(RESULT_PREFIX + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
