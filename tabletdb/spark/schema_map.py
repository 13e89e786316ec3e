"""A CQL table's columns as Spark sees them.

The data source learns a table's shape from `system_schema.columns` and `system_schema.types`
rows (plain dicts here, so this module needs no server and no driver) and maps every CQL type to
a Spark type. The mapping is lossless; where Spark has no exact type the value goes as text:

| CQL | Spark |
|---|---|
| ascii, text | string |
| tinyint, smallint, int, bigint, counter | byte, short, integer, long (long for counter) |
| float, double, boolean, blob | float, double, boolean, binary |
| varint, decimal | **string**: exact digits (CQL has no size limit, Spark's decimal stops at |
|  | 38 digits); `cast` in Spark where a number is wanted |
| uuid, timeuuid, inet | string (canonical text form) |
| timestamp | timestamp (UTC instant, millisecond precision) |
| date | date (years 1-9999: Python's range) |
| time | long (nanoseconds since midnight) |
| duration | struct<months: int, days: int, nanoseconds: long> |
| list, set, vector | array (sets in CQL order) |
| map | map (with a frozen collection, tuple or UDT key: array<struct<key, value>>) |
| tuple | struct<_1, _2, ...> |
| user type | struct with the type's field names |
| custom | binary (the opaque serialized value) |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as st

from tabletdb.cql.parser import parse_type
from tabletdb.cql.types import (
    CqlType,
    CustomType,
    ListType,
    MapType,
    NativeType,
    SetType,
    TupleType,
    UserType,
    UserTypeRef,
    VectorType,
)

PARTITION_KEY = "partition_key"
CLUSTERING = "clustering"
STATIC = "static"
REGULAR = "regular"

_NATIVE_SPARK: dict[str, st.DataType] = {
    "ascii": st.StringType(),
    "text": st.StringType(),
    "tinyint": st.ByteType(),
    "smallint": st.ShortType(),
    "int": st.IntegerType(),
    "bigint": st.LongType(),
    "counter": st.LongType(),
    "float": st.FloatType(),
    "double": st.DoubleType(),
    "boolean": st.BooleanType(),
    "blob": st.BinaryType(),
    "varint": st.StringType(),
    "decimal": st.StringType(),
    "uuid": st.StringType(),
    "timeuuid": st.StringType(),
    "inet": st.StringType(),
    "timestamp": st.TimestampType(),
    "date": st.DateType(),
    "time": st.LongType(),
}

DURATION_STRUCT = st.StructType(
    [
        st.StructField("months", st.IntegerType(), False),
        st.StructField("days", st.IntegerType(), False),
        st.StructField("nanoseconds", st.LongType(), False),
    ]
)


class SchemaError(Exception):
    """The table (or a type it uses) cannot be found or understood."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # partition_key | clustering | static | regular
    position: int
    cql_type: CqlType


@dataclass(frozen=True)
class TableSchema:
    keyspace: str
    table: str
    table_id: str | None
    columns: tuple[Column, ...]  # partition key, clustering, then the rest by name

    @property
    def partition_key(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind == PARTITION_KEY)

    @property
    def primary_key(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind in (PARTITION_KEY, CLUSTERING))

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise SchemaError(
            f"table {self.keyspace}.{self.table} has no column {name!r}; it has "
            + ", ".join(c.name for c in self.columns)
        )

    def select(self, names: Sequence[str] | None) -> tuple[Column, ...]:
        """The named columns in the given order (all of them for None)."""
        if not names:
            return self.columns
        return tuple(self.column(n) for n in names)


def spark_type(t: CqlType) -> st.DataType:
    """The Spark type holding values of CQL type `t` (see the module table)."""
    if isinstance(t, NativeType):
        if t.name == "duration":
            return DURATION_STRUCT
        return _NATIVE_SPARK[t.name]
    if isinstance(t, ListType | SetType | VectorType):
        return st.ArrayType(spark_type(t.element), containsNull=not isinstance(t, SetType))
    if isinstance(t, MapType):
        if has_complex_keys(t):
            entry = [
                st.StructField("key", spark_type(t.key), False),
                st.StructField("value", spark_type(t.value), True),
            ]
            return st.ArrayType(st.StructType(entry), containsNull=False)
        return st.MapType(spark_type(t.key), spark_type(t.value), valueContainsNull=True)
    if isinstance(t, TupleType):
        return st.StructType(
            [st.StructField(f"_{i + 1}", spark_type(e), True) for i, e in enumerate(t.elements)]
        )
    if isinstance(t, UserType):
        return st.StructType(
            [st.StructField(n, spark_type(ft), True) for n, ft in zip(t.field_names, t.field_types)]
        )
    if isinstance(t, CustomType):
        return st.BinaryType()
    raise SchemaError(f"no Spark type for unresolved CQL type {t.cql()}")


def has_complex_keys(t: MapType) -> bool:
    """Python dict keys must hash, so a map keyed by a collection, tuple or UDT cannot be a Spark
    map on the Python side: it becomes an array of (key, value) structs in CQL key order."""
    return not isinstance(t.key, NativeType)


def spark_schema(columns: Iterable[Column]) -> st.StructType:
    """Key columns are non-nullable: CQL never returns a row without them."""
    return st.StructType(
        [
            st.StructField(c.name, spark_type(c.cql_type), c.kind not in (PARTITION_KEY, CLUSTERING))
            for c in columns
        ]
    )


def resolve_user_types(
    t: CqlType, keyspace: str, types: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]
) -> CqlType:
    """Replace UDT references by resolved UserTypes, from `types`: name -> (field names, field type texts)."""
    if isinstance(t, UserTypeRef):
        if t.name not in types:
            raise SchemaError(f"user type {keyspace}.{t.name} is not in system_schema.types")
        names, type_texts = types[t.name]
        fields = tuple(resolve_user_types(parse_type(ft), keyspace, types) for ft in type_texts)
        return UserType(keyspace, t.name, tuple(names), fields, t.frozen)
    if isinstance(t, ListType):
        return ListType(resolve_user_types(t.element, keyspace, types), t.frozen)
    if isinstance(t, SetType):
        return SetType(resolve_user_types(t.element, keyspace, types), t.frozen)
    if isinstance(t, MapType):
        return MapType(
            resolve_user_types(t.key, keyspace, types), resolve_user_types(t.value, keyspace, types), t.frozen
        )
    if isinstance(t, TupleType):
        return TupleType(tuple(resolve_user_types(e, keyspace, types) for e in t.elements))
    if isinstance(t, VectorType):
        return VectorType(resolve_user_types(t.element, keyspace, types), t.dimension)
    return t


_KIND_ORDER = {PARTITION_KEY: 0, CLUSTERING: 1, STATIC: 2, REGULAR: 3}


def table_schema_from_rows(
    keyspace: str,
    table: str,
    table_id: str | None,
    column_rows: Iterable[Mapping[str, Any]],
    type_rows: Iterable[Mapping[str, Any]],
) -> TableSchema:
    """Build the schema from `system_schema.columns` rows (column_name, kind, position, type) and
    `system_schema.types` rows (type_name, field_names, field_types) of the keyspace."""
    types = {r["type_name"]: (tuple(r["field_names"]), tuple(r["field_types"])) for r in type_rows}
    columns = []
    for r in column_rows:
        kind = r["kind"]
        if kind not in _KIND_ORDER:
            raise SchemaError(f"column {r['column_name']!r} of {keyspace}.{table} has unknown kind {kind!r}")
        cql_type = resolve_user_types(parse_type(r["type"]), keyspace, types)
        columns.append(Column(r["column_name"], kind, int(r["position"]), cql_type))
    if not columns:
        raise SchemaError(f"table {keyspace}.{table} does not exist (no rows in system_schema.columns)")
    columns.sort(
        key=lambda c: (
            _KIND_ORDER[c.kind],
            c.position if c.kind in (PARTITION_KEY, CLUSTERING) else 0,
            c.name,
        )
    )
    return TableSchema(keyspace, table, table_id, tuple(columns))
