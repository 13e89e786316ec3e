"""Option parsing and the pure parts of the write path (statements, key checks, tablet grouping)."""

from __future__ import annotations

import pytest

from tabletdb.dht.tablet_ids import tablet_id_of, tablet_last_tokens
from tabletdb.spark.connection import OptionError, parse_options
from tabletdb.spark.schema_map import SchemaError, table_schema_from_rows
from tabletdb.spark.writer import WritePlan, group_by_range, insert_cql

TABLE = table_schema_from_rows(
    "ks",
    "Tbl",
    None,
    [
        {"column_name": "k", "kind": "partition_key", "position": 0, "type": "int"},
        {"column_name": "c", "kind": "clustering", "position": 0, "type": "int"},
        {"column_name": "v", "kind": "regular", "position": -1, "type": "text"},
    ],
    [],
)


def _plan(names: tuple[str, ...], **options: str) -> WritePlan:
    opts = parse_options({"hosts": "h1", "table": "ks.Tbl", **options})
    return WritePlan(opts, TABLE, names, ())


def test_options_defaults_and_parsing() -> None:
    opts = parse_options(
        {"Hosts": "a, b", "keyspace": "ks", "table": "t", "PAGE_SIZE": "7", "columns": "x,y"}
    )
    assert opts.connect.hosts == ("a", "b")
    assert (opts.keyspace, opts.table, opts.page_size, opts.columns) == ("ks", "t", 7, ("x", "y"))
    assert opts.consistency == "LOCAL_QUORUM"
    assert parse_options({"hosts": "h", "table": "ks.t", "consistency": "one"}).consistency == "ONE"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"table": "ks.t"}, "hosts is required"),
        ({"hosts": "h", "table": "t"}, "keyspace and table are required"),
        ({"hosts": "h", "table": "ks.t", "consistency": "MOST"}, "consistency 'MOST'"),
        ({"hosts": "h", "table": "ks.t", "page_size": "0"}, "page_size must be >= 1"),
        ({"hosts": "h", "table": "ks.t", "port": "x"}, "port must be an integer"),
    ],
)
def test_bad_options_are_explained(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options(options)


def test_insert_statements_quote_names_and_add_using_clauses() -> None:
    plan = _plan(("v", "k", "ts", "c", "ttl"), writetime_column="ts", ttl_column="ttl")
    plan.check()
    assert insert_cql(plan, False, False) == 'INSERT INTO ks."Tbl" (v, k, c) VALUES (?, ?, ?)'
    assert insert_cql(plan, True, True).endswith("VALUES (?, ?, ?) USING TIMESTAMP ? AND TTL ?")
    assert insert_cql(plan, False, True).endswith(" USING TTL ?")


def test_plans_missing_key_columns_or_named_extras_fail_before_writing() -> None:
    with pytest.raises(SchemaError, match="lacks primary key column"):
        _plan(("k", "v")).check()
    with pytest.raises(SchemaError, match="writetime_column 'ts' is not a column"):
        _plan(("k", "c"), writetime_column="ts").check()
    with pytest.raises(SchemaError, match="has no column 'zz'"):
        _plan(("k", "c", "zz")).check()


def test_rows_are_grouped_by_tablet_keeping_arrival_order_within_one() -> None:
    last = tablet_last_tokens(4)
    tokens = [last[3], last[0], -1, last[3] - 5, -(2**62) - 1, 2**62, 1]
    items = [(t, i) for i, t in enumerate(tokens)]
    grouped = group_by_range(items, last)
    assert sorted(grouped) == list(range(len(tokens)))
    tablets = [tablet_id_of(tokens[i], 4) for i in grouped]
    assert tablets == sorted(tablets)
    for tablet in set(tablets):
        members = [i for i in grouped if tablet_id_of(tokens[i], 4) == tablet]
        assert members == sorted(members)


COUNTERS = table_schema_from_rows(
    "ks",
    "hits",
    None,
    [
        {"column_name": "k", "kind": "partition_key", "position": 0, "type": "int"},
        {"column_name": "day", "kind": "clustering", "position": 0, "type": "date"},
        {"column_name": "views", "kind": "regular", "position": -1, "type": "counter"},
        {"column_name": "clicks", "kind": "regular", "position": -1, "type": "counter"},
    ],
    [],
)


def test_counter_tables_write_increments_counters_first_then_the_key() -> None:
    opts = parse_options({"hosts": "h1", "table": "ks.hits"})
    plan = WritePlan(opts, COUNTERS, ("views", "k", "day", "clicks"), ())
    assert plan.is_counter_table
    assert insert_cql(plan, False, False) == (
        "UPDATE ks.hits SET views = views + ?, clicks = clicks + ? WHERE k = ? AND day = ?"
    )
    assert [c.name for c in plan.statement_columns()] == ["views", "clicks", "k", "day"]


def test_counter_tables_refuse_writetime_and_ttl() -> None:
    opts = parse_options({"hosts": "h1", "table": "ks.hits", "writetime_column": "wt"})
    with pytest.raises(SchemaError, match="counters take no writetime"):
        WritePlan(opts, COUNTERS, ("k", "day", "views", "wt"), ()).check()
