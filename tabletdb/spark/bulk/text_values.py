"""Fast paths for text input (CSV cells, string columns): the values Arrow compute is sure of.

Each native CQL type has a strict pattern, a subset of what CQL's literal rules
(`cql.literals`, `cql.temporal`) accept, for which Arrow's parser gives the same value: ASCII
digits for integers (at most 18, so they fit an int64), CQL's float syntax without the special
words, `yyyy-mm-dd[T ]hh:mm:ss[.fff][Z]` timestamps, canonical UUIDs, `0x` hex blobs. Values
that match are converted and serialized columnwise; every other non-null value is left
*pending* for the row-at-a-time rules, which accept it or word the reject. When Arrow still
refuses a matching value (February 30th), the whole column goes the slow way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from tabletdb.spark.bulk.serial import SIGNED, big_endian, days, null_rows, utf8

_INTEGER = r"^-?[0-9]{1,18}$"
_FLOAT = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_TIMESTAMP = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?Z?$"
_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_HEX4 = "[0-9a-fA-F]{4}"
_UUID = rf"^[0-9a-fA-F]{{8}}-{_HEX4}-{_HEX4}-{_HEX4}-[0-9a-fA-F]{{12}}$"
_TIMEUUID = rf"^[0-9a-fA-F]{{8}}-{_HEX4}-1[0-9a-fA-F]{{3}}-{_HEX4}-[0-9a-fA-F]{{12}}$"
_BLOB = r"^0x([0-9a-fA-F]{2})*$"
_INT_RANGES = {name: (-(1 << (t.bit_width - 1)), 1 << (t.bit_width - 1)) for name, t in SIGNED.items()}


@dataclass
class Fast:
    """Serialized values of the rows a fast path decided (None elsewhere), and the rows with a
    non-null value it left to the row-at-a-time rules."""

    values: list[bytes | None]
    pending: list[int]


def _split(values: pa.Array, sure: pa.Array) -> tuple[pa.Array, list[int]]:
    """`values` where `sure` holds (null elsewhere), and the non-null rows where it does not."""
    sure = sure.fill_null(False)
    unsure = pc.and_(values.is_valid(), pc.invert(sure))
    pending = pc.indices_nonzero(unsure).to_pylist() if pc.any(unsure).as_py() else []
    return pc.if_else(sure, values, pa.scalar(None, values.type)), pending


def _matching(pattern: str) -> Callable[[pa.Array], tuple[pa.Array, list[int]]]:
    def split(values: pa.Array) -> tuple[pa.Array, list[int]]:
        return _split(values, pc.match_substring_regex(values, pattern))

    return split


def _integers(name: str) -> Callable[[pa.Array], Fast]:
    low, high = _INT_RANGES[name]

    def convert(values: pa.Array) -> Fast:
        sure, pending = _matching(_INTEGER)(values)
        numbers = sure.cast(pa.int64())
        if name == "bigint":  # 18 digits always fit
            return Fast(big_endian(numbers), pending)
        fits = pc.and_(pc.greater_equal(numbers, low), pc.less(numbers, high))
        inside, outside = _split(numbers, fits)
        return Fast(big_endian(inside.cast(SIGNED[name])), sorted(pending + outside))

    return convert


def _double(values: pa.Array) -> Fast:
    sure, pending = _matching(_FLOAT)(values)
    return Fast(big_endian(sure.cast(pa.float64())), pending)


def _text(values: pa.Array) -> Fast:
    return Fast(utf8(values), [])


def _ascii(values: pa.Array) -> Fast:
    sure, pending = _split(values, pc.string_is_ascii(values))
    return Fast(utf8(sure), pending)


def _boolean(values: pa.Array) -> Fast:
    lowered = pc.utf8_lower(values)
    truth = pc.equal(lowered, "true")
    sure, pending = _split(truth, pc.or_(truth, pc.equal(lowered, "false")))
    return Fast([None if v is None else b"\x01" if v else b"\x00" for v in sure.to_pylist()], pending)


def _timestamp(values: pa.Array) -> Fast:
    sure, pending = _matching(_TIMESTAMP)(values)
    naive = pc.replace_substring_regex(sure, "Z$", "")
    millis = naive.cast(pa.timestamp("ms")).cast(pa.int64())
    return Fast(big_endian(millis), pending)


def _date(values: pa.Array) -> Fast:
    sure, pending = _matching(_DATE)(values)
    return Fast(days(sure.cast(pa.date32())), pending)


def _uuid(pattern: str) -> Callable[[pa.Array], Fast]:
    def convert(values: pa.Array) -> Fast:
        sure, pending = _matching(pattern)(values)
        digits = pc.replace_substring(sure, "-", "").to_pylist()
        return Fast([None if d is None else bytes.fromhex(d) for d in digits], pending)

    return convert


def _blob(values: pa.Array) -> Fast:
    sure, pending = _matching(_BLOB)(values)
    digits = pc.utf8_slice_codeunits(sure, 2).to_pylist()
    return Fast([None if d is None else bytes.fromhex(d) for d in digits], pending)


_CONVERTERS: dict[str, Callable[[pa.Array], Fast]] = {
    **{name: _integers(name) for name in SIGNED},
    "double": _double,
    "text": _text,
    "ascii": _ascii,
    "boolean": _boolean,
    "timestamp": _timestamp,
    "date": _date,
    "uuid": _uuid(_UUID),
    "timeuuid": _uuid(_TIMEUUID),
    "blob": _blob,
}


def from_text(type_name: str, values: pa.Array) -> Fast | None:
    """The fast path for a string array feeding native type `type_name`; None when there is
    none (or Arrow refused a value the pattern let through): every value goes the slow way."""
    convert = _CONVERTERS.get(type_name)
    if convert is None:
        return None
    try:
        return convert(values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def all_pending(values: pa.Array) -> Fast:
    """No fast path: every non-null row is pending."""
    nulls = set(null_rows(values))
    return Fast([None] * len(values), [i for i in range(len(values)) if i not in nulls])
