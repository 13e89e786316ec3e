"""`tabletdb load` against a real node.

Acceptance: a CSV with good and malformed rows loads every good row, and every bad row lands in
the rejects with a reason (wrong type, missing key, unparsable value, wrong field count); the
summary counts both and the exit code says rows were rejected. JSON lines and Parquet inputs go
through the same checks (in-process, sharing one SparkSession).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tabletdb.spark.connection import parse_options
from tabletdb.spark.load import read_rejects, run_load
from tests.harness.node import TestNode

pyspark = pytest.importorskip("pyspark")

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
SCHEMA = [
    f"CREATE KEYSPACE ld WITH replication = {NTS}",
    "CREATE TABLE ld.csv (id int, seq int, name text, amount decimal, at timestamp, tags list<text>,"
    " PRIMARY KEY (id, seq))",
    "CREATE TABLE ld.js (id int PRIMARY KEY, name text, amount decimal, tags set<int>)",
    "CREATE TABLE ld.pq (id bigint PRIMARY KEY, name text, at timestamp, score double)",
    "CREATE TABLE ld.wt (id int PRIMARY KEY, v text)",
    "CREATE TABLE ld.opts (id int PRIMARY KEY, note text, n int)",
]
GOOD_ROWS = 120
BAD_LINES = {
    'x1,1,bad int,1.5,2024-01-01T00:00:00Z,"[""a""]"': "column id (int)",
    ",2,no key,1.5,2024-01-01T00:00:00Z,": "missing value for primary key column id",
    "7,,no clustering,1.5,2024-01-01T00:00:00Z,": "missing value for primary key column seq",
    "8,1,bad decimal,1.2.3,2024-01-01T00:00:00Z,": "column amount (decimal)",
    "9,1,bad time,1.5,yesterday,": "column at (timestamp)",
    '10,1,bad list,1.5,2024-01-01T00:00:00Z,"[1, "': "column tags (list<text>)",
    "11,1,too few fields": "malformed record",
}


def test_csv_load_keeps_every_good_row_and_rejects_every_bad_one(
    node: TestNode, db: Any, tmp_path: Path
) -> None:
    lines = ["id,seq,name,amount,at,tags"]
    for n in range(GOOD_ROWS):
        lines.append(
            f'{n // 4},{n % 4},"name, {n}",{n}.25,2024-01-01T00:00:{n % 60:02d}Z,"[""t{n}"", ""u""]"'
        )
        if n % 20 == 0:
            lines.append(list(BAD_LINES)[(n // 20) % len(BAD_LINES)])
    lines.extend(BAD_LINES)
    source = tmp_path / "in.csv"
    source.write_text("\n".join(lines) + "\n")
    bad_count = len(lines) - 1 - GOOD_ROWS
    rejects = tmp_path / "rejects"
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
    # no --format: taken from the .csv extension
    command += ["--table", "ld.csv", "--from", str(source), "--rejects", str(rejects)]
    command += ["--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=2", "--consistency", "ONE"]
    command += ["--via", "cql"]  # the CQL writer; tests/integration/test_file_load.py covers files
    done = subprocess.run(command, capture_output=True, text=True, timeout=280)
    assert done.returncode == 3, done.stdout + done.stderr[-3000:]
    assert f"read {GOOD_ROWS + bad_count} rows: loaded {GOOD_ROWS}, rejected {bad_count}" in done.stdout

    rows = sorted(db.execute("SELECT id, seq, name, amount, at, tags FROM ld.csv"))
    assert len(rows) == GOOD_ROWS
    for n, row in enumerate(rows):
        assert (row.id, row.seq, row.name, str(row.amount)) == (n // 4, n % 4, f"name, {n}", f"{n}.25")
        assert row.at == dt.datetime(2024, 1, 1, 0, 0, n % 60)
        assert row.tags == [f"t{n}", "u"]

    rejected = list(read_rejects(str(rejects)))
    assert len(rejected) == bad_count
    for line, reason in BAD_LINES.items():
        first_field = line.split(",")[0]
        matching = [r for r in rejected if reason in r["reason"]]
        assert matching, f"no reject with reason {reason!r}: {rejected}"
        assert any(first_field in r["record"] for r in matching)


def test_json_lines_load_rejects_unknown_fields_and_bad_json(
    spark: Any, node: TestNode, db: Any, tmp_path: Path
) -> None:
    good = [{"id": n, "name": f"n{n}", "amount": f"{n}.5", "tags": [n, n + 1]} for n in range(30)]
    bad = ['{"id": 1000, "nope": 1}', "{not json", '{"id": "x"}', "[1, 2]", '{"name": "no key"}']
    source = tmp_path / "in.json"
    source.write_text("\n".join([*(json.dumps(g) for g in good), *bad]) + "\n")
    raw = {"hosts": node.host, "port": str(node.port), "table": "ld.js", "consistency": "ONE"}
    summary = run_load(spark, parse_options(raw), raw, str(source), "json", str(tmp_path / "rej"))
    assert (summary.read, summary.loaded, summary.rejected) == (35, 30, 5)
    got = sorted((r.id, r.name, str(r.amount), sorted(r.tags)) for r in db.execute("SELECT * FROM ld.js"))
    assert got == [(n, f"n{n}", f"{n}.5", [n, n + 1]) for n in range(30)]
    reasons = sorted(r["reason"] for r in read_rejects(str(tmp_path / "rej")))
    assert any("'nope' matches no column" in r for r in reasons)
    assert any(r.startswith("not valid JSON") for r in reasons)
    assert any("missing value for primary key column id" in r for r in reasons)


def test_parquet_load_converts_typed_columns(spark: Any, node: TestNode, db: Any, tmp_path: Path) -> None:
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    df = spark.createDataFrame(
        [(n, f"p{n}", at, n / 4) for n in range(40)], "id long, name string, at timestamp, score double"
    )
    df.write.parquet(str(tmp_path / "in.parquet"))
    raw = {"hosts": node.host, "port": str(node.port), "table": "ld.pq", "consistency": "ONE"}
    summary = run_load(
        spark, parse_options(raw), raw, str(tmp_path / "in.parquet"), "parquet", str(tmp_path / "rej")
    )
    assert (summary.loaded, summary.rejected, summary.rejects_path) == (40, 0, None)
    got = sorted((r.id, r.name, r.at, r.score) for r in db.execute("SELECT * FROM ld.pq"))
    assert got == [(n, f"p{n}", at.replace(tzinfo=None), n / 4) for n in range(40)]


def test_writetime_and_ttl_fields_apply_per_row(spark: Any, node: TestNode, db: Any, tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": n, "v": f"v{n}", "wt": 1_000_000 + n, "ttl": 3600 if n % 2 else None})
        for n in range(6)
    ]
    lines.append(json.dumps({"id": 99, "v": "bad", "wt": "later"}))
    source = tmp_path / "wt.json"
    source.write_text("\n".join(lines) + "\n")
    raw = {"hosts": node.host, "port": str(node.port), "table": "ld.wt", "consistency": "ONE"}
    raw.update(writetime_column="wt", ttl_column="ttl")
    summary = run_load(spark, parse_options(raw), raw, str(source), "json", str(tmp_path / "rej"))
    assert (summary.loaded, summary.rejected) == (6, 1)
    rows = sorted(db.execute("SELECT id, v, WRITETIME(v) AS w, TTL(v) AS t FROM ld.wt"))
    assert [(r.id, r.v, r.w) for r in rows] == [(n, f"v{n}", 1_000_000 + n) for n in range(6)]
    assert [r.t is not None for r in rows] == [n % 2 == 1 for n in range(6)]
    assert [r["reason"] for r in read_rejects(str(tmp_path / "rej"))] == [
        "field wt: 'later' is not a whole number"
    ]


def test_csv_options_multi_line_fields_delimiter_null_value_and_no_header(
    spark: Any, node: TestNode, db: Any, tmp_path: Path
) -> None:
    from tabletdb.spark.input_options import parse_csv_options

    # RFC 4180: quoted fields hold line breaks and doubled quotes; they are one row each. No
    # header: the fields are the columns in DESCRIBE order (key, then regular columns by name).
    rows = [f"{n};{n};'line one\nline ''two'' {n}'" if n % 3 == 0 else f"{n};NA;plain {n}" for n in range(30)]
    rows.append("99;1")  # a field short: one malformed record
    source = tmp_path / "in.csv"
    source.write_text("\n".join(rows) + "\n")
    csv = parse_csv_options(
        {"header": "false", "delimiter": ";", "quote": "'", "escape": "'", "nullValue": "NA"}, "csv"
    )
    raw = {"hosts": node.host, "port": str(node.port), "table": "ld.opts", "consistency": "ONE"}
    summary = run_load(spark, parse_options(raw), raw, str(source), "csv", str(tmp_path / "rej"), csv=csv)
    assert (summary.read, summary.loaded, summary.rejected) == (31, 30, 1)
    got = sorted((r.id, r.note, r.n) for r in db.execute("SELECT id, note, n FROM ld.opts"))
    assert got == [
        (n, f"line one\nline 'two' {n}", n) if n % 3 == 0 else (n, f"plain {n}", None) for n in range(30)
    ]
    assert [r["reason"] for r in read_rejects(str(tmp_path / "rej"))] == [
        "malformed record (wrong number of fields or bad quoting)"
    ]
