"""A table's ``WITH tablets = {...}`` hints, parsed and validated into a typed value.

The rules follow ScyllaDB so users see the errors they expect: an unknown key is a syntax error
(``Unknown tablet hint '<key>'``), negative values and a non-positive ``max_tablet_count`` are
configuration errors, and zero means "unset". When both bounds are given they must still admit a
power of two, because counts are rounded (the minimum up, the maximum down).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tabletdb.cql.errors import ConfigurationError, CqlSyntaxError

HINT_KEYS = (
    "min_tablet_count",
    "max_tablet_count",
    "min_per_shard_tablet_count",
    "expected_data_size_in_gb",
)


def pow2_ceil(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def pow2_floor(n: int) -> int:
    """Largest power of two <= n; n must be positive."""
    if n < 1:
        raise ValueError(f"pow2_floor needs a positive number, got {n}")
    return 1 << (n.bit_length() - 1)


@dataclass(frozen=True, slots=True)
class TabletHints:
    """Validated hints; ``None`` means unset (zero values are normalised to unset)."""

    min_tablet_count: int | None = None
    max_tablet_count: int | None = None
    min_per_shard_tablet_count: float | None = None
    expected_data_size_in_gb: float | None = None

    @property
    def effective_min(self) -> int | None:
        """The minimum rounded up to a power of two, as the count algorithm will apply it."""
        return None if self.min_tablet_count is None else pow2_ceil(self.min_tablet_count)

    @property
    def effective_max(self) -> int | None:
        """The maximum rounded down to a power of two: the cap that always wins."""
        return None if self.max_tablet_count is None else pow2_floor(self.max_tablet_count)

    def to_map(self) -> dict[str, str]:
        """The hints as the string map stored in the schema (unset hints omitted)."""
        out: dict[str, str] = {}
        for key in HINT_KEYS:
            value = getattr(self, key)
            if value is not None:
                out[key] = str(int(value)) if float(value).is_integer() else repr(float(value))
        return out


def parse_tablet_hints(options: Mapping[str, object]) -> TabletHints:
    """Validate a ``tablets = {...}`` map (values as CQL literals: str, int or float)."""
    values: dict[str, float] = {}
    for key, raw in options.items():
        if key not in HINT_KEYS:
            raise CqlSyntaxError(f"Unknown tablet hint '{key}'")
        number = _number(key, raw, integral=key in ("min_tablet_count", "max_tablet_count"))
        if number < 0 or (key == "max_tablet_count" and number <= 0):
            raise ConfigurationError(f"Invalid value '{_show(raw)}' for {key}")
        values[key] = number
    hints = TabletHints(
        min_tablet_count=_int_or_none(values.get("min_tablet_count")),
        max_tablet_count=_int_or_none(values.get("max_tablet_count")),
        min_per_shard_tablet_count=values.get("min_per_shard_tablet_count") or None,
        expected_data_size_in_gb=values.get("expected_data_size_in_gb") or None,
    )
    low, high = hints.effective_min, hints.effective_max
    if low is not None and high is not None and low > high:
        raise ConfigurationError(
            f"Invalid tablet count range: min_tablet_count={hints.min_tablet_count} (effective: {low}) and "
            f"max_tablet_count={hints.max_tablet_count} (effective: {high}) conflict after rounding to "
            "powers of 2 (the minimum rounds up, the maximum rounds down); adjust them so that the "
            "smallest power of 2 >= min_tablet_count is <= the largest power of 2 <= max_tablet_count"
        )
    return hints


def _number(key: str, raw: object, *, integral: bool) -> float:
    if isinstance(raw, bool):
        raise ConfigurationError(f"Invalid value '{_show(raw)}' for {key}: expected a number")
    if isinstance(raw, int | float):
        number = float(raw)
    elif isinstance(raw, str):
        try:
            number = float(int(raw.strip())) if integral else float(raw.strip())
        except ValueError:
            raise ConfigurationError(f"Invalid value '{raw}' for {key}: expected a number") from None
    else:
        raise ConfigurationError(f"Invalid value '{_show(raw)}' for {key}: expected a number")
    if not math.isfinite(number) or (integral and not number.is_integer()):
        raise ConfigurationError(f"Invalid value '{_show(raw)}' for {key}: expected a whole number")
    return number


def _int_or_none(value: float | None) -> int | None:
    return int(value) if value else None


def _show(raw: object) -> str:
    return raw if isinstance(raw, str) else repr(raw)
