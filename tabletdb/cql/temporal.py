"""Text forms of CQL date, time and timestamp values (parse and print), in UTC.

CQL dates span the whole 32-bit day range (about +-5.8 million years), beyond what `datetime`
can hold, so day <-> civil date conversion uses the proleptic Gregorian arithmetic below rather
than the standard library.
"""

from __future__ import annotations

import re

from tabletdb.cql.errors import InvalidRequest
from tabletdb.cql.numbers import parse_int

MS_PER_DAY = 86_400_000
NANOS_PER_DAY = 86_400 * 10**9
DATE_EPOCH = 2**31

_DATE = re.compile(r"([+-]?\d+)-(\d{1,2})-(\d{1,2})\Z")
_TIME = re.compile(r"(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,9}))?\Z")
_TIMESTAMP = re.compile(
    r"([+-]?\d{4,})-(\d{1,2})-(\d{1,2})"
    r"(?:[ Tt](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(?:([Zz]|UTC|GMT)|([+-])(\d{2}):?(\d{2})?)?\Z"
)
_NUMBER = re.compile(r"-?\d+\Z")


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (month <= 2), month, day


def _valid_civil(year: int, month: int, day: int) -> bool:
    return (
        1 <= month <= 12
        and 1 <= day <= 31
        and civil_from_days(days_from_civil(year, month, day))
        == (
            year,
            month,
            day,
        )
    )


def parse_date(text: str) -> int:
    """`yyyy-mm-dd`, or a number of days where 2**31 is the epoch (as Cassandra reads it)."""
    s = text.strip()
    if _NUMBER.match(s):
        raw = parse_int(s)
        if not 0 <= raw < 2**32:
            raise InvalidRequest(f"Unable to coerce '{text}' to a formatted date (long): out of range")
        return raw - DATE_EPOCH
    m = _DATE.match(s)
    if not m or not _valid_civil(*(int(g) for g in m.groups())):
        raise InvalidRequest(f"Unable to coerce '{text}' to a formatted date (long)")
    days = days_from_civil(*(int(g) for g in m.groups()))
    if not -DATE_EPOCH <= days < DATE_EPOCH:
        raise InvalidRequest(f"Unable to coerce '{text}' to a formatted date (long): out of range")
    return days


def parse_time(text: str) -> int:
    """`hh:mm:ss[.fffffffff]` or a number of nanoseconds, into nanoseconds since midnight."""
    s = text.strip()
    if _NUMBER.match(s):
        nanos = parse_int(s)
    else:
        m = _TIME.match(s)
        if not m:
            raise InvalidRequest(f"Unable to coerce '{text}' to a formatted time (long)")
        h, mi, sec = int(m.group(1)), int(m.group(2)), int(m.group(3))
        if h > 23 or mi > 59 or sec > 59:
            raise InvalidRequest(f"Unable to coerce '{text}' to a formatted time (long): field out of range")
        nanos = ((h * 60 + mi) * 60 + sec) * 10**9 + int((m.group(4) or "").ljust(9, "0"))
    if not 0 <= nanos < NANOS_PER_DAY:
        raise InvalidRequest(f"Unable to coerce '{text}' to a formatted time (long): not within a day")
    return nanos


def parse_timestamp(text: str) -> int:
    """ISO-8601-ish date-times Cassandra accepts (UTC unless a zone is given) or raw ms, into ms."""
    s = text.strip()
    if _NUMBER.match(s):
        return parse_int(s)
    m = _TIMESTAMP.match(s)
    if not m:
        raise InvalidRequest(f"Unable to coerce '{text}' to a formatted date (long)")
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    hour, minute, second = (int(g) if g else 0 for g in m.group(4, 5, 6))
    if not _valid_civil(year, month, day) or hour > 23 or minute > 59 or second > 59:
        raise InvalidRequest(f"Unable to coerce '{text}' to a formatted date (long): field out of range")
    fraction = m.group(7) or "0"
    if len(fraction) > 3:
        # A timestamp holds milliseconds: dropping the rest silently would store a different
        # instant than the one written. ScyllaDB refuses it (Cassandra truncates).
        raise InvalidRequest(
            f"marshaling error: unable to parse date '{text}': marshaling error: "
            f"Milliseconds length exceeds expected ({len(fraction)})"
        )
    millis = int(fraction.ljust(3, "0"))
    offset_minutes = 0
    if m.group(9):
        offset_minutes = int(m.group(10)) * 60 + int(m.group(11) or 0)
        if m.group(9) == "-":
            offset_minutes = -offset_minutes
    ms = (
        ((days_from_civil(year, month, day) * 24 + hour) * 60 + minute - offset_minutes) * 60 + second
    ) * 1000
    return ms + millis


def format_date(days: int) -> str:
    year, month, day = civil_from_days(days)
    sign = "-" if year < 0 else ""
    return f"{sign}{abs(year):04d}-{month:02d}-{day:02d}"


def format_time(nanos: int) -> str:
    """`hh:mm:ss.nnnnnnnnn`, as Cassandra prints time values."""
    seconds, frac = divmod(nanos, 10**9)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{hours:02d}:{minute:02d}:{sec:02d}.{frac:09d}"


def format_timestamp(ms: int) -> str:
    """`yyyy-mm-dd hh:mm:ss.fffZ` in UTC, the form of SELECT JSON and toJson()."""
    days, rest = divmod(ms, MS_PER_DAY)
    seconds, millis = divmod(rest, 1000)
    minutes, sec = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    return f"{format_date(days)} {hours:02d}:{minute:02d}:{sec:02d}.{millis:03d}Z"
