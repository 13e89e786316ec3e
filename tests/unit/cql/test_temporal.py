"""parse_timestamp(): the fractional second holds milliseconds, and more digits are refused."""

from __future__ import annotations

import pytest

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.temporal import parse_timestamp

NEW_YEAR_2020_MS = 1_577_836_800_000


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("2020-01-01 00:00:00", 0),
        ("2020-01-01 00:00:00.1", 100),
        ("2020-01-01 00:00:00.12", 120),
        ("2020-01-01 00:00:00.123", 123),
        ("2020-01-01T00:00:00.123+0000", 123),
    ],
)
def test_up_to_three_fraction_digits_are_milliseconds(text: str, millis: int) -> None:
    assert parse_timestamp(text) == NEW_YEAR_2020_MS + millis


@pytest.mark.parametrize("digits", ["1234", "123456", "1234567", "123456789"])
def test_more_than_three_fraction_digits_are_refused_with_the_count(digits: str) -> None:
    text = f"2020-01-01 00:00:00.{digits}"
    with pytest.raises(InvalidRequest) as err:
        parse_timestamp(text)
    assert str(err.value) == (
        f"marshaling error: unable to parse date '{text}': marshaling error: "
        f"Milliseconds length exceeds expected ({len(digits)})"
    )
