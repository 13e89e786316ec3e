"""`tabletdb load`, `backup`, `restore` and `cdc export` on a Spark standalone cluster (issue 19).

A master and two one-core workers run from the pyspark install (tests/harness/spark_cluster.py);
every command runs as its own Spark application with `--master spark://...`, from a working
directory of its own, with relative paths and `file:` URIs. The workers run in other working
directories and have their own TMPDIR, so a location the driver did not make absolute, or a
file the driver left in its temporary directory for an executor, fails the command. Each run
must have had executors on both workers (their application directories) that ran its tasks.

Load: CSV through per-tablet files (rejects with their reasons), Parquet through CQL, every
column of every row checked. Backup and restore: a tablets and a vnode keyspace into a fresh
node, rows and DESC equal, through `file:` URIs and through an S3 bucket (moto's server).
CDC export: every log row in the Parquet output once. A 1,000,000-row load, backup and restore
is @slow.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tabletdb.spark.load import read_rejects
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode
from tests.harness.spark_cluster import SparkCluster

pytest.importorskip("pyspark")
pytestmark = pytest.mark.timeout(1800)  # each command starts a Spark application: minutes when busy

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
COLUMNS = "id int, seq int, name text, amount decimal, at timestamp, tags list<text>, PRIMARY KEY (id, seq)"
BAD_LINES = {
    "x1,1,bad id,1.5,2024-01-01T00:00:00Z,": "column id (int)",
    "7,9,bad amount,1.2.3,2024-01-01T00:00:00Z,": "column amount (decimal)",
    "9,9,too few fields": "malformed record",
}
SLOW_STEP = 3600
"""Seconds one step of the 1,000,000-row test may take: a CLI run, or a full read-back."""
Row = tuple[int, int, str, Decimal, dt.datetime, list[str] | None]


def _row(n: int) -> Row:
    at = dt.datetime(2024, 1, 1, n % 24, n % 60, n % 59, (n % 1000) * 1000)
    return (n // 3, n % 3, f"name, {n}", Decimal(f"{n}.5"), at, [f"t{n}", "u"] if n % 4 else None)


def _csv_line(n: int) -> str:
    id_, seq, name, amount, at, tags = _row(n)
    tags_text = '"' + json.dumps(tags).replace('"', '""') + '"' if tags else ""
    return f'{id_},{seq},"{name}",{amount},{at.isoformat()}Z,{tags_text}'


def _write_csv(path: Path, rows: int, bad_every: int) -> int:
    """`rows` good rows with one of BAD_LINES after every `bad_every`-th; the number of bad ones."""
    bad = list(BAD_LINES)
    written = 0
    with path.open("w") as out:
        out.write("id,seq,name,amount,at,tags\n")
        for n in range(rows):
            out.write(_csv_line(n) + "\n")
            if n % bad_every == 0:
                out.write(bad[written % len(bad)] + "\n")
                written += 1
    return written


def _write_parquet(path: Path, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = [_row(n) for n in range(rows)]
    table = pa.table(
        {
            "id": pa.array([r[0] for r in data], pa.int32()),
            "seq": pa.array([r[1] for r in data], pa.int32()),
            "name": [r[2] for r in data],
            "amount": pa.array([r[3] for r in data], pa.decimal128(12, 1)),
            "at": pa.array([r[4].replace(tzinfo=dt.UTC) for r in data], pa.timestamp("us", tz="UTC")),
            "tags": pa.array([r[5] for r in data], pa.list_(pa.string())),
        }
    )
    pq.write_table(table, path)


def _checksum(rows: Iterable[tuple[Any, ...]]) -> tuple[int, str]:
    """Count and a digest over every column of every row, independent of row order."""
    digests = sorted(hashlib.sha256(repr(row).encode()).hexdigest() for row in rows)
    return len(digests), hashlib.sha256("".join(digests).encode()).hexdigest()


def _read(db: Any, table: str) -> Iterator[Row]:
    for r in db.execute(f"SELECT id, seq, name, amount, at, tags FROM {table}", timeout=600):
        yield (r.id, r.seq, r.name, r.amount, r.at, list(r.tags) if r.tags else None)


def _expected(rows: int) -> Iterator[Row]:
    for id_, seq, name, amount, at, tags in map(_row, range(rows)):
        yield (id_, seq, name, amount, at.replace(microsecond=at.microsecond // 1000 * 1000), tags)


def _run(cluster: SparkCluster, cwd: Path, *args: str, expect: int = 0, timeout: float = 1500) -> str:
    """One tabletdb command as a Spark application on the cluster; its stdout."""
    before = {p.parent.name for p in cluster.applications()}
    done = subprocess.run(
        [sys.executable, "-m", "tabletdb.cli.main", *args, *cluster.cli_args()],
        cwd=cwd,
        env=cluster.driver_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    context = f"{done.stdout}\n{done.stderr[-4000:]}\n{cluster.executor_log_tail()}"
    assert done.returncode == expect, context
    new = {p.parent.name for p in cluster.applications()} - before
    assert len(new) == 1, f"expected one new application on the workers, got {new}\n{context}"
    app = new.pop()
    for work in cluster.worker_dirs:  # an executor on each worker...
        assert (work / app).is_dir(), f"no executor of {app} on {work}\n{context}"
    logs = [
        (e / "stderr").read_text(errors="replace") for e in cluster.applications() if e.parent.name == app
    ]
    assert any("Finished task" in log for log in logs), context  # ...that ran the tasks
    return done.stdout


def _api(node: TestNode) -> list[str]:
    return [
        "--hosts",
        node.host,
        "--port",
        str(node.port),
        "--api-endpoint",
        f"{node.host}:{node.endpoints.api_port}",
    ]


def test_load_through_files_and_through_cql(
    spark_cluster: SparkCluster, node: TestNode, tmp_path: Path
) -> None:
    good = 300
    bad = _write_csv(tmp_path / "in.csv", good, bad_every=100)
    _write_parquet(tmp_path / "in.parquet", good)
    with scylla_session(node) as db:
        db.execute(f"CREATE KEYSPACE sc WITH replication = {NTS} AND tablets = {{'initial': 4}}")
        db.execute(f"CREATE TABLE sc.files ({COLUMNS})")
        db.execute(f"CREATE TABLE sc.rows ({COLUMNS})")

        out = _run(
            spark_cluster,
            tmp_path,
            *("load", *_api(node), "--table", "sc.files", "--from", "in.csv", "--rejects", "rejects"),
            expect=3,
        )
        assert f"read {good + bad} rows: loaded {good}, rejected {bad}" in out and "via files" in out
        assert _checksum(_read(db, "sc.files")) == _checksum(_expected(good))
        rejected = list(read_rejects(str(tmp_path / "rejects")))
        assert len(rejected) == bad
        for line, reason in BAD_LINES.items():
            assert any(reason in r["reason"] and line.split(",")[2] in r["record"] for r in rejected), reason

        source = f"file:{tmp_path / 'in.parquet'}"
        out = _run(
            spark_cluster,
            tmp_path,
            *("load", *_api(node), "--table", "sc.rows", "--from", source, "--via", "cql"),
            *("--consistency", "ONE"),
        )
        assert f"read {good} rows: loaded {good}, rejected 0" in out and "via cql" in out
        assert _checksum(_read(db, "sc.rows")) == _checksum(_expected(good))


def _state(node: TestNode, keyspaces: tuple[str, ...]) -> tuple[list[str], dict[str, list[Any]]]:
    with scylla_session(node) as db:
        desc = [r.create_statement for ks in keyspaces for r in db.execute(f"DESC KEYSPACE {ks}")]
        rows = {
            f"{ks}.kv": sorted(tuple(r) for r in db.execute(f"SELECT * FROM {ks}.kv", timeout=600))
            for ks in keyspaces
        }
    return desc, rows


def _fill_backup_keyspaces(node: TestNode, tablets: str, vnodes: str) -> None:
    """A tablets keyspace (four tablets, a deleted row) and a vnode one, 200 rows each in `kv`."""
    with scylla_session(node) as db:
        db.execute(f"CREATE KEYSPACE {tablets} WITH replication = {NTS} AND tablets = {{'initial': 4}}")
        db.execute(f"CREATE KEYSPACE {vnodes} WITH replication = {NTS} AND tablets = {{'enabled': false}}")
        for ks in (tablets, vnodes):
            db.execute(f"CREATE TABLE {ks}.kv (k int PRIMARY KEY, v text, n bigint)")
            insert = db.prepare(f"INSERT INTO {ks}.kv (k, v, n) VALUES (?, ?, ?)")
            for n in range(200):
                db.execute(insert, (n, f"v{n}", n * 7))
        db.execute(f"DELETE FROM {tablets}.kv WHERE k = 5")


def test_backup_and_restore_through_file_uris(
    spark_cluster: SparkCluster, node: TestNode, node_factory: NodeFactory, tmp_path: Path
) -> None:
    _fill_backup_keyspaces(node, "sb", "sv")
    before = _state(node, ("sb", "sv"))
    backups = tmp_path / "backups"
    out = _run(
        spark_cluster,
        tmp_path,
        *("backup", *_api(node), "--to", (backups / "b1").as_uri(), "--keyspace", "sb", "--keyspace", "sv"),
    )
    assert "backed up 2 table(s)" in out and (backups / "b1" / "manifest.json").exists()

    target = node_factory.start_node()
    out = _run(spark_cluster, backups, "restore", *_api(target), "--from", "file:b1")
    assert "restored 2 table(s)" in out
    assert _state(target, ("sb", "sv")) == before


def test_backup_and_restore_through_an_s3_store(
    spark_cluster: SparkCluster, node: TestNode, node_factory: NodeFactory, tmp_path: Path
) -> None:
    """The backup's store is an S3 bucket (moto's S3 server on the loopback, reached through
    pyarrow.fs): the executors on both workers write the tablet files as objects and read them
    back for the restore; the URI carries endpoint and keys, so the workers need no environment.
    Restore progress is one object per record, and a second restore finds everything done."""
    from tabletdb.spark.backup_store import BackupStore
    from tests.harness.s3 import s3_server

    _fill_backup_keyspaces(node, "s3t", "s3v")
    before = _state(node, ("s3t", "s3v"))
    with s3_server() as bucket:
        uri = bucket.uri("backups/b1")
        out = _run(
            spark_cluster,
            tmp_path,
            "backup",
            *_api(node),
            "--to",
            uri,
            *("--keyspace", "s3t", "--keyspace", "s3v"),
        )
        assert "backed up 2 table(s)" in out
        store = BackupStore(uri)
        manifest = json.loads(store.read_text("manifest.json"))
        files = [f["path"] for t in manifest["tables"] for f in t["files"]]
        assert len(files) >= 5 and all(store.is_file(f) for f in files)  # 4 tablets + vnode shard files

        target = node_factory.start_node()
        out = _run(spark_cluster, tmp_path, "restore", *_api(target), "--from", uri)
        assert "restored 2 table(s)" in out
        assert _state(target, ("s3t", "s3v")) == before
        assert "restore-progress.jsonl" not in store.names("")  # objects, not an appended file
        out = _run(spark_cluster, tmp_path, "restore", *_api(target), "--from", uri)
        assert "(resumed): 0 file(s) loaded" in out and f"{len(files)} already done" in out, out
    assert _state(target, ("s3t", "s3v")) == before


def test_cdc_export_every_log_row_once(spark_cluster: SparkCluster, node: TestNode, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    with scylla_session(node) as db:
        db.execute(f"CREATE KEYSPACE sx WITH replication = {NTS} AND tablets = {{'initial': 4}}")
        db.execute(
            "CREATE TABLE sx.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH cdc = {'enabled': true}"
        )
        insert = db.prepare("INSERT INTO sx.t (k, c, v) VALUES (?, ?, ?)")
        for k in range(40):
            db.execute(insert, (k, k % 3, f"v{k}"))
        db.execute("DELETE FROM sx.t WHERE k = 3")
        written = time.monotonic()
        log = sorted(
            (bytes(r[0]), str(r[1]), r[2])
            for r in db.execute(
                'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM sx.t_scylla_cdc_log'
            )
        )
    assert len(log) == 41
    time.sleep(max(0.0, written + 11 - time.monotonic()))  # past the export's 10 s safety lag

    out = _run(
        spark_cluster,
        tmp_path,
        "cdc",
        "export",
        *_api(node)[:4],
        "--table",
        "sx.t",
        "--to",
        "file:export",
        "--tasks",
        "4",
    )
    assert "exported 41 log rows" in out
    passes = sorted((tmp_path / "export").glob("pass-*"))
    assert len(passes) == 1
    exported = pq.read_table(passes[0], columns=["cdc$stream_id", "cdc$time", "cdc$batch_seq_no"]).to_pylist()
    assert sorted((bytes(r["cdc$stream_id"]), r["cdc$time"], r["cdc$batch_seq_no"]) for r in exported) == log


def test_workers_without_the_driver_package_fail_in_one_line(
    spark_cluster: SparkCluster, node: TestNode, tmp_path: Path
) -> None:
    """The executors' Python (the venv's base interpreter) has tabletdb on its path but none of
    its dependencies: the command stops before any work, naming what every worker needs."""
    bare = Path(sys.base_prefix) / "bin" / "python3"
    with scylla_session(node) as db:
        db.execute(f"CREATE KEYSPACE sw WITH replication = {NTS} AND tablets = {{'initial': 2}}")
        db.execute(f"CREATE TABLE sw.t ({COLUMNS})")
    (tmp_path / "in.csv").write_text("id,seq\n1,1\n")
    load = ["load", *_api(node), "--table", "sw.t", "--from", "in.csv", *spark_cluster.cli_args()]
    done = subprocess.run(
        [sys.executable, "-m", "tabletdb.cli.main", *load, "--conf", f"spark.pyspark.python={bare}"],
        cwd=tmp_path,
        env=spark_cluster.driver_env(),
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert done.returncode == 2, done.stdout + done.stderr[-4000:]
    message = [line for line in done.stderr.splitlines() if line.startswith("tabletdb load:")]
    assert len(message) == 1, done.stderr[-4000:]
    assert re.fullmatch(
        r"tabletdb load: Spark executors cannot run tabletdb's tasks \(ModuleNotFoundError: No module "
        rf"named '\w+'\): every worker needs Python at {re.escape(str(bare))} \(PYSPARK_PYTHON, or "
        r"--conf spark.pyspark.python=\.\.\.\) with tabletdb and its dependencies installed, as the "
        r"driver's environment has them",
        message[0],
    ), message[0]


@pytest.mark.slow
@pytest.mark.timeout(4 * SLOW_STEP)
def test_a_million_rows_load_back_up_and_restore(
    spark_cluster: SparkCluster, node: TestNode, node_factory: NodeFactory, tmp_path: Path
) -> None:
    good = 1_000_000
    bad = _write_csv(tmp_path / "big.csv", good, bad_every=50_000)
    with scylla_session(node) as db:
        db.execute(f"CREATE KEYSPACE sm WITH replication = {NTS} AND tablets = {{'initial': 8}}")
        db.execute(f"CREATE TABLE sm.big ({COLUMNS})")
    out = _run(
        spark_cluster,
        tmp_path,
        *("load", *_api(node), "--table", "sm.big", "--from", "big.csv", "--rejects", "rejects"),
        expect=3,
        timeout=SLOW_STEP,
    )
    assert f"read {good + bad} rows: loaded {good}, rejected {bad}" in out
    assert len(list(read_rejects(str(tmp_path / "rejects")))) == bad
    expected = _checksum(_expected(good))
    with scylla_session(node) as db:
        assert _checksum(_read(db, "sm.big")) == expected

    backup = ("backup", *_api(node), "--to", "file:b", "--keyspace", "sm")
    out = _run(spark_cluster, tmp_path, *backup, timeout=SLOW_STEP)
    assert f"{good} rows" in out
    target = node_factory.start_node()
    out = _run(spark_cluster, tmp_path, "restore", *_api(target), "--from", "b", timeout=SLOW_STEP)
    assert f"{good} rows" in out
    with scylla_session(target) as db:
        assert _checksum(_read(db, "sm.big")) == expected
