"""Which Spark filters the reader answers (``spark.pushdown``), and the CQL it reads with."""

from __future__ import annotations

import datetime as dt
import uuid

from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, LessThanOrEqual, StringContains

from tabletdb.cql.types import BIGINT, DOUBLE, INT, TEXT, TIMESTAMP, UUID, VARINT
from tabletdb.spark.pushdown import MAX_KEYS, Pushed, push
from tabletdb.spark.reading import key_cql, scan_cql
from tabletdb.spark.schema_map import CLUSTERING, PARTITION_KEY, REGULAR, Column, TableSchema

TABLE = TableSchema(
    "ks",
    "t",
    None,
    (
        Column("a", PARTITION_KEY, 0, INT),
        Column("b", PARTITION_KEY, 1, TEXT),
        Column("c1", CLUSTERING, 0, BIGINT),
        Column("c2", CLUSTERING, 1, TEXT),
        Column("c3", CLUSTERING, 2, INT),
        Column("d", REGULAR, 0, DOUBLE),
        Column("ts", REGULAR, 0, TIMESTAMP),
        Column("u", REGULAR, 0, UUID),
    ),
)


def test_the_whole_partition_key_is_pushed_as_the_product_of_its_values() -> None:
    a, b, other = In(("a",), (1, 2, 2)), EqualTo(("b",), "x"), EqualTo(("d",), 1.5)
    pushed, left = push([a, other, b], TABLE)
    assert pushed.keys == ((1, "x"), (2, "x"))
    assert left == [other] and left[0] is other  # by reference, as Spark requires
    assert pushed.clustering == ()


def test_part_of_the_partition_key_is_left_to_spark() -> None:
    a = EqualTo(("a",), 1)
    pushed, left = push([a], TABLE)
    assert pushed.keys is None and left == [a]


def test_too_many_keys_are_left_to_spark() -> None:
    a = In(("a",), tuple(range(MAX_KEYS + 1)))
    b = EqualTo(("b",), "x")
    pushed, left = push([a, b], TABLE)
    assert pushed.keys is None and left == [a, b]


def test_values_that_do_not_fit_the_column_are_left_to_spark() -> None:
    a, b = EqualTo(("a",), 2**40), EqualTo(("b",), "x")  # no int holds it: nothing matches in CQL either
    pushed, left = push([a, b], TABLE)
    assert pushed.keys is None and left == [a, b]


def test_a_clustering_prefix_of_equalities_then_one_slice() -> None:
    filters = [
        EqualTo(("c1",), 5),
        GreaterThan(("c2",), "m"),
        LessThanOrEqual(("c2",), "t"),
        EqualTo(("c3",), 1),  # after a slice: CQL cannot restrict it, Spark filters it
        IsNotNull(("c1",)),
        StringContains(("c2",), "q"),
    ]
    pushed, left = push(filters, TABLE)
    assert pushed.clustering == (("c1", "=", 5), ("c2", ">", "m"), ("c2", "<=", "t"))
    assert left == filters[3:]
    assert pushed.where() == '"c1" = ? AND "c2" > ? AND "c2" <= ?'.replace('"', "")
    assert pushed.values() == [5, "m", "t"]


def test_a_gap_in_the_clustering_prefix_stops_the_push() -> None:
    c2 = EqualTo(("c2",), "x")
    pushed, left = push([c2], TABLE)
    assert pushed.clustering == () and left == [c2]


def test_types_ordered_differently_in_spark_stay_with_spark() -> None:
    table = TableSchema(
        "ks",
        "v",
        None,
        (
            Column("k", PARTITION_KEY, 0, VARINT),
            Column("t", CLUSTERING, 0, TIMESTAMP),
            Column("u", CLUSTERING, 1, UUID),
        ),
    )
    k = EqualTo(("k",), "10")  # Spark holds varint as a string
    t = GreaterThan(("t",), dt.datetime(2024, 1, 1, 0, 0, 0, 500))  # microseconds: CQL has ms
    pushed, left = push([k, t], table)
    assert pushed == Pushed() and left == [k, t]
    canonical = str(uuid.uuid4())
    t_eq = EqualTo(("t",), dt.datetime(2024, 1, 1))
    u = EqualTo(("u",), canonical)
    pushed, left = push([t_eq, u], table)
    assert pushed.clustering == () and left == [t_eq, u]  # no equality on timestamps either


def test_uuid_equality_only_for_the_text_spark_shows() -> None:
    table = TableSchema("ks", "w", None, (Column("k", PARTITION_KEY, 0, UUID),))
    value = uuid.uuid4()
    pushed, left = push([EqualTo(("k",), str(value))], table)
    assert pushed.keys == ((value,),) and left == []
    upper = EqualTo(("k",), str(value).upper())  # CQL would match it; Spark compares strings
    pushed, left = push([upper], table)
    assert pushed.keys is None and left == [upper]


def test_the_cql_of_scans_and_key_reads() -> None:
    columns = TABLE.select(["a", "d"])
    pushed = Pushed(((1, "x"),), (("c1", ">=", 3),))
    assert scan_cql(TABLE, columns, Pushed()) == (
        "SELECT a, d FROM ks.t WHERE token(a, b) > ? AND token(a, b) <= ?"
    )
    assert scan_cql(TABLE, columns, pushed) == (
        "SELECT a, d FROM ks.t WHERE token(a, b) > ? AND token(a, b) <= ? AND c1 >= ? ALLOW FILTERING"
    )
    assert key_cql(TABLE, columns, pushed) == "SELECT a, d FROM ks.t WHERE a = ? AND b = ? AND c1 >= ?"
