"""The `tabletdb` PySpark data source: `spark.read.format("tabletdb")` / `df.write.format("tabletdb")`.

Options (strings, names case-insensitive):
  hosts (required, comma-separated), port (9042), username, password,
  table (`ks.t`, or `table` with `keyspace`), consistency (LOCAL_QUORUM),
  page_size (1000 rows per page when reading), columns (comma-separated subset to read),
  token_range (`start,end`: read only tokens in `(start, end]`),
  concurrency (256 writes in flight per task), batch_rows (2000 rows grouped by tablet per round),
  writetime_column / ttl_column (DataFrame columns holding each row's USING TIMESTAMP / TTL).

Reading makes one input partition per tablet (per vnode range for vnode tables), each a paged
`token(pk) > ? AND token(pk) <= ?` scan; the Spark schema is `schema_map.spark_schema` of the
table. Writing appends (no overwrite): see `writer`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.spark.connection import (
    SourceOptions,
    fetch_ring_tokens,
    fetch_table_schema,
    fetch_tablet_last_tokens,
    parse_options,
    qualified,
    session_for,
)
from tabletdb.spark.ranges import ScanPlan, plan_scans, ring_ranges, tablet_ranges
from tabletdb.spark.schema_map import Column, TableSchema, spark_schema
from tabletdb.spark.values import to_spark
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
        return TabletdbReader(opts, table, table.select(schema.fieldNames() or opts.columns))

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


class ScanPartition(InputPartition):
    def __init__(self, plan: ScanPlan) -> None:
        super().__init__(plan)
        self.plan = plan


class TabletdbReader(DataSourceReader):
    def __init__(self, opts: SourceOptions, table: TableSchema, columns: Sequence[Column]) -> None:
        self.opts = opts
        self.table = table
        self.columns = tuple(columns)

    def partitions(self) -> Sequence[InputPartition]:
        session = session_for(self.opts.connect)
        last_tokens = fetch_tablet_last_tokens(session, self.table.table_id)
        ranges = tablet_ranges(last_tokens) if last_tokens else ring_ranges(fetch_ring_tokens(session))
        return [ScanPartition(p) for p in plan_scans(ranges, self.opts.token_range)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, ScanPartition)
        from cassandra import ConsistencyLevel

        session = session_for(self.opts.connect)
        statement = session.prepare(scan_cql(self.table, self.columns))
        statement.consistency_level = ConsistencyLevel.name_to_value[self.opts.consistency]
        statement.fetch_size = self.opts.page_size
        types = [c.cql_type for c in self.columns]
        for start, end in partition.plan.ranges:
            for row in session.execute(statement, (start, end)):
                yield tuple(to_spark(t, v) for t, v in zip(types, row))


def scan_cql(table: TableSchema, columns: Sequence[Column]) -> str:
    token = f"token({', '.join(quote_identifier(c.name) for c in table.partition_key)})"
    selected = ", ".join(quote_identifier(c.name) for c in columns)
    return (
        f"SELECT {selected} FROM {qualified(table.keyspace, table.table)} WHERE {token} > ? AND {token} <= ?"
    )


class WriteResult(WriterCommitMessage):
    def __init__(self, rows: int) -> None:
        self.rows = rows


class TabletdbWriter(DataSourceWriter):
    def __init__(self, plan: WritePlan) -> None:
        self.plan = plan

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return WriteResult(write_rows(self.plan, iterator))
