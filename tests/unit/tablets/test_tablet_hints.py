"""Validation of a table's ``tablets = {...}`` hints (spec/tablets.md, ScyllaDB's messages)."""

from __future__ import annotations

import pytest

from tabletdb.cql.errors import ConfigurationError, CqlSyntaxError
from tabletdb.tablets.hints import TabletHints, parse_tablet_hints, pow2_ceil, pow2_floor


def test_parse_all_keys_from_strings_and_numbers() -> None:
    hints = parse_tablet_hints(
        {
            "min_tablet_count": "3",
            "max_tablet_count": 64,
            "min_per_shard_tablet_count": "0.5",
            "expected_data_size_in_gb": 12,
        }
    )
    assert hints == TabletHints(3, 64, 0.5, 12.0)
    assert hints.effective_min == 4
    assert hints.effective_max == 64
    assert hints.to_map() == {
        "min_tablet_count": "3",
        "max_tablet_count": "64",
        "min_per_shard_tablet_count": "0.5",
        "expected_data_size_in_gb": "12",
    }


def test_unknown_hint_is_a_syntax_error() -> None:
    with pytest.raises(CqlSyntaxError, match="Unknown tablet hint 'initial'"):
        parse_tablet_hints({"initial": "4"})


def test_zero_values_are_dropped() -> None:
    assert parse_tablet_hints({"min_tablet_count": 0, "expected_data_size_in_gb": "0"}) == TabletHints()


@pytest.mark.parametrize(
    "options",
    [
        {"min_tablet_count": -1},
        {"min_per_shard_tablet_count": "-0.5"},
        {"expected_data_size_in_gb": -3},
        {"max_tablet_count": 0},
        {"max_tablet_count": "-8"},
    ],
)
def test_negative_values_and_non_positive_max_rejected(options: dict[str, object]) -> None:
    key = next(iter(options))
    with pytest.raises(ConfigurationError, match=f"for {key}"):
        parse_tablet_hints(options)


@pytest.mark.parametrize("raw", ["abc", "1.5", True, [1]])
def test_non_numbers_rejected(raw: object) -> None:
    with pytest.raises(ConfigurationError, match="min_tablet_count"):
        parse_tablet_hints({"min_tablet_count": raw})


def test_min_above_max_after_pow2_rounding_rejected() -> None:
    # 5 rounds up to 8, 7 rounds down to 4
    with pytest.raises(ConfigurationError, match=r"min_tablet_count=5 \(effective: 8\)"):
        parse_tablet_hints({"min_tablet_count": 5, "max_tablet_count": 7})
    # 5 -> 8 and 8 -> 8 is fine
    assert parse_tablet_hints({"min_tablet_count": 5, "max_tablet_count": 8}).effective_max == 8


def test_pow2_helpers() -> None:
    assert [pow2_ceil(n) for n in (0, 1, 2, 3, 4, 5, 1000)] == [1, 1, 2, 4, 4, 8, 1024]
    assert [pow2_floor(n) for n in (1, 2, 3, 4, 7, 1000)] == [1, 2, 2, 4, 4, 512]
    with pytest.raises(ValueError):
        pow2_floor(0)
