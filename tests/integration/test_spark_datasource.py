"""The `tabletdb` Spark data source against a real node.

Acceptance: reading a table through the data source equals `SELECT *` through the driver for
every CQL type (natives, collections, frozen collections, tuples, nested UDTs); writing the
DataFrame back to a twin table reproduces the table; one input partition per tablet (per vnode
range for a vnode keyspace); options narrow the scan; writetime/TTL columns apply; a CQL error
fails the write with the server's message.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import uuid
from decimal import Decimal
from typing import Any

import pytest

from tabletdb.cql import types as T
from tabletdb.dht.token import MAX_TOKEN
from tabletdb.spark.connection import fetch_table_schema
from tabletdb.spark.values import to_spark
from tests.harness.clients import scylla_session
from tests.harness.node import NodeFactory, TestNode

pyspark = pytest.importorskip("pyspark")

NTS = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
COLUMNS = (
    "k int, c text, ac ascii, big bigint, bl blob, bo boolean, d date, dec decimal, dbl double,"
    " dur duration, fl float, ip inet, i int, si smallint, tx text, tm time, ts timestamp,"
    " tu timeuuid, ti tinyint, u uuid, vi varint, l list<int>, s set<text>, m map<text, int>,"
    " fl2 frozen<list<frozen<set<int>>>>, mk map<frozen<list<int>>, text>, tup tuple<int, text, date>,"
    " who frozen<person>, people list<frozen<person>>, st text static, PRIMARY KEY (k, c)"
)
SCHEMA = [
    f"CREATE KEYSPACE sp WITH replication = {NTS} AND tablets = {{'initial': 4}}",
    "CREATE TYPE sp.address (street text, zip int)",
    "CREATE TYPE sp.person (name text, home frozen<address>, tags set<text>)",
    f"CREATE TABLE sp.every ({COLUMNS})",
    f"CREATE TABLE sp.copy ({COLUMNS})",
    "CREATE TABLE sp.kv (k int PRIMARY KEY, v text)",
]
INSERT = (
    "INSERT INTO sp.every (k, c, ac, big, bl, bo, d, dec, dbl, dur, fl, ip, i, si, tx, tm, ts, tu, ti, u, vi,"
    " l, s, m, fl2, mk, tup, who, people, st) VALUES (" + ", ".join(["?"] * 30) + ")"
)


def _row(n: int) -> tuple[Any, ...]:
    from cassandra.util import Date, Duration, Time

    person = (f"p{n}", (f"{n} Main St", 10000 + n), {"a", f"t{n}"})
    return (
        n, f"c{n}", "plain", -(2**62) + n, bytes([n, 0, 255]), n % 2 == 0, Date(19000 + n),
        Decimal(f"-{n}1234567890123456789012345678901234567890.5"), 1.5 * n, Duration(1, n, 3_000_000_000),
        0.25, str(ipaddress.ip_address(f"2001:db8::{n}")), -n, 300 + n, f"ünïcode {n}", Time(n * 10**9),
        dt.datetime(2024, 1, 2, 3, 4, 5, 6000) + dt.timedelta(days=n), uuid.uuid1(), -n, uuid.uuid4(),
        10**30 + n, [n, n, 1], {"x", f"y{n}"}, {"a": n, "b": -n}, [{1, 2}, {n}], {(1, n): "one"},
        (n, "t", Date(-n)), person, [person, person], f"static {n}",
    )  # fmt: skip


def fill(session: Any) -> None:
    """The rows of the module's ``db`` (tests/integration/conftest.py), after its SCHEMA."""
    insert = session.prepare(INSERT)
    for n in range(1, 9):
        session.execute(insert, _row(n))
    session.execute("INSERT INTO sp.every (k, c) VALUES (100, 'only the key')")
    for n in range(50):
        session.execute("INSERT INTO sp.kv (k, v) VALUES (%s, %s)", (n, f"v{n}"))


def _options(node: TestNode, table: str, **extra: str) -> dict[str, str]:
    return {"hosts": node.host, "port": str(node.port), "table": table, "consistency": "ONE", **extra}


def _driver_rows(db: Any, keyspace: str, table: str) -> list[tuple[Any, ...]]:
    schema = fetch_table_schema(db, keyspace, table)
    names = ", ".join(c.name for c in schema.columns)
    rows = db.execute(f"SELECT {names} FROM {keyspace}.{table}")
    return sorted(
        (tuple(to_spark(c.cql_type, v) for c, v in zip(schema.columns, row)) for row in rows), key=_key
    )


def _key(row: Any) -> tuple[Any, ...]:
    return tuple(row[:2])


def _spark_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(_plain(v) for v in r) for r in df.collect()), key=_key)


def _plain(value: Any) -> Any:
    """Spark gives structs as Rows (tuples) and timestamps in the session zone (UTC here)."""
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def test_reading_every_type_equals_select_star(spark: Any, node: TestNode, db: Any) -> None:
    df = spark.read.format("tabletdb").options(**_options(node, "sp.every")).load()
    assert df.schema["dec"].dataType.simpleString() == "string"
    assert df.schema["who"].dataType.simpleString().startswith("struct<name:string,home:struct<street")
    expected = _driver_rows(db, "sp", "every")
    assert len(expected) == 9
    assert _spark_rows(df) == expected


def test_writing_the_dataframe_back_reproduces_the_table(spark: Any, node: TestNode, db: Any) -> None:
    df = spark.read.format("tabletdb").options(**_options(node, "sp.every")).load()
    df.write.format("tabletdb").options(**_options(node, "sp.copy")).mode("append").save()
    assert _driver_rows(db, "sp", "copy") == _driver_rows(db, "sp", "every")


def test_one_input_partition_per_tablet(spark: Any, node: TestNode, db: Any) -> None:
    table_id = next(
        iter(db.execute("SELECT id FROM system_schema.tables WHERE keyspace_name='sp' AND table_name='kv'"))
    )
    tablets = list(db.execute("SELECT last_token FROM system.tablets WHERE table_id = %s", (table_id.id,)))
    df = spark.read.format("tabletdb").options(**_options(node, "sp.kv")).load()
    assert df.rdd.getNumPartitions() == len(tablets) >= 4
    assert sorted(r.k for r in df.collect()) == list(range(50))


def test_one_input_partition_per_vnode_range(spark: Any, node_factory: NodeFactory) -> None:
    # A node of its own with few tokens: one Spark task per range, 256 of them would be slow.
    vnode = node_factory.start_node(options={"num_tokens": 12})
    with scylla_session(vnode) as session:
        session.execute(f"CREATE KEYSPACE vn WITH replication = {NTS} AND tablets = {{'enabled': false}}")
        session.execute("CREATE TABLE vn.kv (k int PRIMARY KEY, v text)")
        for n in range(50):
            session.execute("INSERT INTO vn.kv (k, v) VALUES (%s, %s)", (n, f"v{n}"))
        tokens = next(iter(session.execute("SELECT tokens FROM system.local"))).tokens
    df = spark.read.format("tabletdb").options(**_options(vnode, "vn.kv", page_size="7")).load()
    assert df.rdd.getNumPartitions() == len(tokens) == 12
    assert sorted((r.k, r.v) for r in df.collect()) == [(n, f"v{n}") for n in range(50)]


def test_columns_and_token_range_options_narrow_the_scan(spark: Any, node: TestNode, db: Any) -> None:
    tokens = {r.k: r.t for r in db.execute("SELECT k, token(k) AS t FROM sp.kv")}
    df = spark.read.format("tabletdb").options(
        **_options(node, "sp.kv", columns="v,k", token_range=f"0,{MAX_TOKEN}")
    )
    got = df.load().collect()
    assert [f for f in got[0].asDict()] == ["v", "k"]
    assert sorted(r.k for r in got) == sorted(k for k, t in tokens.items() if t > 0)


def test_writetime_and_ttl_columns(spark: Any, node: TestNode, db: Any) -> None:
    df = spark.createDataFrame(
        [(1000 + n, f"w{n}", 1_000_000 + n, 3600) for n in range(5)], "k int, v string, wt long, ttl int"
    )
    opts = _options(node, "sp.kv", writetime_column="wt", ttl_column="ttl")
    df.write.format("tabletdb").options(**opts).mode("append").save()
    rows = sorted(
        db.execute(
            "SELECT k, v, WRITETIME(v) AS w, TTL(v) AS t FROM sp.kv WHERE k IN (1000, 1001, 1002, 1003, 1004)"
        )
    )
    assert [(r.k, r.v, r.w) for r in rows] == [(1000 + n, f"w{n}", 1_000_000 + n) for n in range(5)]
    assert all(0 < r.t <= 3600 for r in rows)


def test_a_cql_error_fails_the_write_with_the_servers_message(spark: Any, node: TestNode) -> None:
    df = spark.createDataFrame([(1, "x", -5)], "k int, v string, ttl int")
    with pytest.raises(Exception, match=r"failed at row \(k=1\): .*TTL"):
        df.write.format("tabletdb").options(**_options(node, "sp.kv", ttl_column="ttl")).mode("append").save()


def test_a_dataframe_without_the_key_is_refused_before_writing(spark: Any, node: TestNode, db: Any) -> None:
    """``db``: the table must exist, so the refusal is about the missing key, not the table."""
    df = spark.createDataFrame([("x",)], "v string")
    with pytest.raises(Exception, match="lacks primary key column"):
        df.write.format("tabletdb").options(**_options(node, "sp.kv")).mode("append").save()


def test_counter_tables_are_written_as_increments(spark: Any, node: TestNode, db: Any) -> None:
    db.execute("CREATE TABLE sp.hits (k int, day int, views counter, clicks counter, PRIMARY KEY (k, day))")
    df = spark.createDataFrame(
        [(k, k % 3, k, None) for k in range(30)], "k int, day int, views long, clicks long"
    )
    for _ in range(2):
        df.write.format("tabletdb").options(**_options(node, "sp.hits")).mode("append").save()
    rows = sorted((r.k, r.day, r.views, r.clicks) for r in db.execute("SELECT * FROM sp.hits"))
    assert rows == [(k, k % 3, 2 * k, 0) for k in range(30)]


def test_spark_types_for_collections_of_udts_match_the_driver(node: TestNode, db: Any) -> None:
    schema = fetch_table_schema(db, "sp", "every")
    people = schema.column("people").cql_type
    assert isinstance(people, T.ListType) and isinstance(people.element, T.UserType)
    assert people.element.field_names == ("name", "home", "tags")
