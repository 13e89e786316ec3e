"""`tabletdb backup` and `tabletdb restore` against real server processes.

Acceptance: back up a node (every CQL type, tablets and vnode keyspaces, a materialized view,
counters, deletes, roles with grants), restore into a fresh node: DESC SCHEMA WITH INTERNALS AND
PASSWORDS is identical (table ids included), every row is identical, restored roles log in and
have their grants. A restore killed midway (SIGKILL) and run again completes with identical data.

The command line (a Spark session per run) is exercised where it matters: backup with --master
and --conf, the killed restore, credentials files and exit codes; the rest calls the pipelines
in-process on one Spark session shared by the module.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tabletdb.spark.backup import BackupError, ClusterOptions, QuietReporter, run_backup
from tabletdb.spark.backup_rest import RestError
from tabletdb.spark.restore import run_restore
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode

AUTH = {"authenticator": "PasswordAuthenticator", "authorizer": "CassandraAuthorizer"}
NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
COLUMNS = (
    "k int, c text, ac ascii, big bigint, bl blob, bo boolean, d date, dec decimal, dbl double,"
    " dur duration, fl float, ip inet, i int, si smallint, tx text, tm time, ts timestamp,"
    " tu timeuuid, ti tinyint, u uuid, vi varint, l list<int>, s set<text>, m map<text, int>,"
    " fl2 frozen<list<frozen<set<int>>>>, tup tuple<int, text, date>, who frozen<person>,"
    " st text static, PRIMARY KEY (k, c)"
)
SCHEMA = [
    f"CREATE KEYSPACE bk WITH replication = {NTS}",
    "CREATE TYPE bk.address (street text, zip int)",
    "CREATE TYPE bk.person (name text, home frozen<address>, tags set<text>)",
    f"CREATE TABLE bk.every ({COLUMNS}) WITH CLUSTERING ORDER BY (c DESC) AND comment = 'a; b'",
    "CREATE TABLE bk.kv (k int PRIMARY KEY, v text, n int) WITH tablets = {'min_tablet_count': 4}",
    "CREATE MATERIALIZED VIEW bk.by_v AS SELECT * FROM bk.kv WHERE v IS NOT NULL AND k IS NOT NULL"
    " PRIMARY KEY (v, k)",
    "CREATE INDEX kv_by_n ON bk.kv (n)",
    "CREATE TABLE bk.hits (k int PRIMARY KEY, c counter)",
    f"CREATE KEYSPACE vn WITH replication = {NTS} AND tablets = {{'enabled': false}}",
    "CREATE TABLE vn.t (k int, c int, v text, PRIMARY KEY (k, c))",
    "CREATE ROLE reader WITH PASSWORD = 'r3ad' AND LOGIN = true",
    "CREATE ROLE writer WITH PASSWORD = 'wr1te' AND LOGIN = true",
    "GRANT SELECT ON KEYSPACE bk TO reader",
    "GRANT MODIFY ON bk.kv TO writer",
    "GRANT reader TO writer",
]
INSERT = (
    "INSERT INTO bk.every (k, c, ac, big, bl, bo, d, dec, dbl, dur, fl, ip, i, si, tx, tm, ts, tu, ti, u, vi,"
    " l, s, m, fl2, tup, who, st) VALUES (" + ", ".join(["?"] * 28) + ")"
)
TABLES = ["bk.every", "bk.kv", "bk.by_v", "bk.hits", "vn.t"]


def _row(n: int) -> tuple[Any, ...]:
    from cassandra.util import Date, Duration, Time

    person = (f"p{n}", (f"{n} Main St", 10000 + n), {"a", f"t{n}"})
    return (
        n % 40, f"c{n}", "plain", -(2**62) + n, bytes([n % 256, 0, 255]), n % 2 == 0, Date(19000 + n),
        Decimal(f"-{n}1234567890123456789.5"), 1.5 * n, Duration(1, n, 3_000_000_000), 0.25,
        str(ipaddress.ip_address(f"2001:db8::{n}")), -n, 300 + n, f"ünïcode {n}", Time(n * 10**9),
        dt.datetime(2024, 1, 2, 3, 4, 5, 6000) + dt.timedelta(days=n), uuid.uuid1(), -(n % 100), uuid.uuid4(),
        10**30 + n, [n, n, 1], {"x", f"y{n}"}, {"a": n, "b": -n}, [{1, 2}, {n}], (n, "t", Date(-n)),
        person, f"static {n % 40}",
    )  # fmt: skip


def _cassandra() -> Any:
    from cassandra.auth import PlainTextAuthProvider

    return PlainTextAuthProvider("cassandra", "cassandra")


def _fill(node: TestNode) -> None:
    with scylla_session(node, auth_provider=_cassandra()) as s:
        for statement in SCHEMA:
            s.execute(statement)
        insert = s.prepare(INSERT)
        for n in range(1, 161):
            s.execute(insert, _row(n))
        kv = s.prepare("INSERT INTO bk.kv (k, v, n) VALUES (?, ?, ?) USING TIMESTAMP ?")
        for n in range(300):
            s.execute(kv, (n, f"v{n % 17}", n, 1_000_000 + n))
        s.execute("DELETE FROM bk.kv WHERE k = 7")
        s.execute("UPDATE bk.kv SET n = null WHERE k = 8")
        s.execute("DELETE FROM bk.every WHERE k = 3 AND c = 'c3'")
        hits = s.prepare("UPDATE bk.hits SET c = c + ? WHERE k = ?")
        for n in range(50):
            s.execute(hits, (n + 1, n % 10))
        vnode = s.prepare("INSERT INTO vn.t (k, c, v) VALUES (?, ?, ?)")
        for n in range(120):
            s.execute(vnode, (n % 30, n, f"x{n}"))


def _snapshot(node: TestNode) -> tuple[list[str], dict[str, list[tuple[Any, ...]]], list[Any]]:
    with scylla_session(node, auth_provider=_cassandra()) as s:
        desc = [r.create_statement for r in s.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")]
        rows = {t: sorted((tuple(r) for r in s.execute(f"SELECT * FROM {t}")), key=repr) for t in TABLES}
        writetimes = sorted(tuple(r) for r in s.execute("SELECT k, writetime(v) FROM bk.kv"))
        by_index = sorted(r.k for r in s.execute("SELECT k FROM bk.kv WHERE n = 42"))
        assert by_index == [42]  # the restored index was built from the restored rows
    return desc, rows, writetimes


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "tabletdb.cli.main", *args]


def _endpoint_args(node: TestNode) -> list[str]:
    return [
        "--hosts", node.host, "--username", "cassandra", "--password", "cassandra",
        "--api-endpoint", f"{node.host}:{node.endpoints.api_port}",
    ]  # fmt: skip


def _options(node: TestNode) -> ClusterOptions:
    return ClusterOptions(
        hosts=(node.host,),
        username="cassandra",
        password="cassandra",
        api_endpoints={node.host: node.endpoints.api_port},
    )


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args[3]} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def source(node_factory_module: NodeFactory) -> TestNode:
    node = node_factory_module.start_node(options=AUTH)
    _fill(node)
    return node


@pytest.fixture(scope="module")
def node_factory_module(
    address_allocator: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NodeFactory]:
    factory = NodeFactory(address_allocator, tmp_path_factory.mktemp("bk-nodes"))
    try:
        yield factory
    finally:
        problems = factory.cleanup()
        assert not problems, problems


@pytest.fixture(scope="module")
def backup_dir(source: TestNode, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("backup") / "b1"
    spark_options = ["--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2"]
    done = _run(_cli("backup", *_endpoint_args(source), "--to", str(target), *spark_options))
    assert "backed up 5 table(s)" in done.stdout
    return target


def test_backup_writes_manifest_schema_and_per_tablet_files(source: TestNode, backup_dir: Path) -> None:
    manifest = json.loads((backup_dir / "manifest.json").read_text())
    tables = {f"{t['keyspace']}.{t['table']}": t for t in manifest["tables"]}
    assert set(tables) == set(TABLES)
    kv = tables["bk.kv"]
    assert kv["uses_tablets"] and kv["tablet_count"] == len(kv["last_tokens"]) >= 4
    assert kv["row_count"] == 299
    for f in kv["files"]:  # no file spans a tablet boundary
        i = f["tablet_id"]
        assert f["last_token"] == kv["last_tokens"][i]
        assert i == 0 or f["first_token"] == kv["last_tokens"][i - 1]
        assert (backup_dir / f["path"]).stat().st_size == f["size"]
    assert not tables["vn.t"]["uses_tablets"] and tables["vn.t"]["row_count"] == 120
    assert "WITH HASHED PASSWORD" in (backup_dir / "schema.cql").read_text()
    with scylla_session(source, auth_provider=_cassandra()) as s:  # balancing resumed, snapshots gone
        assert s.execute("SELECT count(*) FROM bk.kv").one()[0] == 299
    assert not list((source.workdir / "snapshots").glob("*/*"))


def test_restore_reproduces_schema_rows_and_roles(
    spark: Any, source: TestNode, backup_dir: Path, node_factory_module: NodeFactory, tmp_path: Path
) -> None:
    target = node_factory_module.start_node(options=AUTH)
    summary = run_restore(spark, _options(target), backup_dir, QuietReporter(), tmp_path / "p")
    manifest = json.loads((backup_dir / "manifest.json").read_text())
    assert summary.files_loaded == sum(len(t["files"]) for t in manifest["tables"])
    assert summary.whole_file_installs > 0 and not summary.mismatches
    assert _snapshot(target) == _snapshot(source)
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import NoHostAvailable

    with scylla_session(target, auth_provider=PlainTextAuthProvider("writer", "wr1te")) as s:
        s.execute("INSERT INTO bk.kv (k, v) VALUES (1000, 'new')")  # MODIFY granted
        assert s.execute("SELECT v FROM bk.kv WHERE k = 1000").one().v == "new"  # SELECT inherited
        from cassandra import Unauthorized

        with pytest.raises(Unauthorized):
            s.execute("INSERT INTO bk.hits (k) VALUES (1)")
    with (
        pytest.raises(NoHostAvailable),
        scylla_session(target, auth_provider=PlainTextAuthProvider("reader", "x")),
    ):
        pass
    with scylla_session(target, auth_provider=PlainTextAuthProvider("reader", "r3ad")) as s:
        assert s.execute("SELECT count(*) FROM bk.every").one()[0] == 159


def test_restore_killed_midway_resumes_to_identical_data(
    spark: Any, source: TestNode, backup_dir: Path, node_factory_module: NodeFactory, tmp_path: Path
) -> None:
    target = node_factory_module.start_node(options=AUTH)
    progress = tmp_path / "progress.jsonl"
    args = _cli(
        "restore", *_endpoint_args(target), "--from", str(backup_dir), "--progress-file", str(progress)
    )
    total = sum(len(t["files"]) for t in json.loads((backup_dir / "manifest.json").read_text())["tables"])
    first = subprocess.Popen(
        [*args, "--batch", "1", "--master", "local[1]"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while first.poll() is None and '"file"' not in (progress.read_text() if progress.exists() else ""):
            time.sleep(0.002)
        first.kill()
    finally:
        first.wait()
    loaded = progress.read_text().count('"file"')
    assert 0 < loaded < total, f"the kill should land while files load ({loaded} of {total} done)"
    summary = run_restore(spark, _options(target), backup_dir, QuietReporter(), progress)
    assert summary.resumed and summary.files_skipped == loaded and summary.files_loaded == total - loaded
    assert _snapshot(target) == _snapshot(source)


def test_balancing_flag_is_replicated_state_that_survives_a_restart(node_factory: NodeFactory) -> None:
    from tabletdb.spark.backup_rest import NodeApi

    node = node_factory.start_node()
    api = NodeApi(node.host, node.endpoints.api_port)
    assert api.balancing_enabled()
    api.set_balancing(False)
    node.restart()
    api = NodeApi(node.host, node.endpoints.api_port)
    deadline = time.monotonic() + 60  # the REST API comes up just after CQL (later on a busy box)
    while True:
        try:
            assert not api.balancing_enabled()
            break
        except RestError:
            if time.monotonic() > deadline:
                raise AssertionError("REST API did not come up within 60 s of the restart") from None
            time.sleep(0.1)


def test_failed_backup_task_fails_the_backup_and_still_cleans_up(
    spark: Any, source: TestNode, tmp_path: Path
) -> None:
    from tabletdb.spark.backup_rest import NodeApi

    out = tmp_path / "broken"
    out.mkdir()
    (out / "data").write_text("a file where the data directory must go")
    with pytest.raises(BackupError, match=r"data/bk/\S+\.db: (FileExistsError|NotADirectoryError)"):
        run_backup(spark, _options(source), out, (), QuietReporter())
    assert NodeApi(source.host, source.endpoints.api_port, ("cassandra", "cassandra")).balancing_enabled()
    assert not list((source.workdir / "snapshots").glob("*/*"))
    assert not (out / "manifest.json").exists()


def test_tablet_files_load_as_rows_where_boundaries_differ(
    source: TestNode, backup_dir: Path, node_factory_module: NodeFactory
) -> None:
    from tabletdb.spark.backup_rest import NodeApi

    manifest = json.loads((backup_dir / "manifest.json").read_text())
    kv = next(t for t in manifest["tables"] if t["table"] == "kv")
    target = node_factory_module.start_node(options=AUTH)
    with scylla_session(target, auth_provider=_cassandra()) as s:
        s.execute(f"CREATE KEYSPACE bk WITH replication = {NTS}")
        s.execute(
            f"CREATE TABLE bk.kv (k int PRIMARY KEY, v text, n int) WITH ID = {kv['id']}"
            " AND tablets = {'min_tablet_count': 2, 'max_tablet_count': 2}"
        )
    assert kv["tablet_count"] != 2
    api = NodeApi(target.host, target.endpoints.api_port, ("cassandra", "cassandra"))
    for f in kv["files"]:
        result = api.load_tablet(
            kv["id"], f["first_token"], f["last_token"], backup_dir / f["path"], f["sha256"]
        )
        assert result["mode"] == "rows" and result["partitions"] > 0
    query = "SELECT k, v, n, writetime(v) FROM bk.kv"
    with (
        scylla_session(target, auth_provider=_cassandra()) as t,
        scylla_session(source, auth_provider=_cassandra()) as s,
    ):
        assert sorted(map(tuple, t.execute(query))) == sorted(map(tuple, s.execute(query)))
    with pytest.raises(RestError, match=r"HTTP 400.*checksum"):
        f = kv["files"][0]
        api.load_tablet(kv["id"], f["first_token"], f["last_token"], backup_dir / f["path"], "0" * 64)


def test_backup_of_some_keyspaces_with_a_credentials_file(source: TestNode, tmp_path: Path) -> None:
    credentials = tmp_path / "cqlshrc"
    credentials.write_text("[authentication]\nusername = cassandra\npassword = cassandra\n")
    endpoint = f"{source.host}:{source.endpoints.api_port}"
    out = tmp_path / "vn-only"
    args = ["--hosts", source.host, "--credentials-file", str(credentials), "--api-endpoint", endpoint]
    _run(_cli("backup", *args, "--to", str(out), "--keyspace", "vn"))
    manifest = json.loads((out / "manifest.json").read_text())
    assert [(t["keyspace"], t["table"]) for t in manifest["tables"]] == [("vn", "t")]
    schema = (out / "schema.cql").read_text()
    assert "CREATE KEYSPACE vn" in schema and "GRANT reader TO writer" in schema
    assert "KEYSPACE bk" not in schema and " bk." not in schema  # nor grants on what is left out
    done = subprocess.run(
        _cli("backup", *args, "--to", str(out)), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1 and "already holds a backup" in done.stderr


def test_backup_and_restore_through_an_s3_store(
    spark: Any, source: TestNode, node_factory_module: NodeFactory
) -> None:
    """The backup's store is an S3 bucket (a real S3 server on the loopback, through pyarrow.fs):
    executors write and read the tablet files as objects, restore progress is one object per
    record, and the restored node equals the source."""
    from tabletdb.spark.backup_store import BackupStore
    from tests.harness.s3 import s3_server

    with s3_server() as bucket:
        store = BackupStore(bucket.uri("backups/b1"))
        backup = run_backup(spark, _options(source), store, (), QuietReporter())
        assert backup.files > 0 and store.is_file("manifest.json") and store.is_file("schema.cql")
        target = node_factory_module.start_node(options=AUTH)
        summary = run_restore(spark, _options(target), store, QuietReporter())
        assert summary.files_loaded == backup.files and not summary.mismatches
        assert summary.whole_file_installs > 0
        assert _snapshot(target) == _snapshot(source)
        assert "restore-progress.jsonl" not in store.names("")  # objects, not an appended file
        again = run_restore(spark, _options(target), store, QuietReporter())  # all recorded as done
        assert again.resumed and again.files_skipped == backup.files and again.files_loaded == 0


def test_a_damaged_file_in_the_backup_is_named_with_both_checksums(
    spark: Any, backup_dir: Path, node_factory_module: NodeFactory, tmp_path: Path
) -> None:
    import hashlib
    import shutil

    from tabletdb.spark.restore import RestoreError

    copy = tmp_path / "damaged"
    shutil.copytree(backup_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    victim = next(f for t in manifest["tables"] if t["table"] == "kv" for f in t["files"])
    path = copy / victim["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    target = node_factory_module.start_node(options=AUTH)
    with pytest.raises(RestoreError) as failed:
        run_restore(spark, _options(target), copy, QuietReporter(), tmp_path / "p")
    message = str(failed.value)
    assert victim["path"] in message and "damaged" in message
    assert hashlib.sha256(bytes(data)).hexdigest() in message and victim["sha256"] in message


def test_a_node_refusing_an_upload_before_its_body_is_heard(source: TestNode, tmp_path: Path) -> None:
    """The node answers an upload for a table it does not have before reading the body (sent with
    sendfile); the sender still reports the node's own reason, not a broken pipe."""
    from tabletdb.spark.backup_rest import NodeApi

    body = tmp_path / "big.db"
    body.write_bytes(b"x" * (16 << 20))
    api = NodeApi(source.host, source.endpoints.api_port, ("cassandra", "cassandra"))
    missing = uuid.uuid4()
    with pytest.raises(RestError, match=rf"HTTP 404: no table with id {missing}"):
        api.load_tablet(str(missing), 0, 1, body, "0" * 64)
