from __future__ import annotations

import uuid

import pytest

from tabletdb.cql import codec
from tabletdb.schema import system_schema
from tabletdb.schema.system_schema import TABLES, legacy_table_id, rows

from .helpers import representative_catalog

NTS = "org.apache.cassandra.locator.NetworkTopologyStrategy"


def test_keyspace_rows() -> None:
    catalog = representative_catalog()
    ks_rows = {r["keyspace_name"]: r for r in rows(catalog, "keyspaces")}
    assert ks_rows["ks"] == {
        "keyspace_name": "ks",
        "durable_writes": True,
        "next_replication": None,
        "replication": (("class", NTS), ("dc1", "3"), ("dc2", "2")),
        "replication_v2": (("class", NTS), ("dc1", "3"), ("dc2:0", "r1"), ("dc2:1", "r2")),
    }
    assert ks_rows["vn"]["replication"] == (
        ("class", "org.apache.cassandra.locator.SimpleStrategy"),
        ("replication_factor", "1"),
    )
    scylla = rows(catalog, "scylla_keyspaces")
    assert [(r["keyspace_name"], r["initial_tablets"]) for r in scylla] == [("ks", 4)]


def test_table_and_column_rows() -> None:
    catalog = representative_catalog()
    tables = rows(catalog, "tables", "ks")
    assert [r["table_name"] for r in tables] == ["Events", "base"]
    events = tables[0]
    assert events["flags"] == ("compound",)
    assert events["id"] == uuid.UUID("5a1c0c10-0000-1000-8000-000000000001")
    assert events["comment"] == "it's" and events["gc_grace_seconds"] == 864000
    assert events["compaction"] == (("class", "IncrementalCompactionStrategy"),)
    assert set(events) == {c.name for c in TABLES["tables"].columns}
    cols = {r["column_name"]: r for r in rows(catalog, "columns", "ks", "Events")}
    assert [r["column_name"] for r in rows(catalog, "columns", "ks", "Events")] == sorted(cols)
    assert (cols["p1"]["kind"], cols["p1"]["position"], cols["p1"]["clustering_order"]) == (
        "partition_key",
        0,
        "NONE",
    )
    assert (cols["P2"]["kind"], cols["P2"]["position"]) == ("partition_key", 1)
    assert (cols["c1"]["kind"], cols["c1"]["clustering_order"]) == ("clustering", "DESC")
    assert (cols["c2"]["position"], cols["c2"]["clustering_order"]) == (1, "ASC")
    assert (cols["s"]["kind"], cols["s"]["position"]) == ("static", -1)
    assert cols["m"]["type"] == "map<text, int>" and cols["m"]["kind"] == "regular"
    assert cols["l"]["type"] == "list<frozen<list<int>>>"
    assert cols["who"]["type"] == "person"
    assert cols["P2"]["column_name_bytes"] == b"P2"
    dropped = rows(catalog, "dropped_columns", "ks", "Events")
    assert dropped == [
        {
            "keyspace_name": "ks",
            "table_name": "Events",
            "column_name": "old",
            "dropped_time": 1_700_000_000_123,
            "type": "bigint",
        }
    ]
    scylla = {r["table_name"]: r for r in rows(catalog, "scylla_tables", "ks")}
    assert scylla["Events"]["tablets"] == (("min_tablet_count", "8"),) and scylla["by_v"]["tablets"] is None


def test_views_indexes_types_functions() -> None:
    catalog = representative_catalog()
    (view,) = rows(catalog, "views", "ks")
    assert (
        view["view_name"] == "by_v" and view["base_table_name"] == "base" and not view["include_all_columns"]
    )
    assert view["where_clause"].startswith("v IS NOT NULL")
    assert "flags" not in view
    view_cols = rows(catalog, "columns", "ks", "by_v")
    assert [(r["column_name"], r["kind"]) for r in view_cols] == [
        ("ck", "clustering"),
        ("pk", "clustering"),
        ("v", "partition_key"),
    ]
    indexes = rows(catalog, "indexes", "ks", "Events")
    assert [(r["index_name"], r["kind"], r["options"]) for r in indexes] == [
        ("Events_s_idx", "COMPOSITES", (("target", "s"),)),
        ("m_keys", "COMPOSITES", (("target", "keys(m)"),)),
    ]
    types = {r["type_name"]: r for r in rows(catalog, "types", "ks")}
    assert types["person"]["field_names"] == ("name", "Home", "tags")
    assert types["person"]["field_types"] == ("text", "frozen<addr>", "frozen<set<text>>")
    (fn,) = rows(catalog, "functions", "ks", "acc")
    assert (
        fn["argument_types"] == ("bigint", "int")
        and fn["argument_names"] == ("s", "x")
        and fn["return_type"] == "bigint"
    )
    (agg,) = rows(catalog, "aggregates", "ks")
    assert (agg["state_func"], agg["state_type"], agg["initcond"], agg["final_func"]) == (
        "acc",
        "bigint",
        "0",
        None,
    )
    assert rows(catalog, "triggers") == [] and rows(catalog, "computed_columns") == []


def test_rows_encode_with_the_declared_column_types() -> None:
    """Every rendered value must be encodable as its system_schema column's CQL type."""
    catalog = representative_catalog()
    for name, table in TABLES.items():
        for row in rows(catalog, name):
            assert set(row) == {c.name for c in table.columns}, name
            for column in table.columns:
                if row[column.name] is not None:
                    codec.serialize(column.type, row[column.name])


def test_narrowing_and_errors() -> None:
    catalog = representative_catalog()
    assert rows(catalog, "tables", "nope") == []
    assert rows(catalog, "tables", "ks", "nope") == []
    assert [r["table_name"] for r in rows(catalog, "tables", "ks", "base")] == ["base"]
    with pytest.raises(KeyError):
        rows(catalog, "nope")
    with pytest.raises(ValueError, match="needs a keyspace"):
        rows(catalog, "tables", None, "t")


def test_system_table_definitions() -> None:
    assert legacy_table_id("system_schema", "tables") == legacy_table_id("system_schema", "tables")
    assert legacy_table_id("system_schema", "tables").version == 3
    columns = TABLES["columns"]
    assert [c.name for c in columns.primary_key] == ["keyspace_name", "table_name", "column_name"]
    assert TABLES["keyspaces"].column("replication").type.cql() == "frozen<map<text, text>>"  # type: ignore[union-attr]
    assert TABLES["tables"].column("flags").type.cql() == "frozen<set<text>>"  # type: ignore[union-attr]
    assert set(system_schema.system_schema_keyspace().tables) == set(TABLES)
