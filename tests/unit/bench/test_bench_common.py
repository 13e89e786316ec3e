"""Benchmark helpers: percentiles, /proc readers, merging worker reports."""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.common import (
    CLOCK_TICKS,
    LoadSpec,
    _merge,
    latency_summary_ms,
    percentile,
    proc_cpu_seconds,
    proc_rss_bytes,
    stat_cpu_seconds,
)


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile(values, 0) == 1
    assert percentile([7], 99) == 7
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(values, 101)


@given(st.lists(st.integers(0, 10**6), min_size=1), st.floats(0, 100))
def test_percentile_is_an_element_with_enough_values_at_or_below(values: list[int], p: float) -> None:
    ordered = sorted(values)
    result = percentile(ordered, p)
    assert result in ordered
    at_or_below = sum(1 for v in ordered if v <= result)
    assert at_or_below >= p / 100 * len(ordered)


def test_latency_summary_converts_to_ms() -> None:
    summary = latency_summary_ms([1000, 2000, 3000, 4000])
    assert summary["p50_ms"] == 2.0 and summary["max_ms"] == 4.0


def test_proc_readers_on_this_process() -> None:
    """The CPU reader advances while this process burns CPU (it may already tick before the loop)."""
    before = proc_cpu_seconds(os.getpid())
    after = before
    for _ in range(1_000_000):
        sum(range(10_000))
        after = proc_cpu_seconds(os.getpid())
        if after > before:
            break
    assert after > before
    assert 1 << 20 < proc_rss_bytes(os.getpid()) < 1 << 40


def test_stat_parsing_survives_a_hostile_command_name() -> None:
    fields_after_name = ["S", *map(str, range(4, 14)), "250", "150", "7", "9"]  # utime=250 stime=150
    stat = "4242 (evil) name (x) " + " ".join(fields_after_name) + " 20 0 1\n"
    assert stat_cpu_seconds(stat) == pytest.approx(400 / CLOCK_TICKS)


def test_merge_combines_workers_and_computes_cpu_per_op() -> None:
    reports = [
        {"latencies_us": [1000, 3000], "errors": 0, "first_error": None},
        {"latencies_us": [2000, 4000], "errors": 1, "first_error": "Timeout"},
    ]
    result = _merge(reports, seconds=2.0, cpu_start=10.0, cpu_end=10.5, rss=64 * 2**20)
    assert (result.ops, result.errors, result.first_error) == (4, 1, "Timeout")
    assert result.ops_per_s == 2.0
    assert result.server_cpu_s == 0.5
    assert result.server_cpu_us_per_op == pytest.approx(125_000)
    assert result.capacity_ops_per_cpu_s == pytest.approx(8)
    assert result.server_rss_mb == 64
    assert result.p50_ms == 2.0


def test_load_spec_validates() -> None:
    with pytest.raises(ValueError, match="int_seq"):
        LoadSpec("127.0.0.1", 9042, "SELECT 1", values=("float",))
    with pytest.raises(ValueError):
        LoadSpec("127.0.0.1", 9042, "SELECT 1", concurrency=0)
