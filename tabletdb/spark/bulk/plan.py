"""What every file-load task needs, built on the driver and pickled to the tasks (plain values)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from tabletdb.cql.types import NativeType
from tabletdb.schema.model import ColumnDef, TableDef
from tabletdb.spark.backup_rest import Credentials
from tabletdb.spark.bulk.columns import is_key
from tabletdb.spark.coerce import ColumnMapping
from tabletdb.spark.schema_map import STATIC, TableSchema
from tabletdb.statements.cells import is_multi_cell

FLUSH_ROWS = 100_000
"""Rows of one tablet a task holds before it sends them as a file (memory bound per task)."""


@dataclass(frozen=True)
class FilePlan:
    table: TableDef
    schema: TableSchema
    mapping: ColumnMapping
    input_names: tuple[str, ...]
    json_lines: bool
    last_tokens: tuple[int, ...]
    """Tablet ends (rows are grouped by tablet); empty for a vnode table (one group)."""
    ranges: tuple[tuple[int, int], ...]
    replicas: tuple[tuple[tuple[str, int], ...], ...]
    """Per group: the REST endpoints of its replicas (a vnode table: every node)."""
    timestamp: int
    writetime_at: int | None
    ttl_at: int | None
    credentials: Credentials | None = field(default=None, repr=False)
    flush_rows: int = FLUSH_ROWS

    def columns(self) -> tuple[ColumnDef, ...]:
        """The table's definitions of the mapped columns, in the mapping's order."""
        found = tuple(self.table.column(c.name) for c in self.mapping.columns)
        assert all(c is not None for c in found)
        return found  # type: ignore[return-value]

    @cached_property
    def layout(self) -> Layout:
        return Layout.of(self)


@dataclass(frozen=True)
class Layout:
    """Where each kind of column is among the mapped ones (indexes into `FilePlan.columns()`)."""

    partition: tuple[int, ...]
    """The partition key columns, in the key's order."""
    clustering: tuple[int, ...]
    native: tuple[int, ...]
    """Regular and static columns of native types: one serialized cell each."""
    other: tuple[int, ...]
    """Regular and static columns of other types (collections, tuples, UDTs)."""
    has_static: bool
    has_collections: bool
    """Some column is a non-frozen collection: every row writes its collection tombstone."""

    @staticmethod
    def of(plan: FilePlan) -> Layout:
        names = [c.name for c in plan.mapping.columns]
        defs = plan.columns()
        values = [i for i, c in enumerate(plan.mapping.columns) if not is_key(c)]
        return Layout(
            partition=tuple(names.index(c.name) for c in plan.table.partition_key),
            clustering=tuple(names.index(c.name) for c in plan.table.clustering_key),
            native=tuple(i for i in values if isinstance(defs[i].type, NativeType)),
            other=tuple(i for i in values if not isinstance(defs[i].type, NativeType)),
            has_static=any(plan.mapping.columns[i].kind == STATIC for i in values),
            has_collections=any(is_multi_cell(defs[i].type) for i in values),
        )
