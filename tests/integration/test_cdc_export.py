"""``tabletdb cdc export`` against a real node and a local Spark (issue 16 item 7).

Every log row ends up in the Parquet output exactly once: across passes, after a pass that was
killed (its staging directory is dropped and the pass redone), and — with the real command —
after ``kill -9`` and a rerun.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.harness.node import TestNode

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
Key = tuple[bytes, Any, int]
"""(cdc$stream_id, cdc$time, cdc$batch_seq_no): a log row's primary key."""


def _log_keys(session: Any, table: str) -> list[Key]:
    rows = session.execute(
        f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM {table}_scylla_cdc_log'
    )
    return sorted((r[0], r[1], r[2]) for r in rows)


def _exported(spark: Any, out: Path) -> list[Key]:
    import uuid

    passes = sorted(str(p) for p in out.glob("pass-*"))
    if not passes:
        return []
    rows = spark.read.parquet(*passes).select("cdc$stream_id", "cdc$time", "cdc$batch_seq_no").collect()
    return sorted((bytes(r[0]), uuid.UUID(r[1]), r[2]) for r in rows)


def _options(node: TestNode, table: str, out: Path) -> Any:
    from tabletdb.spark.cdc_export import ExportOptions
    from tabletdb.spark.connection import ConnectOptions

    keyspace, _, name = table.partition(".")
    return ExportOptions(ConnectOptions((node.host,), node.port), keyspace, name, out, tasks=3)


@pytest.mark.parametrize("tablets", ["{'initial': 4}", "{'enabled': false}"])
def test_passes_export_every_row_once(
    node: TestNode, session: Any, spark: Any, tmp_path: Path, tablets: str
) -> None:
    from tabletdb.spark.cdc_export import run_pass
    from tabletdb.spark.cdc_plan import SAFETY_US

    ks = "cdce_t" if "initial" in tablets else "cdce_v"
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = {NTS_1} AND tablets = {tablets}")
    session.execute(
        f"CREATE TABLE {ks}.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH cdc = {{'enabled': true}}"
    )
    insert = session.prepare(f"INSERT INTO {ks}.t (k, c, v) VALUES (?, ?, ?)")
    for k in range(30):
        session.execute(insert, (k, k % 4, f"v{k}"))
    session.execute(f"DELETE FROM {ks}.t WHERE k = 3")
    out = tmp_path / "export"
    opts = _options(node, f"{ks}.t", out)

    first = run_pass(spark, opts, now=time.time_ns() // 1000 + SAFETY_US + 1_000_000)
    assert first is not None and first.rows == 31
    assert _exported(spark, out) == _log_keys(session, f"{ks}.t")
    columns = set(spark.read.parquet(str(first.path)).columns)
    assert {"cdc$operation", "cdc$time", "cdc$stream_id", "k", "c", "v", "cdc$deleted_v"} <= columns

    for k in range(30, 45):
        session.execute(insert, (k, 0, "later"))
    (out / ".staging-1-2-999").mkdir()  # what a pass killed mid-write leaves: dropped, redone
    (out / ".staging-1-2-999" / "part-0.parquet").write_bytes(b"torn")
    second = run_pass(spark, opts, now=time.time_ns() // 1000 + SAFETY_US + 1_000_000)
    assert second is not None and second.lower == first.upper and second.rows == 15
    assert not list(out.glob(".staging-*"))
    assert _exported(spark, out) == _log_keys(session, f"{ks}.t")  # each row once across the passes
    session.execute(f"DROP KEYSPACE {ks}")


def test_a_table_without_a_log_is_refused(node: TestNode, session: Any, spark: Any, tmp_path: Path) -> None:
    from tabletdb.spark.cdc_export import ExportError, run_pass
    from tabletdb.spark.cdc_plan import SAFETY_US

    session.execute(f"CREATE KEYSPACE IF NOT EXISTS cdce_n WITH replication = {NTS_1}")
    session.execute("CREATE TABLE IF NOT EXISTS cdce_n.plain (k int PRIMARY KEY)")
    with pytest.raises(ExportError, match="has no CDC log table"):
        run_pass(
            spark, _options(node, "cdce_n.plain", tmp_path / "x"), now=time.time_ns() // 1000 + SAFETY_US * 2
        )


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_export_killed_and_rerun_has_every_row_once(
    node: TestNode, session: Any, spark: Any, tmp_path: Path
) -> None:
    """The real command with --follow, killed -9 while it runs, then run again to completion."""
    session.execute(f"CREATE KEYSPACE cdce_k WITH replication = {NTS_1} AND tablets = {{'initial': 4}}")
    session.execute("CREATE TABLE cdce_k.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    insert = session.prepare("INSERT INTO cdce_k.t (k, v) VALUES (?, ?)")
    out = tmp_path / "export"
    command = [sys.executable, "-m", "tabletdb.cli.main", "cdc", "export", "--hosts", node.host]
    command += ["--port", str(node.port), "--table", "cdce_k.t", "--to", str(out), "--master", "local[2]"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    output = (tmp_path / "follower.log").open("w")
    follower = subprocess.Popen([*command, "--follow", "--every", "1"], env=env, stdout=output, stderr=output)
    try:
        for k in range(60):
            session.execute(insert, (k, k))
            time.sleep(0.2)
        deadline = time.monotonic() + 300
        while not list(out.glob("pass-*")) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert list(out.glob("pass-*")), (
            "no pass committed:\n" + (tmp_path / "follower.log").read_text()[-3000:]
        )
    finally:
        follower.send_signal(signal.SIGKILL)
        follower.wait()
    time.sleep(11)  # every row older than the export's 10 s safety lag
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert _exported(spark, out) == _log_keys(session, "cdce_k.t")
    session.execute("DROP KEYSPACE cdce_k")


@pytest.mark.slow  # the command starts its own Spark: tens of seconds on a quiet machine
@pytest.mark.timeout(900)
def test_the_command_off_a_terminal_prints_only_its_summary(
    node: TestNode, session: Any, tmp_path: Path
) -> None:
    """Piped (no terminal), `tabletdb cdc export` draws no progress: stdout is the pass's summary
    line, stderr holds no progress line; and the Parquet it wrote replays into the base table."""
    from tests.integration.test_cdc_replay import parquet_log_rows

    session.execute(f"CREATE KEYSPACE cdce_p WITH replication = {NTS_1} AND tablets = {{'initial': 2}}")
    session.execute("CREATE TABLE cdce_p.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    for k in range(5):
        session.execute("INSERT INTO cdce_p.t (k, v) VALUES (%s, %s)", (k, k * 10))
    session.execute("DELETE FROM cdce_p.t WHERE k = 1")
    time.sleep(11)  # past the export's 10 s safety lag
    out = tmp_path / "export"
    command = [sys.executable, "-m", "tabletdb.cli.main", "cdc", "export", "--hosts", node.host]
    command += ["--port", str(node.port), "--table", "cdce_p.t", "--to", str(out), "--master", "local[1]"]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    (summary,) = done.stdout.splitlines()
    assert summary.startswith("exported 6 log rows of 2 streams, cdc$time in [0, ")
    assert "streams" not in done.stderr and "\x1b[" not in done.stderr, done.stderr

    (path,) = out.glob("pass-*")
    rows = sorted(parquet_log_rows(path), key=lambda r: (r.cdc_time.time, r.cdc_batch_seq_no))
    twin: dict[int, int] = {}
    for row in rows:  # replayed as a consumer would: inserts put the row, partition deletes drop it
        if row.cdc_operation == 2:
            twin[row.k] = row.v
        elif row.cdc_operation == 4:
            twin.pop(row.k, None)
    assert twin == {r.k: r.v for r in session.execute("SELECT k, v FROM cdce_p.t")}
    session.execute("DROP KEYSPACE cdce_p")
