"""Duration: sign rule, literal forms, canonical text that parses back to the same value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tabletdb.cql.duration import Duration, format_duration, parse_duration
from tabletdb.cql.errors import InvalidRequest


@given(
    st.sampled_from([1, -1]),
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.integers(0, 2**63 - 1),
)
def test_text_round_trip(sign: int, months: int, days: int, nanos: int) -> None:
    d = Duration(sign * months, sign * days, sign * nanos)
    assert parse_duration(format_duration(d)) == d


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0s", Duration(0, 0, 0)),
        ("12h", Duration(0, 0, 12 * 3600 * 10**9)),
        ("1Y2MO", Duration(14, 0, 0)),
        ("3µs", Duration(0, 0, 3000)),
        ("PT90M", Duration(0, 0, 5400 * 10**9)),
        ("P2W", Duration(0, 14, 0)),
        ("-P1D", Duration(0, -1, 0)),
    ],
)
def test_parse(text: str, expected: Duration) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text", ["", "5", "1x", "1m1h", "1d1d", "P", "PT", "P1DT", "1h 30m", "--1s", "P1W2D"]
)
def test_rejected(text: str) -> None:
    with pytest.raises(InvalidRequest):
        parse_duration(text)


def test_mixed_signs_and_ranges_are_rejected() -> None:
    with pytest.raises(InvalidRequest, match="same sign"):
        Duration(1, -1, 0)
    with pytest.raises(InvalidRequest):
        Duration(2**31, 0, 0)
    with pytest.raises(InvalidRequest):
        parse_duration(f"{2**40}mo")


def test_format() -> None:
    assert format_duration(Duration(14, 3, 3_723_001_001_001)) == "1y2mo3d1h2m3s1ms1us1ns"
    assert str(Duration(0, 0, -1)) == "-1ns"
