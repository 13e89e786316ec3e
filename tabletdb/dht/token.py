"""Token arithmetic and token ranges.

Tokens are signed int64 values. Ranges are left-open, right-closed ``(start, end]`` like in
Cassandra; a range whose start is not below its end wraps around the ring, and ``(t, t]`` is the
whole ring (the convention Cassandra uses for a single-token ring). The minimum token is never a
real key's token (the partitioner maps it away), so ``(MIN_TOKEN, MAX_TOKEN]`` holds every key
except the empty one, which ``MIN_TOKEN`` itself stands for.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

MIN_TOKEN = -(1 << 63)
MAX_TOKEN = (1 << 63) - 1
_TWO64 = 1 << 64
_HALF = 1 << 63


def unbias(token: int) -> int:
    """Map signed token order onto unsigned [0, 2^64) order (shard and tablet maths use this)."""
    return token + _HALF


def bias(value: int) -> int:
    """Inverse of ``unbias``: an unsigned 64-bit position back to a signed token."""
    return value - _HALF


def check_token(token: int) -> int:
    """Return ``token`` if it is a valid int64 token, else raise with the offending value."""
    if not MIN_TOKEN <= token <= MAX_TOKEN:
        raise ValueError(f"token {token} is outside the int64 range [{MIN_TOKEN}, {MAX_TOKEN}]")
    return token


@dataclass(frozen=True, slots=True)
class TokenRange:
    """The tokens in ``(start, end]``, wrapping around the ring when ``start >= end``."""

    start: int
    end: int

    def __post_init__(self) -> None:
        check_token(self.start)
        check_token(self.end)

    @property
    def wraps(self) -> bool:
        """True when the range passes MAX_TOKEN and continues from the ring's start."""
        return self.start >= self.end

    @property
    def is_full_ring(self) -> bool:
        return self.start == self.end

    def contains(self, token: int) -> bool:
        if self.start < self.end:
            return self.start < token <= self.end
        return token > self.start or token <= self.end

    def unwrap(self) -> list[TokenRange]:
        """Split into non-wrapping pieces, each ``start < end``, in ring order from MIN_TOKEN.

        ``MIN_TOKEN`` as a start means "from the ring's beginning"; the piece that would be
        ``(MAX_TOKEN, MAX_TOKEN]`` is empty and dropped. The pieces cover every token of the range
        except ``MIN_TOKEN`` itself, which no non-empty key has (``contains`` counts it as part of
        every wrapping range, the position just before the first real token).
        """
        if not self.wraps:
            return [self]
        pieces: list[TokenRange] = []
        if self.end > MIN_TOKEN:
            pieces.append(TokenRange(MIN_TOKEN, self.end))
        if self.start < MAX_TOKEN:
            pieces.append(TokenRange(self.start, MAX_TOKEN))
        return pieces

    def width(self) -> int:
        """How many tokens the range holds (2^64 for the full ring)."""
        if self.start < self.end:
            return self.end - self.start
        return _TWO64 - (self.start - self.end)

    def intersect(self, other: TokenRange) -> list[TokenRange]:
        """The intersection as non-wrapping ranges in token order."""
        out: list[TokenRange] = []
        for a in self.unwrap():
            for b in other.unwrap():
                lo = max(a.start, b.start)
                hi = min(a.end, b.end)
                if lo < hi:
                    out.append(TokenRange(lo, hi))
        out.sort(key=lambda r: r.start)
        return out

    def __str__(self) -> str:
        return f"({self.start}, {self.end}]"


FULL_RING = TokenRange(MIN_TOKEN, MIN_TOKEN)


def ranges_between(sorted_tokens: list[int]) -> Iterator[TokenRange]:
    """The ranges owned by each token of a sorted ring: ``(previous, token]``, the first wrapping."""
    n = len(sorted_tokens)
    for i, token in enumerate(sorted_tokens):
        yield TokenRange(sorted_tokens[i - 1] if n > 1 else token, token)
