"""``tabletdb cdc export --follow`` across a CDC generation change (issue 16 item 7).

A vnode CDC table on one node; the real command follows it while rows are written, a second
node joins (a new generation, new streams) and more rows are written into the new streams. The
passes committed until the export is interrupted hold every log row exactly once, from both
generations: each pass re-reads the generations, so streams born after the export started are
read too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tabletdb.spark.cdc_plan import committed_upto, micros_of
from tests.harness.node import NodeFactory
from tests.integration.test_replicated_data import OPTIONS, pinned, run, wait_for

Key = tuple[bytes, uuid.UUID, int]
"""(cdc$stream_id, cdc$time, cdc$batch_seq_no): a log row's primary key."""


def _committed_upto(out: Path) -> int:
    """Where the committed passes end (µs; 0 before any), read from their directory names."""
    return committed_upto((p.name for p in out.glob("pass-*")), 0)


def _exported(out: Path) -> list[Key]:
    import pyarrow.parquet as pq

    keys: list[Key] = []
    for path in out.glob("pass-*"):
        if not list(path.glob("*.parquet")):
            continue  # a pass with no rows
        for row in pq.read_table(
            str(path), columns=["cdc$stream_id", "cdc$time", "cdc$batch_seq_no"]
        ).to_pylist():
            keys.append((bytes(row["cdc$stream_id"]), uuid.UUID(row["cdc$time"]), row["cdc$batch_seq_no"]))
    return sorted(keys)


def _streams(session: Any, generation: Any) -> set[bytes]:
    rows = run(
        session,
        "SELECT streams FROM system_distributed.cdc_streams_descriptions_v2 WHERE time = %s",
        "ONE",
        (generation,),
    )
    return {bytes(s) for r in rows for s in r.streams}


def _write(session: Any, keys: range) -> None:
    for k in keys:
        run(session, "INSERT INTO vf.t (k, c, v) VALUES (%s, %s, %s)", "ONE", (k, k % 3, f"v{k}"))


def _wait_for_pass_past(out: Path, micros: int, follower: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 900  # passes lag the clock by 10 s; Spark is slow on a busy box
    while _committed_upto(out) <= micros and time.monotonic() < deadline:
        assert follower.poll() is None, "the export stopped:\n" + log_path.read_text()[-3000:]
        time.sleep(0.2)
    assert _committed_upto(out) > micros, "no pass past the writes:\n" + log_path.read_text()[-3000:]


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_follow_exports_every_row_once_across_a_new_generation(
    node_factory: NodeFactory, tmp_path: Path
) -> None:
    first = node_factory.start_node(options=OPTIONS)
    with pinned(first) as s0:
        run(
            s0,
            "CREATE KEYSPACE vf WITH replication = {'class': 'NetworkTopologyStrategy', "
            "'replication_factor': 1} AND tablets = {'enabled': false}",
            "ONE",
        )
        run(
            s0,
            "CREATE TABLE vf.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH cdc = {'enabled': true}",
            "ONE",
        )
        (gen0,) = [
            r.time for r in run(s0, "SELECT time FROM system_distributed.cdc_generation_timestamps", "ONE")
        ]
    out = tmp_path / "export"
    command = [sys.executable, "-m", "tabletdb.cli.main", "cdc", "export", "--hosts", first.host]
    command += ["--port", str(first.port), "--table", "vf.t", "--to", str(out), "--master", "local[1]"]
    command += ["--tasks", "2", "--follow", "--every", "2"]
    log_path = tmp_path / "follower.log"
    with log_path.open("w") as output:
        follower = subprocess.Popen(
            command, env={**os.environ, "PYTHONPATH": os.getcwd()}, stdout=output, stderr=output
        )
    try:
        with pinned(first) as s0:
            _write(s0, range(0, 30))
        first_writes = time.time_ns() // 1000
        # a pass committed under the first generation before the ring grows: the later rows can
        # only reach the export if it keeps following (Spark's start on a busy box could otherwise
        # let one first pass cover both generations)
        _wait_for_pass_past(out, first_writes, follower, log_path)
        second = node_factory.start_node(seeds=[first.host], options=OPTIONS)
        with pinned(second) as s1:

            def generations() -> list[Any]:
                return [
                    r.time
                    for r in run(s1, "SELECT time FROM system_distributed.cdc_generation_timestamps", "ONE")
                ]

            wait_for(lambda: len(generations()) == 2, "a generation for the grown ring")
            gen1 = max(generations())
            assert gen1 > gen0
            wait_for(lambda: time.time() > gen1.timestamp() + 1, "the new generation to operate")
            _write(s1, range(100, 130))
            last_write = time.time_ns() // 1000
            logged = sorted(
                (bytes(r.cdc_stream_id), r.cdc_time, r.cdc_batch_seq_no)
                for r in run(
                    s1,
                    'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM vf.t_scylla_cdc_log',
                    "ONE",
                    fetch_size=17,
                )
            )
            old_streams, new_streams = _streams(s1, gen0), _streams(s1, gen1)
        assert len(logged) == 60
        assert any(stream in new_streams for stream, _, _ in logged), "no write landed on the new streams"

        _wait_for_pass_past(out, last_write, follower, log_path)
        follower.send_signal(signal.SIGINT)
        code = follower.wait(timeout=300)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    text = log_path.read_text()
    assert code == 0, text[-3000:]  # interrupted between passes: documented as 0
    assert "interrupted: the next run resumes after the last committed pass" in text
    exported = _exported(out)
    assert exported == logged  # every log row, each once
    gen1_us = int(gen1.timestamp() * 1000) * 1000
    assert any(s in old_streams and micros_of(t) < gen1_us for s, t, _ in exported)
    assert any(s in new_streams and micros_of(t) >= gen1_us for s, t, _ in exported)
    assert len(list(out.glob("pass-*"))) >= 2  # the export kept polling: more than one pass
