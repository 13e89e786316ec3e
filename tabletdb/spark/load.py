"""`tabletdb load`: a file (Parquet, CSV or JSON lines) into a table through Spark.

Each input row is fitted to the table (`coerce`); rows that fit are written by the `tabletdb` data
source, rows that do not go, with the reason and the original record, as JSON lines to the rejects
directory. The summary counts both, so `read == loaded + rejected` always holds: nothing is
dropped silently. A CQL error while writing fails the load (Spark retries the task first).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as st

from tabletdb.spark.coerce import ColumnMapping, RowRejected, fit_row, json_object_row, map_columns
from tabletdb.spark.connection import SOURCE_NAME, SourceOptions, fetch_table_schema, session_for
from tabletdb.spark.input_options import FORMATS, CsvOptions
from tabletdb.spark.schema_map import TableSchema, spark_schema

CORRUPT = "_corrupt_record"
REJECT_SCHEMA = st.StructType(
    [st.StructField("reason", st.StringType()), st.StructField("record", st.StringType())]
)


class LoadError(Exception):
    """The load cannot start or did not finish; the message says why."""


@dataclass(frozen=True)
class LoadSummary:
    read: int
    loaded: int
    rejected: int
    rejects_path: str | None
    seconds: float


StepReporter = Callable[[str, int | None, str], Any]
"""Called as each step starts: its name, its total and the total's unit ("bytes" or "rows");
an empty name once the last step is done."""
Checked = tuple[bool, Any]  # (True, fitted row) or (False, (reason, record json))


def record_json(names: list[str], row: Any) -> str:
    return json.dumps(dict(zip(names, row)), default=str, ensure_ascii=False)


def checker(mapping: ColumnMapping, names: list[str], *, spark_form: bool = True) -> Callable[[Any], Checked]:
    """Fits a CSV or Parquet row (fields in `names` order) to the table, or says why not."""
    corrupt_at = names.index(CORRUPT) if CORRUPT in names else None

    def check(row: Any) -> Checked:
        if corrupt_at is not None and row[corrupt_at] is not None:
            return False, ("malformed record (wrong number of fields or bad quoting)", row[corrupt_at])
        try:
            return True, fit_row(mapping, row, spark_form=spark_form)
        except RowRejected as exc:
            return False, (str(exc), record_json(names, row))

    return check


def json_checker(
    table: TableSchema, mapping: ColumnMapping, *, spark_form: bool = True
) -> Callable[[Any], Checked]:
    """Fits a JSON-lines row (the line as its one field) to the table, or says why not."""

    def check(row: Any) -> Checked:
        line = row[0]
        try:
            obj = json.loads(line, parse_float=Decimal)
            return True, fit_row(mapping, json_object_row(table, obj, mapping.extras), spark_form=spark_form)
        except json.JSONDecodeError as exc:
            return False, (f"not valid JSON: {exc}", line)
        except RowRejected as exc:
            return False, (str(exc), line)

    return check


def csv_source(
    spark: SparkSession, table: TableSchema, path: str, csv: CsvOptions
) -> tuple[DataFrame, list[str]]:
    """The CSV as strings plus the corrupt-record field; without a header the fields are the
    table's columns in order. Returns the frame and the input's field names. A local CSV none of
    whose fields spans lines is read line by line (`CsvOptions.for_input`): Spark splits it."""
    reader_options = csv.for_input(path).spark_options()
    if csv.header:
        names = spark.read.options(**reader_options).csv(path).columns
    else:
        names = [c.name for c in table.columns]
    schema = st.StructType([st.StructField(n, st.StringType()) for n in [*names, CORRUPT]])
    source = (
        spark.read.options(**reader_options)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .schema(schema)
        .csv(path)
    )
    return source, names


def _checked_rows(  # returns (RDD of Checked, mapping); pyspark.rdd has no type hints
    spark: SparkSession,
    table: TableSchema,
    path: str,
    fmt: str,
    extras: tuple[str, ...],
    csv: CsvOptions,
) -> tuple[Any, ColumnMapping]:
    if fmt == "json":
        mapping = map_columns(table, [*(c.name for c in table.columns), *extras], extras)
        lines = spark.read.text(path)
        return lines.rdd.filter(lambda r: bool(r[0].strip())).map(json_checker(table, mapping)), mapping
    if fmt == "csv":
        source, _ = csv_source(spark, table, path, csv)
    else:
        source = spark.read.parquet(path)
    names = source.columns
    mapping = map_columns(table, [n for n in names if n != CORRUPT], extras)
    return source.rdd.map(checker(mapping, names)), mapping


SPREAD_BYTES = 1 << 20
"""Input bytes per write task at most (up to `SPREAD_MAX` tasks): progress moves per task."""
SPREAD_MAX = 256


def _spread(spark: SparkSession, rdd: Any, size: int | None) -> Any:
    """At least a few partitions per core, and about one per MB of input: a multi-line CSV (not
    splittable) or a small file is read by one task, and the writes and the progress display
    (which advances as tasks finish) need more than one."""
    wanted = 4 * max(1, int(spark.sparkContext.defaultParallelism))
    wanted = max(wanted, min(SPREAD_MAX, (size or 0) // SPREAD_BYTES))
    return rdd.repartition(wanted) if rdd.getNumPartitions() < wanted else rdd


def input_bytes(path: str) -> int | None:
    """Size of a local input file or directory (None for a URI Spark reads itself)."""
    local = Path(path)
    if "://" in path or not local.exists():
        return None
    if local.is_file():
        return local.stat().st_size
    return sum(p.stat().st_size for p in local.rglob("*") if p.is_file())


def check_load_paths(path: str, fmt: str, rejects_dir: str) -> None:
    """LoadError before any Spark work when the input, its format or the rejects location is wrong
    (both load paths: rows over CQL and per-tablet files)."""
    if fmt not in FORMATS:
        raise LoadError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if not Path(path).exists() and "://" not in path:
        raise LoadError(f"input {path} does not exist")
    if Path(rejects_dir).exists():
        raise LoadError(
            f"rejects location {rejects_dir} already exists; pick a new one (it is never overwritten)"
        )


def run_load(
    spark: SparkSession,
    options: SourceOptions,
    raw_options: dict[str, str],
    path: str,
    fmt: str,
    rejects_dir: str,
    progress: StepReporter | None = None,
    csv: CsvOptions | None = None,
) -> LoadSummary:
    """Load `path` into the table named by `options`; `raw_options` go to the data source as given."""
    check_load_paths(path, fmt, rejects_dir)
    started = time.monotonic()
    table = fetch_table_schema(session_for(options.connect), options.keyspace, options.table)
    extras = tuple(e for e in (options.writetime_column, options.ttl_column) if e)
    checked, mapping = _checked_rows(spark, table, path, fmt, extras, csv or CsvOptions())
    size = input_bytes(path)
    checked = _spread(spark, checked, size).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        step(progress, "reading and checking rows", size, "bytes")
        read = checked.count()
        bad = checked.filter(lambda c: not c[0]).map(lambda c: c[1])
        rejected = bad.count()
        good = spark.createDataFrame(
            checked.filter(lambda c: c[0]).map(lambda c: c[1]), _target_schema(mapping)
        )
        step(progress, "writing rows", read - rejected, "rows")
        # `--via cql` means CQL whatever the size (the data source's own default picks by size)
        writing = {**raw_options, "method": "cql"}
        good.write.format(SOURCE_NAME).options(**writing).mode("append").save()
        if rejected:
            step(progress, "writing rejects", rejected, "rows")
            spark.createDataFrame(bad, REJECT_SCHEMA).write.json(rejects_dir)
        step(progress, "", None, "")  # the last step is done
    finally:
        checked.unpersist()
    return LoadSummary(
        read, read - rejected, rejected, rejects_dir if rejected else None, time.monotonic() - started
    )


def _target_schema(mapping: ColumnMapping) -> st.StructType:
    schema = spark_schema(mapping.columns)
    for extra in mapping.extras:
        schema = schema.add(extra, st.LongType(), True)
    return schema


def step(progress: StepReporter | None, name: str, total: int | None, unit: str) -> None:
    if progress is not None:
        progress(name, total, unit)


def read_rejects(rejects_dir: str) -> Iterator[dict[str, str]]:
    """The rejects written by a load, for tests and tools (JSON lines in part files)."""
    for part in sorted(Path(rejects_dir).glob("part-*")):
        for line in part.read_text().splitlines():
            if line.strip():
                yield json.loads(line)
