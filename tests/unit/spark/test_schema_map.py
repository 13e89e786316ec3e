"""Table schemas from system_schema rows, and their Spark types."""

from __future__ import annotations

import pytest
from pyspark.sql import types as st

from tabletdb.cql import types as T
from tabletdb.spark.schema_map import (
    DURATION_STRUCT,
    SchemaError,
    spark_schema,
    spark_type,
    table_schema_from_rows,
)


def _col(name: str, kind: str, position: int, type_text: str) -> dict[str, object]:
    return {"column_name": name, "kind": kind, "position": position, "type": type_text}


TYPES = [
    {"type_name": "addr", "field_names": ["street", "zip"], "field_types": ["text", "int"]},
    {"type_name": "person", "field_names": ["name", "home"], "field_types": ["text", "frozen<addr>"]},
]


def test_columns_come_in_key_order_and_udts_resolve_recursively() -> None:
    rows = [
        _col("v", "regular", -1, "map<text, frozen<person>>"),
        _col("c2", "clustering", 1, "timeuuid"),
        _col("k", "partition_key", 0, "int"),
        _col("a", "regular", -1, "list<int>"),
        _col("c1", "clustering", 0, "text"),
        _col("s", "static", -1, "duration"),
    ]
    schema = table_schema_from_rows("ks", "t", None, rows, TYPES)
    assert [c.name for c in schema.columns] == ["k", "c1", "c2", "s", "a", "v"]
    assert [c.name for c in schema.partition_key] == ["k"]
    person = schema.column("v").cql_type
    assert isinstance(person, T.MapType) and isinstance(person.value, T.UserType)
    home = person.value.field_types[1]
    assert home == T.UserType("ks", "addr", ("street", "zip"), (T.TEXT, T.INT), True)
    spark = spark_schema(schema.select(["k", "v"]))
    assert spark["k"].nullable is False
    assert spark["v"].dataType == st.MapType(
        st.StringType(),
        st.StructType(
            [
                st.StructField("name", st.StringType()),
                st.StructField(
                    "home",
                    st.StructType(
                        [st.StructField("street", st.StringType()), st.StructField("zip", st.IntegerType())]
                    ),
                ),
            ]
        ),
    )


@pytest.mark.parametrize(
    ("cql", "spark"),
    [
        ("varint", st.StringType()),
        ("decimal", st.StringType()),
        ("counter", st.LongType()),
        ("tinyint", st.ByteType()),
        ("time", st.LongType()),
        ("date", st.DateType()),
        ("timestamp", st.TimestampType()),
        ("duration", DURATION_STRUCT),
        ("frozen<set<inet>>", st.ArrayType(st.StringType(), False)),
        ("vector<float, 3>", st.ArrayType(st.FloatType())),
        (
            "tuple<int, blob>",
            st.StructType([st.StructField("_1", st.IntegerType()), st.StructField("_2", st.BinaryType())]),
        ),
        (
            "map<frozen<list<int>>, text>",
            st.ArrayType(
                st.StructType(
                    [
                        st.StructField("key", st.ArrayType(st.IntegerType()), False),
                        st.StructField("value", st.StringType()),
                    ]
                ),
                False,
            ),
        ),
    ],
)
def test_spark_types(cql: str, spark: st.DataType) -> None:
    schema = table_schema_from_rows("ks", "t", None, [_col("x", "regular", -1, cql)], [])
    assert spark_type(schema.columns[0].cql_type) == spark


def test_missing_table_and_unknown_names_are_explained() -> None:
    with pytest.raises(SchemaError, match="does not exist"):
        table_schema_from_rows("ks", "t", None, [], [])
    with pytest.raises(SchemaError, match=r"user type ks.nope"):
        table_schema_from_rows("ks", "t", None, [_col("x", "regular", -1, "frozen<nope>")], [])
    schema = table_schema_from_rows("ks", "t", None, [_col("k", "partition_key", 0, "int")], [])
    with pytest.raises(SchemaError, match="has no column 'z'; it has k"):
        schema.select(["z"])
