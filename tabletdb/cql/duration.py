"""The CQL `duration` value: months, days and nanoseconds kept apart.

A duration cannot be reduced to one number (a month has no fixed number of days, a day has no
fixed number of nanoseconds across DST), so CQL stores three signed counters that must all share
one sign. This module holds the value type, its literal forms (`1h30m`, `P1DT2H`, `P1W`,
`P0001-02-03T04:05:06`) and its canonical text (`1mo2d3h4m5s6ms7us8ns`), which is what cqlsh and
Scylla print.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tabletdb.cql.errors import InvalidRequest

NANOS_PER_MICRO = 1_000
NANOS_PER_MILLI = 1_000_000
NANOS_PER_SECOND = 1_000_000_000
NANOS_PER_MINUTE = 60 * NANOS_PER_SECOND
NANOS_PER_HOUR = 60 * NANOS_PER_MINUTE

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class Duration:
    """A CQL duration. All three parts are zero or share one sign (checked on creation)."""

    months: int
    days: int
    nanoseconds: int

    def __post_init__(self) -> None:
        parts = (self.months, self.days, self.nanoseconds)
        if any(p > 0 for p in parts) and any(p < 0 for p in parts):
            raise InvalidRequest(
                f"The duration months, days and nanoseconds must be all of the same sign ({self.months}, "
                f"{self.days}, {self.nanoseconds})"
            )
        if not (INT32_MIN <= self.months <= INT32_MAX and INT32_MIN <= self.days <= INT32_MAX):
            raise InvalidRequest(f"duration months/days out of 32-bit range: {self.months}, {self.days}")
        if not INT64_MIN <= self.nanoseconds <= INT64_MAX:
            raise InvalidRequest(f"duration nanoseconds out of 64-bit range: {self.nanoseconds}")

    def __str__(self) -> str:
        return format_duration(self)


# Unit suffixes of the "standard" form, longest first so `ms` wins over `m` and `mo` over `m`.
_UNITS: tuple[tuple[str, str, int], ...] = (
    ("mo", "months", 1),
    ("us", "nanoseconds", NANOS_PER_MICRO),
    ("µs", "nanoseconds", NANOS_PER_MICRO),
    ("ms", "nanoseconds", NANOS_PER_MILLI),
    ("ns", "nanoseconds", 1),
    ("y", "months", 12),
    ("w", "days", 7),
    ("d", "days", 1),
    ("h", "nanoseconds", NANOS_PER_HOUR),
    ("m", "nanoseconds", NANOS_PER_MINUTE),
    ("s", "nanoseconds", NANOS_PER_SECOND),
)
_UNIT_ORDER = ("y", "mo", "w", "d", "h", "m", "s", "ms", "us", "ns")
_STANDARD = re.compile(r"(\d+)(mo|us|µs|ms|ns|y|w|d|h|m|s)", re.IGNORECASE)
_ISO = re.compile(
    r"P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?\Z", re.IGNORECASE
)
_ISO_WEEK = re.compile(r"P(\d+)W\Z", re.IGNORECASE)
_ISO_ALT = re.compile(r"P(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\Z", re.IGNORECASE)


def parse_duration(text: str) -> Duration:
    """Parse any duration literal form CQL accepts; raise InvalidRequest naming the text if none fits."""
    body = text.strip()
    negative = body.startswith("-")
    if negative:
        body = body[1:]
    parts = _parse_unsigned(body)
    if parts is None:
        raise InvalidRequest(f"Unable to convert '{text}' to a duration")
    months, days, nanos = parts
    sign = -1 if negative else 1
    return Duration(sign * months, sign * days, sign * nanos)


def _parse_unsigned(body: str) -> tuple[int, int, int] | None:
    if not body:
        return None
    if body[0] in "Pp":
        return _parse_iso(body)
    totals = {"months": 0, "days": 0, "nanoseconds": 0}
    pos = 0
    last_rank = -1
    for match in _STANDARD.finditer(body):
        if match.start() != pos:
            return None
        unit = match.group(2).lower()
        rank = _UNIT_ORDER.index("us" if unit == "µs" else unit)
        if rank <= last_rank:  # as Cassandra: each unit at most once, largest first
            raise InvalidRequest(
                f"Invalid duration '{body}': {unit} repeated or out of order "
                f"(the order is {', '.join(_UNIT_ORDER)})"
            )
        last_rank = rank
        field, scale = next((f, s) for u, f, s in _UNITS if u == unit)
        totals[field] += int(match.group(1)) * scale
        pos = match.end()
    if pos != len(body):
        return None
    return totals["months"], totals["days"], totals["nanoseconds"]


def _parse_iso(body: str) -> tuple[int, int, int] | None:
    week = _ISO_WEEK.match(body)
    if week:
        return 0, 7 * int(week.group(1)), 0
    alt = _ISO_ALT.match(body)
    if alt:
        y, mo, d, h, mi, s = (int(g) for g in alt.groups())
        return 12 * y + mo, d, h * NANOS_PER_HOUR + mi * NANOS_PER_MINUTE + s * NANOS_PER_SECOND
    iso = _ISO.match(body)
    if not iso or body.upper() in ("P", "PT") or body.upper().endswith("T"):
        return None
    y, mo, d, h, mi, s = (int(g) if g else 0 for g in iso.groups())
    return 12 * y + mo, d, h * NANOS_PER_HOUR + mi * NANOS_PER_MINUTE + s * NANOS_PER_SECOND


def format_duration(d: Duration) -> str:
    """Canonical text: `-` if negative, then y, mo, d, h, m, s, ms, us, ns parts that are non-zero."""
    if d.months == 0 and d.days == 0 and d.nanoseconds == 0:
        return "0s"
    negative = d.months < 0 or d.days < 0 or d.nanoseconds < 0
    months, days, nanos = abs(d.months), abs(d.days), abs(d.nanoseconds)
    out = ["-"] if negative else []
    years, months = divmod(months, 12)
    pieces: list[tuple[int, str]] = [(years, "y"), (months, "mo"), (days, "d")]
    for scale, unit in (
        (NANOS_PER_HOUR, "h"),
        (NANOS_PER_MINUTE, "m"),
        (NANOS_PER_SECOND, "s"),
        (NANOS_PER_MILLI, "ms"),
        (NANOS_PER_MICRO, "us"),
        (1, "ns"),
    ):
        count, nanos = divmod(nanos, scale)
        pieces.append((count, unit))
    out.extend(f"{count}{unit}" for count, unit in pieces if count)
    return "".join(out)
