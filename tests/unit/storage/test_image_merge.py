"""The set-based merge of a whole tablet file (``TabletStore.merge_image``).

It must leave the target exactly as applying the image's mutations one by one would (every
table's rows equal, so reads, tombstones and write times agree), take only the token ranges it
is told to, and be atomic across a real crash: a process killed -9 in the middle of the merge
leaves the target as it was, and the merge run again completes it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from tablet_store_strategies import SETTINGS, all_reads, mutations

from tabletdb.dht import token_of
from tabletdb.dht.token import TokenRange
from tabletdb.storage.mutation import Cell, Mutation, RowMarker, RowWrite
from tabletdb.storage.sqlite_schema import DATA_TABLES
from tabletdb.storage.tablet_store import TabletStore

REPO = Path(__file__).resolve().parents[3]


def _contents(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(path)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t, _, _ in DATA_TABLES}
    finally:
        conn.close()


def _image(path: Path, muts: list[Mutation]) -> Path:
    with TabletStore(path) as image:
        image.apply(muts)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")  # a snapshot or load file is one self-contained file
    conn.close()
    return path


@SETTINGS
@given(st.lists(mutations(), max_size=6), st.lists(mutations(), max_size=6))
def test_merge_equals_applying_the_mutations(
    tmp_path_factory: object, before: list[Mutation], image: list[Mutation]
) -> None:
    tmp = tmp_path_factory.mktemp("merge")  # type: ignore[attr-defined]
    source = _image(tmp / "image.db", image)
    merged, applied = TabletStore(tmp / "merged.db"), TabletStore(tmp / "applied.db")
    try:
        for store in (merged, applied):
            store.apply(before)
        assert merged.merge_image(source) == len({m.partition_key for m in image})
        applied.apply(image)
        assert all_reads(merged) == all_reads(applied)
    finally:
        merged.close()
        applied.close()
    assert _contents(merged.path) == _contents(applied.path)


def _row(pk: bytes, ts: int, value: bytes) -> Mutation:
    return Mutation(
        pk, token_of(pk), rows=(RowWrite(b"", marker=RowMarker(ts), cells=(Cell("v", value, ts),)),)
    )


def test_merge_takes_only_the_named_ranges(tmp_path: Path) -> None:
    keys = [f"k{i}".encode() for i in range(200)]
    source = _image(tmp_path / "image.db", [_row(k, 5, b"x") for k in keys])
    pieces = [TokenRange(-(1 << 62), 0), TokenRange(1 << 62, -(1 << 62))]  # the second wraps
    wanted = {k for k in keys if any(p.contains(token_of(k)) for p in pieces)}
    assert 0 < len(wanted) < len(keys)
    with TabletStore(tmp_path / "target.db") as store:
        assert store.merge_image(source, pieces) == len(wanted)
        taken = {pk for (pk,) in store._conn.execute("SELECT pk FROM partitions")}
        assert taken == wanted
        assert store.merge_image(source, [TokenRange(0, 1)]) == 0


def test_last_write_wins_both_ways(tmp_path: Path) -> None:
    source = _image(tmp_path / "image.db", [_row(b"old", 5, b"image"), _row(b"new", 5, b"image")])
    with TabletStore(tmp_path / "target.db") as store:
        store.apply([_row(b"old", 1, b"target"), _row(b"new", 9, b"target")])
        store.merge_image(source)
        assert store.read_row_cells(b"old", 0) == {"v": b"image"}
        assert store.read_row_cells(b"new", 0) == {"v": b"target"}


_KILLED_MERGE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from tabletdb.storage.tablet_store import TabletStore

    store = TabletStore(Path(sys.argv[1]))
    calls = 0

    def progress():
        global calls
        calls += 1
        if calls == int(sys.argv[3]):
            os.kill(os.getpid(), signal.SIGKILL)  # a crash in the middle of the merge
        return 0

    store._writer.set_progress_handler(progress, 1000)
    store.merge_image(Path(sys.argv[2]))
    print("merged")
    """
)


def test_a_merge_killed_midway_leaves_nothing_and_a_rerun_merges_all(tmp_path: Path) -> None:
    keys = [f"key-{i}".encode() for i in range(3000)]
    source = _image(tmp_path / "image.db", [_row(k, 7, b"v" * 40) for k in keys])
    target = tmp_path / "target.db"
    with TabletStore(target) as store:
        store.apply([_row(b"already", 1, b"here")])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for kill_at in (3, 60):
        done = subprocess.run(
            [sys.executable, "-c", _KILLED_MERGE, str(target), str(source), str(kill_at)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
        with TabletStore(target) as store:  # recovery: the torn transaction is rolled back
            assert store._conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
            assert store._conn.execute("SELECT count(*) FROM partitions").fetchone() == (1,)
            assert store._conn.execute("SELECT count(*) FROM cells").fetchone() == (1,)
    with TabletStore(target) as store:
        assert store.merge_image(source) == len(keys)
    with TabletStore(target) as store:
        assert store._conn.execute("SELECT count(*) FROM partitions").fetchone() == (len(keys) + 1,)
        assert store.read_row_cells(b"key-2999", 0) == {"v": b"v" * 40}
