"""scylla-cqlsh prints the result of function, cast, element and field selectors, under the
column headers ScyllaDB gives them."""

from __future__ import annotations

from pathlib import Path

from tests.harness.clients import run_cqlsh
from tests.harness.node import TestNode


def test_cqlsh_shows_function_cast_element_and_field_columns(node: TestNode, cqlsh_home: Path) -> None:
    setup = (
        "CREATE KEYSPACE IF NOT EXISTS shsel WITH replication = "
        "{'class': 'NetworkTopologyStrategy', 'datacenter1': 1};"
        "CREATE TYPE IF NOT EXISTS shsel.pt (x int, y int);"
        "CREATE TABLE IF NOT EXISTS shsel.t (k int PRIMARY KEY, v int, m map<text, int>, p frozen<pt>);"
        "INSERT INTO shsel.t (k, v, m, p) VALUES (1, 42, {'a': 7}, {x: 3, y: 4});"
    )
    run_cqlsh(node, setup, home=cqlsh_home).check()
    out = (
        run_cqlsh(
            node,
            "SELECT intAsBlob(v), CAST(v AS text) AS vt, m['a'], p.y, toJson(p) FROM shsel.t WHERE k = 1",
            home=cqlsh_home,
        )
        .check()
        .stdout
    )
    header, values = [line for line in out.splitlines() if "|" in line][:2]
    assert [h.strip() for h in header.split("|")] == [
        "system.intasblob(v)",
        "vt",
        "m['a']",
        "p.y",
        "system.tojson(p)",
    ]
    assert [v.strip() for v in values.split("|")] == ["0x0000002a", "42", "7", "4", '{"x": 3, "y": 4}']
