"""The scylla-driver's own schema parser (SchemaParserV3) must understand our system_schema rows.

This is what drivers and cqlsh's client-side DESCRIBE build their metadata from, so the rows
are decoded the way the driver decodes them (maps to dicts, sets to sets, lists to lists).
"""

from __future__ import annotations

from typing import Any

import pytest

from tabletdb.schema.system_schema import TABLES, rows

from .helpers import representative_catalog

metadata = pytest.importorskip("cassandra.metadata")

_MAP_COLUMNS = {c.name for t in TABLES.values() for c in t.columns if c.type.cql().startswith("frozen<map")}


def _as_driver(row: dict[str, Any]) -> dict[str, Any]:
    result = dict(row)
    for name, value in row.items():
        if name in _MAP_COLUMNS and value is not None:
            result[name] = dict(value)
        elif name == "flags" and value is not None:
            result[name] = set(value)
        elif isinstance(value, tuple):
            result[name] = list(value)
    return result


def _rows(table: str, keyspace: str, name: str | None = None) -> list[dict[str, Any]]:
    return [_as_driver(r) for r in rows(representative_catalog(), table, keyspace, name)]


def _parser() -> Any:
    return metadata.SchemaParserV3(None, 10, 1000, None)


def test_driver_builds_keyspace_and_types() -> None:
    (ks_row,) = _rows("keyspaces", "ks")
    ks = metadata.SchemaParserV3._build_keyspace_metadata(ks_row)
    assert ks.replication_strategy.name == "NetworkTopologyStrategy"
    types = [metadata.SchemaParserV3._build_user_type(r) for r in _rows("types", "ks")]
    person = next(t for t in types if t.name == "person")
    assert person.field_names == ["name", "Home", "tags"] and person.field_types[1] == "frozen<addr>"


def test_driver_builds_table_with_keys_order_statics_and_indexes() -> None:
    parser = _parser()
    (table_row,) = _rows("tables", "ks", "Events")
    table = parser._build_table_metadata(
        table_row, _rows("columns", "ks", "Events"), [], _rows("indexes", "ks", "Events")
    )
    assert [c.name for c in table.partition_key] == ["p1", "P2"]
    assert [c.name for c in table.clustering_key] == ["c1", "c2"]
    assert table.columns["c1"].is_reversed and not table.columns["c2"].is_reversed
    assert table.columns["s"].is_static and table.columns["m"].cql_type == "map<text, int>"
    assert not table.is_compact_storage
    assert set(table.indexes) == {"Events_s_idx", "m_keys"}
    assert table.indexes["m_keys"].index_options["target"] == "keys(m)"
    assert table.options["comment"] == "it's"
    cql = table.export_as_string()
    assert 'PRIMARY KEY ((p1, "P2"), c1, c2)' in cql and "CLUSTERING ORDER BY (c1 DESC, c2 ASC)" in cql


def test_driver_builds_view_function_and_aggregate() -> None:
    parser = _parser()
    (view_row,) = _rows("views", "ks")
    view = parser._build_view_metadata(view_row, _rows("columns", "ks", "by_v"))
    assert view.base_table_name == "base" and [c.name for c in view.partition_key] == ["v"]
    (fn_row,) = _rows("functions", "ks")
    fn = metadata.SchemaParserV3._build_function(fn_row)
    assert fn.argument_types == ["bigint", "int"] and fn.return_type == "bigint"
    (agg_row,) = _rows("aggregates", "ks")
    agg = metadata.SchemaParserV3._build_aggregate(agg_row)
    assert agg.state_func == "acc" and agg.initial_condition == "0"
