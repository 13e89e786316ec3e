"""Fitting loose input rows to a table: good values in Spark form, bad rows rejected with a reason."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from tabletdb.spark.coerce import RowRejected, fit_row, json_object_row, map_columns
from tabletdb.spark.schema_map import SchemaError, table_schema_from_rows

TABLE = table_schema_from_rows(
    "ks",
    "t",
    None,
    [
        {"column_name": "k", "kind": "partition_key", "position": 0, "type": "int"},
        {"column_name": "c", "kind": "clustering", "position": 0, "type": "timestamp"},
        {"column_name": "d", "kind": "regular", "position": -1, "type": "decimal"},
        {"column_name": "l", "kind": "regular", "position": -1, "type": "list<int>"},
        {"column_name": "m", "kind": "regular", "position": -1, "type": "map<int, text>"},
        {"column_name": "who", "kind": "regular", "position": -1, "type": "frozen<addr>"},
        {"column_name": "dur", "kind": "regular", "position": -1, "type": "duration"},
        {"column_name": "day", "kind": "regular", "position": -1, "type": "date"},
        {"column_name": "b", "kind": "regular", "position": -1, "type": "blob"},
    ],
    [{"type_name": "addr", "field_names": ["street", "zip"], "field_types": ["text", "int"]}],
)
UTC_2024 = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def test_csv_text_cells_fit_every_kind_of_column() -> None:
    mapping = map_columns(TABLE, ["K", "c", "d", "l", "m", "who", "dur", "day", "b"])
    row = [
        "7",
        "2024-01-02 03:04:05Z",
        "1.10",
        "[1, 2]",
        '{"3": "x"}',
        '{"street": "Main", "zip": 5}',
        "1h30m",
        "2024-02-29",
        "0xcafe",
    ]
    assert fit_row(mapping, row) == (
        7,
        UTC_2024,
        "1.10",
        [1, 2],
        {3: "x"},
        ("Main", 5),
        (0, 0, 5_400_000_000_000),
        dt.date(2024, 2, 29),
        b"\xca\xfe",
    )


def test_typed_values_fit_too() -> None:
    mapping = map_columns(TABLE, ["k", "c", "d", "l", "m", "who", "dur", "day", "b"])
    row: list[Any] = [
        7,
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        Decimal("1.10"),
        [1, 2],
        {3: "x"},
        ("Main", 5),
        (1, 2, 3),
        dt.date(2024, 2, 29),
        bytearray(b"\xca\xfe"),
    ]
    assert fit_row(mapping, row) == (
        7,
        UTC_2024,
        "1.10",
        [1, 2],
        {3: "x"},
        ("Main", 5),
        (1, 2, 3),
        dt.date(2024, 2, 29),
        b"\xca\xfe",
    )


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (["x", "2024-01-01"], "column k (int)"),
        ([None, "2024-01-01"], "missing value for primary key column k"),
        (["1", None], "missing value for primary key column c"),
        (["99999999999", "2024-01-01"], "column k (int)"),
        (["1", "yesterday"], "column c (timestamp)"),
        (["1", "2024-01-01", "1.2.3"], "column d (decimal)"),
        (["1", "2024-01-01", None, "[1, "], "column l (list<int>)"),
        (["1", "2024-01-01", None, '["a"]'], "column l (list<int>)"),
    ],
)
def test_rows_that_do_not_fit_say_which_column_and_why(row: list[Any], reason: str) -> None:
    mapping = map_columns(TABLE, ["k", "c", "d", "l"][: max(2, len(row))])
    with pytest.raises(RowRejected, match=reason.replace("(", r"\(").replace(")", r"\)")):
        fit_row(mapping, row)


def test_inputs_that_cannot_fit_any_row_fail_up_front() -> None:
    with pytest.raises(SchemaError, match="match no column"):
        map_columns(TABLE, ["k", "c", "nope"])
    with pytest.raises(SchemaError, match="no field for primary key column"):
        map_columns(TABLE, ["k", "d"])


def test_json_objects_map_fields_by_name() -> None:
    assert json_object_row(TABLE, {"K": 1, "c": 5})[:3] == [1, 5, None]
    with pytest.raises(RowRejected, match="'zz' matches no column"):
        json_object_row(TABLE, {"k": 1, "zz": 2})
    with pytest.raises(RowRejected, match="JSON object per line"):
        json_object_row(TABLE, [1, 2])


def test_writetime_and_ttl_fields_ride_after_the_columns() -> None:
    mapping = map_columns(TABLE, ["wt", "k", "c", "ttl"], extras=("wt", "ttl"))
    assert [c.name for c in mapping.columns] == ["k", "c"]
    assert fit_row(mapping, ["1700000000000000", "1", "5", 60]) == (
        1,
        dt.datetime(1970, 1, 1, 0, 0, 0, 5000, tzinfo=dt.UTC),
        1700000000000000,
        60,
    )
    assert fit_row(mapping, [None, "1", "5", None])[2:] == (None, None)
    with pytest.raises(RowRejected, match="field ttl: 'soon' is not a whole number"):
        fit_row(mapping, [None, "1", "5", "soon"])
    with pytest.raises(SchemaError, match="no field ttl"):
        map_columns(TABLE, ["k", "c"], extras=("ttl",))
    assert json_object_row(TABLE, {"k": 1, "ttl": 5}, ("ttl",))[-1] == 5


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (["x", "2024-01-01"], "column k (int): Unable to make int from 'x'"),
        (["1", "2024-01-01", None, "[1, "], "column l (list<int>): '[1, ' is not a list<int> literal"),
    ],
)
def test_reasons_for_text_cells_do_not_talk_about_json(row: list[Any], reason: str) -> None:
    with pytest.raises(RowRejected) as caught:
        fit_row(map_columns(TABLE, ["k", "c", "d", "l"]), row)
    assert str(caught.value).startswith(reason) and "JSON" not in str(caught.value)


@pytest.mark.parametrize(
    ("type_text", "raw"),
    [
        ("text", "héllo"),
        ("ascii", "plain"),
        ("ascii", "héllo"),  # not ASCII: the general path refuses it
        ("int", 2**31 - 1),
        ("int", 2**31),  # too big: the general path refuses it
        ("tinyint", -128),
        ("bigint", -(2**63)),
        ("double", 1.5),
        ("double", 3),  # an int for a double: the general path
        ("boolean", True),
        ("int", True),  # a bool is no int here
        ("blob", b"\x00\xff"),
        ("varint", 10**30),
    ],
)
def test_typed_values_that_already_fit_give_what_the_general_path_gives(type_text: str, raw: Any) -> None:
    from tabletdb.cql.jsonvalues import from_json
    from tabletdb.cql.parser import parse_type
    from tabletdb.spark.coerce import _jsonish, fit_value

    t = parse_type(type_text)
    try:
        expected: Any = from_json(t, _jsonish(t, raw), "x")
    except Exception as exc:  # the general path's refusal must stay a refusal
        expected = type(exc)
    try:
        got: Any = fit_value(t, raw, "x", spark_form=False)
    except Exception as exc:
        got = type(exc)
    assert got == expected and type(got) is type(expected)


def test_a_map_keyed_by_a_collection_fits_as_spark_holds_it() -> None:
    """Spark holds such a map as an array of (key, value) structs, which Arrow gives as dicts
    (`schema_map.has_complex_keys`): `df.write` through files hands it over so."""
    from tabletdb.cql.parser import parse_type
    from tabletdb.spark.coerce import fit_value

    t = parse_type("map<frozen<list<int>>, text>")
    entries = [{"key": [1, 1], "value": "one"}, {"key": [2], "value": "two"}]
    pairs = [([1, 1], "one"), ([2], "two")]
    assert fit_value(t, entries, spark_form=False) == fit_value(t, pairs, spark_form=False)
    assert fit_value(t, entries) == [([1, 1], "one"), ([2], "two")]
