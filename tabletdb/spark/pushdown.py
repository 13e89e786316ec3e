"""Which of Spark's filters the data source answers itself, and the CQL that does it (pure).

Spark hands a reader the conjunction of a query's filters (``DataSourceReader.pushFilters``);
what the reader keeps, the server evaluates and Spark does not see again:

* **Partition key**: ``=`` or ``IN`` on every partition key column names the partitions; the
  read is then one ``WHERE pk = ?`` query per key (their cartesian product, at most
  ``MAX_KEYS``) instead of a scan of every tablet.
* **Clustering slice**: ``=`` on a prefix of the clustering columns, then ``<``, ``<=``, ``>``,
  ``>=`` on the next one: the clustering restriction CQL accepts, appended to each key read or
  to each tablet's token-range scan (``ALLOW FILTERING`` there; the server still reads only the
  slice of each partition).

Only types whose order and equality are the same in Spark and CQL are pushed (integers, text,
blob, date, and equality on uuid, boolean, inet); floats (NaN), timestamps (Spark's
microseconds against CQL's milliseconds), decimals and collections stay with Spark. Every other
filter is returned to Spark unchanged, which evaluates it after the read.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from tabletdb.cql.identifiers import quote_identifier
from tabletdb.cql.types import NativeType
from tabletdb.spark.schema_map import CLUSTERING, PARTITION_KEY, Column, TableSchema
from tabletdb.spark.values import ValueConversionError, to_driver

MAX_KEYS = 10_000
"""Partition keys a pushed ``=``/``IN`` may name; more are left to a scan and Spark's filter."""

ORDERED = frozenset({"tinyint", "smallint", "int", "bigint", "text", "ascii", "varchar", "blob", "date"})
"""Types whose CQL order is Spark's (signed integers, UTF-8 / unsigned bytes, days). Not varint:
Spark holds it as a string, which orders "10" before "9"."""
EQUAL_ONLY = frozenset({"boolean", "uuid", "timeuuid", "inet"})
"""Types whose equality is alike but whose order differs (uuid versions, addresses); the ones
Spark holds as strings only when the filter's string is the value's canonical text, which is
what Spark reads ("ABC..." is no uuid Spark ever shows, though CQL would match it)."""
_TEXT_FORM = frozenset({"uuid", "timeuuid", "inet"})

_RANGE_OPS = {GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}


@dataclass(frozen=True)
class Pushed:
    """What the reader answers itself: partition keys (driver values in key order; None: not
    pinned) and clustering restrictions (column, operator, driver value) in CQL order."""

    keys: tuple[tuple[Any, ...], ...] | None = None
    clustering: tuple[tuple[str, str, Any], ...] = ()

    def where(self) -> str:
        """The clustering restrictions as CQL conditions with markers (empty: none)."""
        return " AND ".join(f"{quote_identifier(c)} {op} ?" for c, op, _ in self.clustering)

    def values(self) -> list[Any]:
        return [v for _, _, v in self.clustering]


def push(filters: Sequence[Filter], table: TableSchema) -> tuple[Pushed, list[Filter]]:
    """(what the reader answers, the filters Spark must still evaluate, by reference)."""
    left = list(filters)
    keys = _keys(left, table)
    clustering = _clustering(left, table)
    return Pushed(keys, tuple(clustering)), left


def _column(f: Filter, table: TableSchema) -> Column | None:
    path: tuple[str, ...] = getattr(f, "attribute", ())
    if len(path) != 1:
        return None
    for c in table.columns:
        if c.name == path[0]:
            return c
    return None


def _driver(column: Column, value: Any, allowed: frozenset[str]) -> tuple[bool, Any]:
    t = column.cql_type
    if value is None or not isinstance(t, NativeType) or t.name not in allowed:
        return False, None
    try:
        converted = to_driver(t, value)
    except ValueConversionError:
        return False, None
    if t.name in _TEXT_FORM and str(converted) != value:
        return False, None
    return True, converted


def _keys(left: list[Filter], table: TableSchema) -> tuple[tuple[Any, ...], ...] | None:
    per_column: dict[str, tuple[Filter, list[Any]]] = {}
    for f in left:
        column = _column(f, table)
        if column is None or column.kind != PARTITION_KEY or column.name in per_column:
            continue
        raw = [f.value] if isinstance(f, EqualTo) else list(f.value) if isinstance(f, In) else None
        if raw is None:
            continue
        converted = [_driver(column, v, ORDERED | EQUAL_ONLY) for v in raw]
        if converted and all(ok for ok, _ in converted):
            per_column[column.name] = (f, list(dict.fromkeys(v for _, v in converted)))
    pk = table.partition_key
    if any(c.name not in per_column for c in pk):
        return None
    product = 1
    for c in pk:
        product *= len(per_column[c.name][1])
    if product > MAX_KEYS:
        return None
    for f, _ in per_column.values():
        left.remove(f)
    return tuple(itertools.product(*(per_column[c.name][1] for c in pk)))


def _clustering(left: list[Filter], table: TableSchema) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for column in (c for c in table.columns if c.kind == CLUSTERING):
        mine = [f for f in left if (c := _column(f, table)) is not None and c.name == column.name]
        equal = next((f for f in mine if isinstance(f, EqualTo)), None)
        if equal is not None:
            ok, value = _driver(column, equal.value, ORDERED | EQUAL_ONLY)
            if not ok:
                return out
            out.append((column.name, "=", value))
            left.remove(equal)
            continue
        for f in mine:
            op = _RANGE_OPS.get(type(f))
            if op is None:
                continue
            ok, value = _driver(column, getattr(f, "value", None), ORDERED)
            if ok:
                out.append((column.name, op, value))
                left.remove(f)
        return out
    return out
