"""The columnwise file-load path (``spark.bulk``) against the row-at-a-time rules it replaces.

Input batches mixing good and bad values of many types go through ``bulk.rows.fit_batch`` and
``bulk.tablet_file.write_rows``, and through the reference: ``load.checker`` (the CQL load's
rules and reasons), then ``tablet_rows.row_mutation`` (the node's INSERT) and
``write_tablet_file``. Both must reject the same rows with the same reasons and write files with
the same contents (list elements compared by position: the INSERT numbers list cells from a
process-wide counter, the file load from the element's index).
"""

from __future__ import annotations

import random
import sqlite3
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tabletdb.spark.bulk.plan import FilePlan
from tabletdb.spark.bulk.rows import CORRUPT, Chunk, _subset, fit_batch
from tabletdb.spark.bulk.tablet_file import TabletRows, write_rows
from tabletdb.spark.coerce import map_columns
from tabletdb.spark.load import checker
from tabletdb.spark.schema_map import TableSchema, table_schema_from_rows
from tabletdb.spark.tablet_rows import table_def
from tabletdb.statements.cells import WriteTime
from tabletdb.storage.sqlite_schema import DATA_TABLES
from tests.unit.spark.row_oracle import RowNotEncodable, row_mutation, write_tablet_file

NOW = 1_700_000_000
STAMP = 1_700_000_000_000_000

WIDE = [
    ("id", "partition_key", 0, "bigint", "none"),
    ("seq", "clustering", 0, "int", "asc"),
    ("name", "regular", -1, "text", "none"),
    ("code", "regular", -1, "ascii", "none"),
    ("score", "regular", -1, "double", "none"),
    ("ratio", "regular", -1, "float", "none"),
    ("at", "regular", -1, "timestamp", "none"),
    ("day", "regular", -1, "date", "none"),
    ("flag", "regular", -1, "boolean", "none"),
    ("u", "regular", -1, "uuid", "none"),
    ("tu", "regular", -1, "timeuuid", "none"),
    ("raw", "regular", -1, "blob", "none"),
    ("small", "regular", -1, "smallint", "none"),
    ("amount", "regular", -1, "decimal", "none"),
    ("tags", "regular", -1, "list<text>", "none"),
    ("nums", "regular", -1, "set<int>", "none"),
    ("props", "regular", -1, "map<text, int>", "none"),
    ("pair", "regular", -1, "frozen<tuple<int, text>>", "none"),
]
COMPOSITE = [
    ("a", "partition_key", 0, "int", "none"),
    ("b", "partition_key", 1, "text", "none"),
    ("c", "clustering", 0, "text", "desc"),
    ("d", "clustering", 1, "timestamp", "asc"),
    ("note", "static", -1, "text", "none"),
    ("v", "regular", -1, "bigint", "none"),
    ("items", "regular", -1, "list<int>", "none"),
]
UNIQUE = {"seq", "d"}
"""The last clustering column is unique per input row (but for its bad values): repeated rows
are not compared here, as list elements of two rows written at one timestamp pile up in the
INSERT's numbering and overwrite each other by position in the file load's."""

GOOD: dict[str, list[str]] = {
    "bigint": ["0", "-7", "123456789012", "9223372036854775807", " 12", "+5", "007"],
    "int": ["1", "-2147483648", "2147483647", "42", " 3 "],
    "smallint": ["1", "-32768", "32767", "٣"],
    "text": ["a", "", "héllo", "x\x00y", "name, with comma"],
    "ascii": ["abc", ""],
    "double": ["1.5", "-0", ".5", "5.", "1e10", "NaN", "-Infinity", "1E-400", " 2.5"],
    "float": ["1.5", "3.4e39", "0.1"],
    "timestamp": [
        "2024-01-01T00:00:05Z",
        "2024-01-01 00:00:05",
        "2024-01-01T00:00:05.1Z",
        "1969-12-31T23:59:59.999Z",
        "2024-01-01T00:00:05+02:00",
        "1700000000000",
    ],
    "date": ["2024-02-29", "1970-01-01", "0001-01-01", "2147483648"],
    "boolean": ["true", "FALSE", "True"],
    "uuid": [str(uuid.UUID(int=5)), str(uuid.uuid4()).upper(), "{" + str(uuid.UUID(int=9)) + "}"],
    "timeuuid": ["8f2a6a2e-8c4c-11ee-b9d1-0242ac120002"],
    "blob": ["0x", "0x00ff", "0xAbCd"],
    "decimal": ["1.50", "-3", "1e-5"],
    "list<text>": ['["a", "b"]', "[]", '["x"]'],
    "list<int>": ["[1, 2, 3]", "[]"],
    "set<int>": ["[3, 1, 3]", "[]"],
    "map<text, int>": ['{"k": 1, "j": 2}', "{}"],
    "frozen<tuple<int, text>>": ['[1, "p"]', "[2]"],
}
BAD: dict[str, list[str]] = {
    "bigint": ["x", "1.5", "99999999999999999999"],
    "int": ["2147483648", "1e3"],
    "smallint": ["32768"],
    "ascii": ["é"],
    "double": ["1,5", "inf", "0x10"],
    "float": ["x"],
    "timestamp": ["2024-02-30T00:00:00Z", "2024-01-01T24:00:00", "yesterday"],
    "date": ["2024-02-30", "2024-13-01"],
    "boolean": ["yes", "1"],
    "uuid": ["not-a-uuid"],
    "timeuuid": [str(uuid.UUID(int=5))],
    "blob": ["0xabc", "0xzz", "abcd"],
    "decimal": ["1.2.3"],
    "list<text>": ['["a", 1]', "[null]", "not json", '{"a": 1}'],
    "list<int>": ['["a"]', "[1.5]"],
    "set<int>": ["[2147483648]"],
    "map<text, int>": ['{"k": "x"}'],
    "frozen<tuple<int, text>>": ["[1, 2, 3]"],
}


def _schema(columns: list[tuple[str, str, int, str, str]]) -> tuple[TableSchema, Any]:
    rows = [{"column_name": n, "kind": k, "position": p, "type": t} for n, k, p, t, _ in columns]
    schema = table_schema_from_rows("ks", "t", str(uuid.uuid4()), rows, [])
    return schema, table_def(schema, {n: o for n, _, _, _, o in columns})


def _value(rng: random.Random, cql_type: str, key: bool) -> str | None:
    if rng.random() < 0.08 and not key:
        return None
    if rng.random() < 0.06:
        return rng.choice(BAD.get(cql_type, ["\x00bad"]) or ["x"])
    if key and cql_type == "text" and rng.random() < 0.02:
        return "x" * 65_536  # too long for a key component
    if key and cql_type == "int" and rng.random() < 0.5:
        return str(rng.randrange(-3, 3))  # repeated partitions
    return rng.choice(GOOD[cql_type])


def _batch(columns: list[tuple[str, str, int, str, str]], count: int, seed: int) -> pa.RecordBatch:
    rng = random.Random(seed)
    names = [c[0] for c in columns]
    data: dict[str, list[str | None]] = {n: [] for n in [*names, CORRUPT]}
    for n in range(count):
        for name, kind, _, cql_type, _ in columns:
            value = _value(rng, cql_type, kind in ("partition_key", "clustering"))
            if name in UNIQUE and value is not None and value not in BAD.get(cql_type, []):
                value = str(seed * 100_000 + n)
            data[name].append(value)
        data[CORRUPT].append("a,b" if rng.random() < 0.02 else None)
    return pa.record_batch([pa.array(v, pa.string()) for v in data.values()], names=list(data))


def _plan(schema: TableSchema, table: Any, names: Sequence[str], last_tokens: tuple[int, ...]) -> FilePlan:
    mapping = map_columns(schema, [n for n in names if n != CORRUPT])
    ranges = tuple((0, 0) for _ in last_tokens) or ((0, 0),)
    replicas = tuple(() for _ in ranges)
    return FilePlan(
        table, schema, mapping, tuple(names), False, last_tokens, ranges, replicas, STAMP, None, None
    )


def _reference(
    plan: FilePlan, batches: list[pa.RecordBatch], path: Path, nows: Sequence[int] | None = None
) -> list[str]:
    """`nows`: each batch's deletion time (NOW for every batch when not given)."""
    check = checker(plan.mapping, list(plan.input_names), spark_form=False)
    columns = plan.columns()
    rejects, mutations = [], []
    for now, row in (
        (n, r) for batch, n in zip(batches, nows or [NOW] * len(batches)) for r in batch.to_pylist()
    ):
        ok, fitted = check(tuple(row.values()))
        if not ok:
            rejects.append(fitted[0])
            continue
        try:
            mutations.append(row_mutation(plan.table, columns, fitted, WriteTime(STAMP, 0, now)))
        except RowNotEncodable as exc:
            rejects.append(str(exc))
    write_tablet_file(path, mutations)
    return rejects


def _columnwise(
    plan: FilePlan, batches: list[pa.RecordBatch], path: Path, nows: Sequence[int] | None = None
) -> list[str]:
    held: dict[int, TabletRows] = {}
    rejects = []
    for batch, now in zip(batches, nows or [NOW] * len(batches)):
        fitted = fit_batch(plan, batch, now)
        rejects += [reason for reason, _ in fitted.rejects]
        for group, chunk in fitted.chunks.items():
            held.setdefault(group, TabletRows(plan.layout)).add(chunk)
    for group, rows in sorted(held.items()):
        write_rows(path.with_name(f"{path.stem}-{group}.db"), plan.layout, plan.columns(), rows.sorted())
    return rejects


def _contents(paths: list[Path], lists: set[str]) -> dict[str, list[tuple[Any, ...]]]:
    """Every data table's rows; list element paths replaced by their rank in their list."""
    out: dict[str, list[tuple[Any, ...]]] = {t: [] for t, _, _ in DATA_TABLES}
    for path in paths:
        conn = sqlite3.connect(path)
        for table, _, _ in DATA_TABLES:
            out[table] += conn.execute(f"SELECT * FROM {table}").fetchall()
        conn.close()
    ranked = []
    for cell in sorted(out["cells"]):
        if cell[3] in lists:
            same = [c for c in ranked if c[:4] == cell[:4]]
            cell = (*cell[:4], len(same), *cell[5:])
        ranked.append(cell)
    out["cells"] = ranked
    return {table: sorted(rows) for table, rows in out.items()}


@pytest.mark.parametrize(("columns", "seed"), [(WIDE, 1), (WIDE, 2), (COMPOSITE, 3), (COMPOSITE, 4)])
def test_columnwise_rows_reject_and_store_exactly_as_row_at_a_time(
    columns: list[tuple[str, str, int, str, str]], seed: int, tmp_path: Path
) -> None:
    schema, table = _schema(columns)
    batches = [_batch(columns, 300, seed * 10 + i) for i in range(3)]
    names = batches[0].schema.names
    last_tokens = (-(2**62), 0, 2**62, 2**63 - 1)
    plan = _plan(schema, table, names, last_tokens)
    nows = [NOW + i for i in range(3)]  # a file's rows then differ in their deletion time (dead cells)
    expected = _reference(plan, batches, tmp_path / "reference.db", nows)
    assert _columnwise(plan, batches, tmp_path / "bulk", nows) == expected
    assert 0 < len(expected) < 900
    lists = {name for name, _, _, cql_type, _ in columns if cql_type.startswith("list")}
    got = _contents(sorted(tmp_path.glob("bulk-*.db")), lists)
    want = _contents([tmp_path / "reference.db"], lists)
    assert got == want
    assert len(got["cells"]) > 500


def test_a_row_loaded_twice_is_stored_once_lists_included(tmp_path: Path) -> None:
    """What makes a rerun of a killed load end with every row once: the same input row writes
    the same cells, list elements too."""
    schema, table = _schema(WIDE)
    batch = _batch(WIDE, 50, 7)
    plan = _plan(schema, table, batch.schema.names, ())
    _columnwise(plan, [batch], tmp_path / "once")
    _columnwise(plan, [batch, batch], tmp_path / "twice")
    once = _contents([tmp_path / "once-0.db"], set())
    assert once == _contents([tmp_path / "twice-0.db"], set())
    assert any(cell[3] == "tags" for cell in once["cells"])


def test_typed_columns_as_spark_hands_parquet_over(tmp_path: Path) -> None:
    """Arrow-typed input (what Spark gives for Parquet): longs, doubles, booleans, bytes,
    timestamps in microseconds (some before 1970 with sub-millisecond digits, floored), dates,
    strings read as text, arrays and structs."""
    import datetime as dt

    schema, table = _schema(WIDE)
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC)
    early = dt.datetime(1969, 12, 31, 23, 59, 59, 998765, tzinfo=dt.UTC)
    count = 200
    columns: dict[str, pa.Array] = {
        "id": pa.array([n // 3 for n in range(count)], pa.int64()),
        "seq": pa.array([n if n % 50 else 2**40 for n in range(count)], pa.int64()),
        "name": pa.array([None if n % 7 == 0 else f"n{n}" for n in range(count)]),
        "score": pa.array([n / 3 for n in range(count)], pa.float64()),
        "at": pa.array(
            [(early if n % 5 == 0 else at) - dt.timedelta(microseconds=n * 777) for n in range(count)],
            pa.timestamp("us", "UTC"),
        ),
        "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=n) for n in range(count)], pa.date32()),
        "flag": pa.array([n % 2 == 0 for n in range(count)], pa.bool_()),
        "u": pa.array([str(uuid.UUID(int=n)) if n % 9 else "bad" for n in range(count)]),
        "raw": pa.array([bytes([n % 256]) for n in range(count)], pa.binary()),
        "small": pa.array([n * 400 for n in range(count)], pa.int32()),
        "tags": pa.array([[f"t{n}", "u"] if n % 4 else None for n in range(count)], pa.list_(pa.string())),
        "pair": pa.array([{"_1": n, "_2": f"p{n}"} for n in range(count)]),
    }
    batch = pa.record_batch(list(columns.values()), names=list(columns))
    plan = _plan(schema, table, batch.schema.names, (0, 2**63 - 1))
    expected = _reference(plan, [batch], tmp_path / "reference.db")
    assert _columnwise(plan, [batch], tmp_path / "bulk") == expected
    assert 0 < len(expected) < count
    got = _contents(sorted(tmp_path.glob("bulk-*.db")), {"tags"})
    assert got == _contents([tmp_path / "reference.db"], {"tags"})


def test_a_tablet_takes_its_rows_of_a_batch_in_order_one_row_too() -> None:
    chunk = Chunk(
        pk=[b"a", b"b", b"c"],
        token=[1, 2, 3],
        ck=[b"", b"", b""],
        ts=[7, 8, 9],
        ttl=[0, 0, 60],
        now=[5, 6, 7],
        native=[[b"x", None, b"z"]],
        other=[[None, None, None]],
    )
    assert _subset(chunk, [1]) == Chunk([b"b"], [2], [b""], [8], [0], [6], [[None]], [[None]])
    both = Chunk([b"a", b"c"], [1, 3], [b"", b""], [7, 9], [0, 60], [5, 7], [[b"x", b"z"]], [[None, None]])
    assert _subset(chunk, [0, 2]) == both
