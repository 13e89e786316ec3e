"""The short way a native-typed text field is read (`coerce._text_value`) agrees with the general
path (`from_json`, INSERT JSON's rules) on every text: the same value, or both refuse it."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from tabletdb.cql.errors import CqlError
from tabletdb.cql.jsonvalues import from_json
from tabletdb.cql.types import NativeType
from tabletdb.spark.coerce import fit_value

NAMES = (
    "tinyint", "smallint", "int", "bigint", "varint", "float", "double", "decimal", "boolean",
    "blob", "uuid", "timeuuid", "timestamp", "date", "time", "inet", "duration", "text", "ascii",
)  # fmt: skip

SAMPLES = (
    "0", "-0", "007", "+5", " 12", "12 ", "127", "128", "-129", "32768", "2147483648", "9223372036854775807",
    "9223372036854775808", "1e3", "1.5", "-.5", "NaN", "Infinity", "-infinity", "true", "FALSE", "yes", "0x",
    "0x0aFF", "0xg", "AB", "2024-01-01T00:00:07Z", "2024-02-30", "2024-01-01", "12:30:00.5", "25:00:00",
    "1h30m", "P1D", "127.0.0.1", "::1", "not an address", "123e4567-e89b-12d3-a456-426614174000",
    "123e4567-e89b-42d3-a456-426614174000", "", "\u0661\u0662", "é",
)  # fmt: skip


def general(t: NativeType, text: str, spark_form: bool) -> Any:
    from tabletdb.spark.values import to_spark

    value = from_json(t, text, "value")
    return to_spark(t, value) if spark_form else value


def outcome(read: Any) -> tuple[str, Any]:
    try:
        value = read()
    except (CqlError, ValueError) as exc:
        return "refused", type(exc).__name__
    if isinstance(value, float) and math.isnan(value):
        return "nan", None
    return "value", value


def agree(name: str, text: str) -> None:
    t = NativeType(name)
    for form in (False, True):
        fast = outcome(partial(fit_value, t, text, "value", spark_form=form))
        slow = outcome(partial(general, t, text, form))
        assert fast[0] == slow[0], (name, text, fast, slow)
        if fast[0] == "value":
            assert fast[1] == slow[1] and type(fast[1]) is type(slow[1]), (name, text, fast, slow)


def test_known_texts_read_alike_for_every_native_type() -> None:
    for name in NAMES:
        for text in SAMPLES:
            agree(name, text)


@settings(max_examples=300, deadline=None)
@given(
    hs.sampled_from(NAMES),
    hs.one_of(
        hs.text(max_size=24),
        hs.integers().map(str),
        hs.floats(allow_nan=False).map(repr),
        hs.from_regex(r"-?[0-9]{1,4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}(:[0-9]{2})?Z?)?", fullmatch=True),
    ),
)
def test_any_text_reads_alike(name: str, text: str) -> None:
    agree(name, text)


def test_timestamps_with_zero_digits_past_the_millisecond_load_and_others_are_refused() -> None:
    from tabletdb.cql.types import native
    from tabletdb.spark.coerce import fit_value

    stamp = native("timestamp")
    exact = fit_value(stamp, "2024-01-01T08:08:12.248000Z")
    assert exact == fit_value(stamp, "2024-01-01T08:08:12.248Z")
    with pytest.raises(Exception, match="Milliseconds length exceeds expected"):
        fit_value(stamp, "2024-01-01T08:08:12.248100Z")
