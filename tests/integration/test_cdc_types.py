"""CDC delta rows of every native CQL type, row by row, against a real node (issue 16 acceptance).

One table holds a column of each native type. Each write's log row is compared with the row
ScyllaDB's "Basic operations in CDC" documents for it: an INSERT of every column is one
operation 2 row holding each value; an UPDATE of one column is one operation 1 row holding only
that value; a DELETE of one cell (and an UPDATE to null) is one operation 1 row with only
``cdc$deleted_<col>`` set. Values are compared with what the driver decodes for the literal
written and with the base row's own read of the same cell. Counter tables cannot have a log:
ScyllaDB refuses CDC on them ("Counter support not implemented"), and so do we.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.util import Date, Duration, Time

NTS_1 = "{'class': 'NetworkTopologyStrategy', 'replication_factor': 1}"
TIMEUUID = uuid.UUID("d2177dd0-eaa2-11de-a572-001b779c76e3")
UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")
TYPES: list[tuple[str, str, str, Any]] = [
    # column, CQL type, literal written, the value the driver decodes
    ("a", "ascii", "'plain ascii'", "plain ascii"),
    ("bi", "bigint", "-9223372036854775808", -9223372036854775808),
    ("bl", "blob", "0x00ff10", b"\x00\xff\x10"),
    ("bo", "boolean", "false", False),
    ("da", "date", "'2026-11-27'", Date(datetime.date(2026, 11, 27))),
    ("de", "decimal", "-123.4500", decimal.Decimal("-123.4500")),
    ("do", "double", "2.5e-300", 2.5e-300),
    ("du", "duration", "1mo2d3ns", Duration(1, 2, 3)),
    ("fl", "float", "1.5", 1.5),
    ("ip", "inet", "'2001:db8::1'", "2001:db8::1"),
    ("i", "int", "-2147483648", -2147483648),
    ("si", "smallint", "32767", 32767),
    ("te", "text", "'ząb ∑'", "ząb ∑"),
    ("ti", "time", "'13:14:15.123456789'", Time("13:14:15.123456789")),
    ("ts", "timestamp", "'2026-11-27 10:00:00.123+0000'", datetime.datetime(2026, 11, 27, 10, 0, 0, 123000)),
    ("tu", "timeuuid", str(TIMEUUID), TIMEUUID),
    ("tt", "tinyint", "-128", -128),
    ("uu", "uuid", str(UUID), UUID),
    ("vc", "varchar", "'var'", "var"),
    ("vi", "varint", "-123456789012345678901234567890", -123456789012345678901234567890),
]
OTHER_VALUES: dict[str, str] = {"a": "'x'", "bl": "0x", "te": "''", "ip": "'10.0.0.1'", "du": "0s"}
"""A second literal for the UPDATE (an empty blob and text are values, not nulls)."""


def _log(session: Any) -> list[Any]:
    rows = list(session.execute("SELECT * FROM cdct.t_scylla_cdc_log"))
    return sorted(rows, key=lambda r: (r.cdc_time.time, r.cdc_batch_seq_no))


def _set(row: Any) -> dict[str, Any]:
    """The row's non-null columns other than the stream, time and batch numbering."""
    skip = {"cdc_stream_id", "cdc_time", "cdc_batch_seq_no", "cdc_end_of_batch"}
    return {k: v for k, v in row._asdict().items() if v is not None and k not in skip}


@pytest.fixture
def table(session: Any) -> Any:
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS cdct WITH replication = {NTS_1}")
    columns = ", ".join(f"{name} {cql}" for name, cql, _, _ in TYPES)
    session.execute(
        f"CREATE TABLE IF NOT EXISTS cdct.t (pk int, ck int, {columns}, PRIMARY KEY (pk, ck)) "
        "WITH cdc = {'enabled': true}"
    )
    return session


def test_log_columns_have_the_base_types(table: Any) -> None:
    rows = table.execute(
        "SELECT column_name, type FROM system_schema.columns "
        "WHERE keyspace_name = 'cdct' AND table_name = 't_scylla_cdc_log'"
    )
    types = {r.column_name: r.type for r in rows}
    for name, cql, _, _ in TYPES:
        assert types[name] == ("text" if cql == "varchar" else cql)
        assert types[f"cdc$deleted_{name}"] == "boolean"
        assert f"cdc$deleted_elements_{name}" not in types  # atomic: no element deletes


def test_an_insert_of_every_type_is_one_row_with_each_value(table: Any) -> None:
    before = len(_log(table))
    names = ", ".join(name for name, _, _, _ in TYPES)
    literals = ", ".join(literal for _, _, literal, _ in TYPES)
    table.execute(f"INSERT INTO cdct.t (pk, ck, {names}) VALUES (1, 1, {literals})")
    (row,) = _log(table)[before:]
    expected = {name: value for name, _, _, value in TYPES}
    assert _set(row) == {"cdc_operation": 2, "pk": 1, "ck": 1, **expected}
    (base,) = table.execute(f"SELECT {names} FROM cdct.t WHERE pk = 1 AND ck = 1")
    for name, _, _, value in TYPES:
        assert getattr(row, name) == getattr(base, name) == value, name


@pytest.mark.parametrize("name,cql,literal,value", TYPES, ids=[t[1] for t in TYPES])
def test_update_and_cell_delete_of_each_type(
    table: Any, name: str, cql: str, literal: str, value: Any
) -> None:
    key = 10 + [t[0] for t in TYPES].index(name)
    where = f"WHERE pk = {key} AND ck = 0"
    before = len(_log(table))
    table.execute(f"UPDATE cdct.t SET {name} = {literal} {where}")
    table.execute(f"DELETE {name} FROM cdct.t {where}")
    table.execute(f"UPDATE cdct.t SET {name} = {OTHER_VALUES.get(name, literal)} {where}")
    (base,) = table.execute(f"SELECT {name} FROM cdct.t {where}")
    table.execute(f"UPDATE cdct.t SET {name} = null {where}")
    update, delete, again, to_null = _log(table)[before:]
    keys = {"pk": key, "ck": 0, "cdc_operation": 1}
    assert _set(update) == {**keys, name: value}
    assert _set(delete) == {**keys, f"cdc_deleted_{name}": True}
    assert _set(again) == {**keys, name: getattr(base, name)}
    assert _set(to_null) == {**keys, f"cdc_deleted_{name}": True}
    assert all(r.cdc_batch_seq_no == 0 and r.cdc_end_of_batch for r in (update, delete, again, to_null))


def test_counter_tables_cannot_have_a_log(table: Any) -> None:
    with pytest.raises(InvalidRequest, match=r"CDC log for table cdct.c\. Counter support not"):
        table.execute("CREATE TABLE cdct.c (k int PRIMARY KEY, n counter) WITH cdc = {'enabled': true}")
    table.execute("CREATE TABLE IF NOT EXISTS cdct.c2 (k int PRIMARY KEY, n counter)")
    with pytest.raises(InvalidRequest, match=r"CDC log for table cdct.c2\. Counter support not"):
        table.execute("ALTER TABLE cdct.c2 WITH cdc = {'enabled': true}")
