"""`make bench`'s summary table: one row per load, whether a benchmark prints one load per
RESULT line or nests several in one."""

from __future__ import annotations

from bench.run_all import table, table_rows


def test_a_flat_result_is_one_row() -> None:
    result = {"benchmark": "floor", "workload": "prepared SELECT by key", "ops_per_s": 5000.0}
    assert table_rows(result) == [result]


def test_nested_loads_become_one_row_each() -> None:
    result = {
        "benchmark": "data_path",
        "smp": 2,
        "tabletdb insert": {"ops_per_s": 12000.0, "server_cpu_us_per_op": 55.0},
        "floor": {"ops_per_s": 5000.0, "server_cpu_us_per_op": 7.0},
        "ratios": {"select capacity / floor capacity": 0.17},
    }
    rows = table_rows(result)
    assert [(r["benchmark"], r["workload"], r["ops_per_s"]) for r in rows] == [
        ("data_path", "tabletdb insert", 12000.0),
        ("data_path", "floor", 5000.0),
    ]
    assert "tabletdb insert" in table(rows) and "55.0" in table(rows)


def test_a_result_without_loads_stays_as_it_is() -> None:
    result = {"benchmark": "raft", "commits": 10}
    assert table_rows(result) == [result]
