"""`tabletdb load --via files` (the default) against a real node: per-tablet SQLite files merged on
the replica.

Every loaded row must read back exactly as the input says (a checksum over every column of every
row, computed from what the driver reads, against one computed from the generated input), rejects
keep their reasons, and a load killed -9 midway and run again ends with every row once and every
reject once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tabletdb.spark.connection import parse_options
from tabletdb.spark.file_load import FileTarget, run_file_load
from tabletdb.spark.load import read_rejects
from tests.harness.node import TestNode

pyspark = pytest.importorskip("pyspark")
pytestmark = pytest.mark.timeout(1200)  # each CLI run starts its own Spark: minutes on a loaded box

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
SCHEMA = [
    f"CREATE KEYSPACE fl WITH replication = {NTS} AND tablets = {{'initial': 4}}",
    "CREATE TABLE fl.mixed (id int, seq int, name text, amount decimal, at timestamp, flag boolean,"
    " score double, tags list<text>, props map<text, int>, note text STATIC, PRIMARY KEY (id, seq))"
    " WITH CLUSTERING ORDER BY (seq DESC)",
    "CREATE TABLE fl.mixed_big (id int, seq int, name text, amount decimal, at timestamp, flag boolean,"
    " score double, tags list<text>, props map<text, int>, note text STATIC, PRIMARY KEY (id, seq))",
    "CREATE TABLE fl.typed (id bigint PRIMARY KEY, at timestamp, day date, raw blob, u uuid,"
    " pair frozen<tuple<int, text>>, nums set<int>, v text)",
    "CREATE TABLE fl.big (id int, seq int, v text, n bigint, PRIMARY KEY (id, seq))",
    "CREATE TABLE fl.million (id int, seq int, v text, n bigint, PRIMARY KEY (id, seq))",
    "CREATE TABLE fl.hits (id int PRIMARY KEY, c counter)",
    f"CREATE KEYSPACE fv WITH replication = {NTS} AND tablets = {{'enabled': false}}",
    "CREATE TABLE fv.rows (id int, seq int, v text, PRIMARY KEY (id, seq))",
]
BAD_LINES = {
    'x1,1,bad int,1.5,2024-01-01T00:00:00Z,true,1.0,"[""a""]",{}': "column id (int)",
    ",2,no key,1.5,2024-01-01T00:00:00Z,true,1.0,,": "missing value for primary key column id",
    "8,1,bad decimal,1.2.3,2024-01-01T00:00:00Z,false,1.0,,": "column amount (decimal)",
    '10,1,bad map,1.5,2024-01-01T00:00:00Z,true,1.0,,"{""k"": ""x""}"': "column props (map<text, int>)",
    "11,1,too few fields": "malformed record",
}


def _mixed_row(n: int) -> tuple[Any, ...]:
    props = {f"k{n % 3}": n, "z": -n} if n % 5 else None
    tags = [f"t{n}", "u"] if n % 7 else None
    return (
        n // 4,
        n % 4,
        f"name, {n}",
        Decimal(f"{n}.25"),
        dt.datetime(2024, 1, 1, 0, 0, n % 60),
        n % 2 == 0,
        n / 8,
        tags,
        props,
    )


def _mixed_line(n: int) -> str:
    _, _, name, amount, at, flag, score, tags, props = _mixed_row(n)
    tags_text = '"' + json.dumps(tags).replace('"', '""') + '"' if tags else ""
    props_text = '"' + json.dumps(props).replace('"', '""') + '"' if props else ""
    fields = [str(n // 4), str(n % 4), f'"{name}"', str(amount), f"{at.isoformat()}Z", str(flag).lower()]
    return ",".join([*fields, repr(score), tags_text, props_text])


def checksum(rows: Iterator[tuple[Any, ...]]) -> tuple[int, str]:
    """Count and a digest over every column of every row, independent of row order."""
    digests = sorted(hashlib.sha256(repr(row).encode()).hexdigest() for row in rows)
    return len(digests), hashlib.sha256("".join(digests).encode()).hexdigest()


def _read_mixed(db: Any, table: str = "fl.mixed") -> Iterator[tuple[Any, ...]]:
    columns = "id, seq, name, amount, at, flag, score, tags, props"
    for r in db.execute(f"SELECT {columns} FROM {table}", timeout=120):
        props = dict(r.props) if r.props else None
        yield (r.id, r.seq, r.name, r.amount, r.at, r.flag, r.score, list(r.tags) if r.tags else None, props)


def _load_command(node: TestNode, table: str, source: Path, rejects: Path, *extra: str) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "tabletdb.cli.main",
        "load",
        "--hosts",
        node.host,
        "--port",
        str(node.port),
    ]
    command += ["--table", table, "--from", str(source), "--rejects", str(rejects)]
    command += ["--api-endpoint", f"{node.host}:{node.endpoints.api_port}"]
    return [*command, "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2", *extra]


def _mixed_csv(path: Path, good: int) -> int:
    lines = ["id,seq,name,amount,at,flag,score,tags,props"]
    bad = 0
    for n in range(good):
        lines.append(_mixed_line(n))
        if n % 40 == 0:
            lines.append(list(BAD_LINES)[(n // 40) % len(BAD_LINES)])
            bad += 1
    lines.extend(BAD_LINES)
    path.write_text("\n".join(lines) + "\n")
    return bad + len(BAD_LINES)


def test_csv_loads_through_files_with_every_column_equal_to_the_input(
    node: TestNode, db: Any, tmp_path: Path
) -> None:
    good = 400
    source = tmp_path / "in.csv"
    bad = _mixed_csv(source, good)
    done = subprocess.run(
        _load_command(node, "fl.mixed", source, tmp_path / "rejects"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 3, done.stdout + done.stderr[-3000:]
    assert f"read {good + bad} rows: loaded {good}, rejected {bad}" in done.stdout
    assert "via files" in done.stdout
    assert checksum(_read_mixed(db)) == checksum(iter(_mixed_row(n) for n in range(good)))
    # clustering order DESC, as the table says: the file path encodes keys as INSERT does
    assert [r.seq for r in db.execute("SELECT seq FROM fl.mixed WHERE id = 3")] == [3, 2, 1, 0]
    rejected = list(read_rejects(str(tmp_path / "rejects")))
    assert len(rejected) == bad
    for line, reason in BAD_LINES.items():
        assert any(reason in r["reason"] and line.split(",")[0] in r["record"] for r in rejected), reason


def test_parquet_typed_columns_writetime_and_ttl_through_files(
    spark: Any, node: TestNode, db: Any, tmp_path: Path
) -> None:
    import uuid

    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    rows = [
        (
            n,
            at,
            dt.date(2020, 1, 1 + n % 28),
            bytes([n % 256, 1]),
            str(uuid.UUID(int=n)),
            (n, f"p{n}"),
            [n, n + 1],
            f"v{n}",
            1_000_000 + n,
            3600 if n % 2 else None,
        )
        for n in range(60)
    ]
    schema = (
        "id long, at timestamp, day date, raw binary, u string, pair struct<_1: int, _2: string>,"
        " nums array<int>, v string, wt long, ttl int"
    )
    spark.createDataFrame(rows, schema).write.parquet(str(tmp_path / "in.parquet"))
    raw = {"hosts": node.host, "port": str(node.port), "table": "fl.typed", "consistency": "ONE"}
    raw.update(writetime_column="wt", ttl_column="ttl")
    target = FileTarget(node.endpoints.api_port)
    summary = run_file_load(
        spark, parse_options(raw), target, str(tmp_path / "in.parquet"), "parquet", str(tmp_path / "rej")
    )
    assert (summary.loaded, summary.rejected) == (60, 0)
    got = sorted(
        db.execute("SELECT id, at, day, raw, u, pair, nums, v, WRITETIME(v) AS w, TTL(v) AS t FROM fl.typed")
    )
    assert [
        (r.id, r.at, r.day.date(), r.raw, str(r.u), tuple(r.pair), sorted(r.nums), r.v, r.w) for r in got
    ] == [(n, at.replace(tzinfo=None), d, b, u, p, s, v, w) for n, _, d, b, u, p, s, v, w, _ in rows]
    assert [r.t is not None for r in got] == [n % 2 == 1 for n in range(60)]


def test_a_vnode_table_loads_through_one_whole_ring_file_per_task(
    spark: Any, node: TestNode, db: Any, tmp_path: Path
) -> None:
    rows = [(n % 97, n, f"v{n}") for n in range(500)]
    spark.createDataFrame(rows, "id int, seq int, v string").write.parquet(str(tmp_path / "in.parquet"))
    raw = {"hosts": node.host, "port": str(node.port), "table": "fv.rows", "consistency": "ONE"}
    summary = run_file_load(
        spark,
        parse_options(raw),
        FileTarget(node.endpoints.api_port),
        str(tmp_path / "in.parquet"),
        "parquet",
        str(tmp_path / "rej"),
    )
    assert (summary.loaded, summary.rejected) == (500, 0)
    got = ((r.id, r.seq, r.v) for r in db.execute("SELECT id, seq, v FROM fv.rows"))
    assert checksum(got) == checksum(iter(rows))


def test_tables_the_file_path_cannot_load_are_refused_or_go_through_cql(
    node: TestNode, db: Any, tmp_path: Path
) -> None:
    source = tmp_path / "hits.csv"
    source.write_text("id,c\n1,5\n2,7\n")
    refused = subprocess.run(
        _load_command(node, "fl.hits", source, tmp_path / "r1", "--via", "files"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr[-2000:]
    assert "counter table" in refused.stderr and "--via cql" in refused.stderr
    csv = tmp_path / "plain.csv"
    csv.write_text("id,seq,v,n\n1,1,x,2\n")
    ignored = subprocess.run(  # an option the file path cannot honour is refused, not ignored
        _load_command(node, "fl.big", csv, tmp_path / "r0", "--consistency", "ONE"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ignored.returncode == 2, ignored.stdout + ignored.stderr[-2000:]
    assert "apply to --via cql" in ignored.stderr
    done = subprocess.run(
        _load_command(node, "fl.hits", source, tmp_path / "r2"), capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "via cql" in done.stdout
    assert sorted((r.id, r.c) for r in db.execute("SELECT id, c FROM fl.hits")) == [(1, 5), (2, 7)]


def _big_csv(path: Path, rows: int) -> tuple[int, list[tuple[int, int, str, int]]]:
    expected = [(n // 10, n % 10, f"value {n}", n * 3) for n in range(rows)]
    lines = ["id,seq,v,n"]
    bad = 0
    for i, (id_, seq, v, num) in enumerate(expected):
        lines.append(f"{id_},{seq},{v},{num}")
        if i % 5000 == 17:
            lines.append(f"{id_},oops,{v},{num}")
            bad += 1
    path.write_text("\n".join(lines) + "\n")
    return bad, expected


def _count(db: Any, table: str) -> int:
    return int(db.execute(f"SELECT COUNT(*) FROM {table}", timeout=120).one()[0])


def test_a_load_killed_midway_and_run_again_ends_with_every_row_once(
    node: TestNode, db: Any, tmp_path: Path
) -> None:
    total = 30_000
    source = tmp_path / "big.csv"
    bad, expected = _big_csv(source, total)
    # small files (--file-rows), so the load is many uploads and the kill lands between them
    command = _load_command(node, "fl.big", source, tmp_path / "first", "--file-rows", "300")
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while db.execute("SELECT id FROM fl.big LIMIT 1").one() is None:
            assert first.poll() is None, first.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no row arrived"
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)  # the CLI, Spark's JVM and its Python workers
    finally:
        first.wait(60)
    partial = _count(db, "fl.big")
    assert 0 < partial < total, "the kill did not land midway"

    second = subprocess.run(
        _load_command(node, "fl.big", source, tmp_path / "second"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert second.returncode == 3, second.stdout + second.stderr[-3000:]
    assert f"loaded {total}, rejected {bad}" in second.stdout
    rows = ((r.id, r.seq, r.v, r.n) for r in db.execute("SELECT id, seq, v, n FROM fl.big", timeout=120))
    assert checksum(rows) == checksum(iter(expected))
    assert len(list(read_rejects(str(tmp_path / "second")))) == bad


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_100k_rows_load_through_files_with_every_column_equal_to_the_input(
    node: TestNode, db: Any, tmp_path: Path
) -> None:
    good = 100_000
    source = tmp_path / "big.csv"
    bad = _mixed_csv(source, good)
    done = subprocess.run(
        _load_command(node, "fl.mixed_big", source, tmp_path / "rejects"),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 3, done.stdout + done.stderr[-3000:]
    assert f"read {good + bad} rows: loaded {good}, rejected {bad}" in done.stdout
    assert checksum(_read_mixed(db, "fl.mixed_big")) == checksum(iter(_mixed_row(n) for n in range(good)))
    assert len(list(read_rejects(str(tmp_path / "rejects")))) == bad


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_million_parquet_rows_load_through_files(
    spark: Any, node: TestNode, db: Any, tmp_path: Path
) -> None:
    import random

    rows, bad = 1_000_000, 10
    good = spark.range(rows).selectExpr(
        "cast(id div 10 as int) as id",
        "cast(id % 10 as int) as seq",
        "concat('value ', id) as v",
        "id * 3 as n",
    )
    keyless = spark.createDataFrame(
        [(None, n, "no key", n) for n in range(bad)], "id int, seq int, v string, n long"
    )
    good.union(keyless).repartition(4).write.parquet(str(tmp_path / "in.parquet"))
    raw = {"hosts": node.host, "port": str(node.port), "table": "fl.million"}
    summary = run_file_load(
        spark,
        parse_options(raw),
        FileTarget(node.endpoints.api_port),
        str(tmp_path / "in.parquet"),
        "parquet",
        str(tmp_path / "rej"),
    )
    assert (summary.read, summary.loaded, summary.rejected) == (rows + bad, rows, bad)
    rejected = list(read_rejects(str(tmp_path / "rej")))
    assert len(rejected) == bad
    assert all("missing value for primary key column id" in r["reason"] for r in rejected)
    assert int(db.execute("SELECT COUNT(*) FROM fl.million", timeout=600).one()[0]) == rows
    picked = random.Random(19).sample(range(rows), 500)
    lookup = db.prepare("SELECT v, n FROM fl.million WHERE id = ? AND seq = ?")
    for n in picked:
        row = db.execute(lookup, (n // 10, n % 10)).one()
        assert (row.v, row.n) == (f"value {n}", n * 3), n
