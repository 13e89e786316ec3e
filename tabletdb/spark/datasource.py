"""The `tabletdb` PySpark data source: `spark.read.format("tabletdb")` / `df.write.format("tabletdb")`.

Options (strings, names case-insensitive):
  hosts (required, comma-separated), port (9042), username, password,
  table (`ks.t`, or `table` with `keyspace`), consistency (LOCAL_QUORUM),
  page_size (1000 rows per page when reading), columns (comma-separated subset to read),
  token_range (`start,end`: read only tokens in `(start, end]`), pushdown (true: `=`/`IN` on
  the partition key and clustering slices answered by the reader, `spark.pushdown`; needs the
  session's `spark.sql.python.filterPushdown.enabled`, which `spark.session` sets),
  concurrency (256 writes in flight per task), batch_rows (2000 rows grouped by tablet per round),
  writetime_column / ttl_column (DataFrame columns holding each row's USING TIMESTAMP / TTL).

Reading (`spark.reading`) makes one input partition per tablet (per vnode range for vnode
tables), each a paged `token(pk) > ? AND token(pk) <= ?` scan, or groups of pushed-down partition
keys, and hands pages over as Arrow batches; the Spark schema is `schema_map.spark_schema` of
the table. Writing appends (no overwrite): see `writer`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from tabletdb.spark.connection import (
    SourceOptions,
    fetch_ring_tokens,
    fetch_table_schema,
    fetch_tablet_last_tokens,
    parse_options,
    session_for,
)
from tabletdb.spark.reading import PushdownReader, TabletdbReader
from tabletdb.spark.schema_map import TableSchema, spark_schema
from tabletdb.spark.writer import WritePlan, write_rows

SOURCE_NAME = "tabletdb"


class TabletdbDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _load(self) -> tuple[SourceOptions, TableSchema]:
        opts = parse_options(self.options)
        session = session_for(opts.connect)
        return opts, fetch_table_schema(session, opts.keyspace, opts.table)

    def schema(self) -> StructType:
        opts, table = self._load()
        return spark_schema(table.select(opts.columns))

    def reader(self, schema: StructType) -> DataSourceReader:
        opts, table = self._load()
        columns = table.select(schema.fieldNames() or opts.columns)
        return (PushdownReader if opts.pushdown else TabletdbReader)(opts, table, columns)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ValueError(
                "the tabletdb data source only appends; use mode('append') (TRUNCATE first if needed)"
            )
        opts, table = self._load()
        session = session_for(opts.connect)
        last_tokens = fetch_tablet_last_tokens(session, table.table_id) or sorted(
            set(fetch_ring_tokens(session))
        )
        plan = WritePlan(opts, table, tuple(schema.fieldNames()), tuple(last_tokens))
        plan.check()
        return TabletdbWriter(plan)


class WriteResult(WriterCommitMessage):
    def __init__(self, rows: int) -> None:
        self.rows = rows


class TabletdbWriter(DataSourceWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return WriteResult(write_rows(self.plan, iterator))
