"""Token boundaries of tablets and the tablet id of a token.

A table with N tablets cuts the ring into N ranges; tablet i covers ``(last[i-1], last[i]]`` and
tablet 0 starts at the ring's minimum. With N a power of two (the normal case) the id is just the
top bits of the unbiased token, so routing a request needs no search; other counts (only seen
with power-of-two rounding turned off) use ScyllaDB's general split points and a binary search.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from tabletdb.dht.token import MIN_TOKEN, TokenRange, bias, unbias

_M64 = (1 << 64) - 1


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def log2_count(count: int) -> int:
    """k for a tablet count of 2^k; raises for other counts (callers needing them use the search)."""
    if not is_power_of_two(count):
        raise ValueError(f"tablet count {count} is not a power of two")
    return count.bit_length() - 1


def _check_count(count: int) -> None:
    if count < 1:
        raise ValueError(f"a table has at least one tablet, got count {count}")


def tablet_last_tokens(count: int) -> list[int]:
    """The last (inclusive) token of every tablet of a table with ``count`` tablets."""
    _check_count(count)
    if is_power_of_two(count):
        shift = 64 - log2_count(count)
        return [bias(((i + 1) << shift) - 1) for i in range(count)]
    return [bias((i * _M64) // count) for i in range(1, count + 1)]


def tablet_last_token(tablet_id: int, count: int) -> int:
    """The last token of one tablet, without building the whole list."""
    _check_id(tablet_id, count)
    if is_power_of_two(count):
        return bias(((tablet_id + 1) << (64 - log2_count(count))) - 1)
    return bias(((tablet_id + 1) * _M64) // count)


def tablet_id_of(token: int, count: int) -> int:
    """The id of the tablet owning ``token`` among ``count`` evenly split tablets."""
    _check_count(count)
    if is_power_of_two(count):
        k = log2_count(count)
        return unbias(token) >> (64 - k) if k else 0
    return tablet_id_in(token, tablet_last_tokens(count))


def tablet_id_in(token: int, last_tokens: Sequence[int]) -> int:
    """The id of the tablet owning ``token`` given an explicit sorted list of last tokens."""
    index = bisect_left(last_tokens, token)
    if index == len(last_tokens):
        raise ValueError(
            f"token {token} lies after the last tablet's end {last_tokens[-1] if last_tokens else None}"
        )
    return index


def tablet_range(tablet_id: int, count: int) -> TokenRange:
    """The ``(first exclusive, last inclusive]`` token range of a tablet.

    Tablet 0 starts at MIN_TOKEN, so its range also holds the minimum token position.
    """
    _check_id(tablet_id, count)
    start = MIN_TOKEN if tablet_id == 0 else tablet_last_token(tablet_id - 1, count)
    return TokenRange(start, tablet_last_token(tablet_id, count))


def _check_id(tablet_id: int, count: int) -> None:
    _check_count(count)
    if not 0 <= tablet_id < count:
        raise ValueError(f"tablet id {tablet_id} is out of range for a table with {count} tablets")
